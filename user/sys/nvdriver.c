// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NVIDIA driver's version strings (see nvdriver.h). The two line
 * formats are those NVIDIA's README ("Open Linux Kernel Modules") gives for
 * the proprietary and the open flavour; the open module's text comes from
 * open-gpu-kernel-modules' utils.mk ("NVIDIA UNIX Open Kernel Module for
 * $(TARGET_ARCH)"), so the word after "for" is an architecture, never the
 * version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/env.h"
#include "sys/nvdriver.h"

static bool is_version(const char *p, size_t n)
{
	size_t i;

	if (!n || p[0] == '.' || p[n - 1] == '.' || !memchr(p, '.', n))
		return false;
	for (i = 0; i < n; ++i)
		if (!(p[i] == '.' || (p[i] >= '0' && p[i] <= '9')))
			return false;
	return true;
}

bool nvs_nvdriver_parse_line(const char *line, char *ver, size_t len)
{
	const char *p = strstr(line, "Kernel Module");
	size_t n;

	if (len)
		ver[0] = 0;
	if (!p)
		return false;
	p += strlen("Kernel Module");
	p += strspn(p, " \t");
	if (!strncmp(p, "for ", 4)) {
		/* the open module: "for <arch>", then the version */
		p += 4;
		p += strspn(p, " \t");
		p += strcspn(p, " \t\n");
		p += strspn(p, " \t");
	}
	n = strcspn(p, " \t\n");
	if (!is_version(p, n) || n >= len)
		return false;
	memcpy(ver, p, n);
	ver[n] = 0;
	return true;
}

bool nvs_nvdriver_version(char *ver, size_t len)
{
	const char *file = nvs_env_nvidia_version_file();
	char line[512];
	FILE *f;

	if (!len)
		return false;
	ver[0] = 0;
	f = fopen(file ? file : "/proc/driver/nvidia/version", "re");
	while (f && !ver[0] && fgets(line, sizeof(line), f))
		nvs_nvdriver_parse_line(line, ver, len);
	if (f)
		fclose(f);
	/* the module's own version, where /proc is not mounted or says nothing */
	f = !ver[0] && !file ? fopen("/sys/module/nvidia/version", "re") : NULL;
	if (f) {
		if (fgets(line, sizeof(line), f)) {
			size_t n = strcspn(line, "\n");

			if (is_version(line, n) && n < len) {
				memcpy(ver, line, n);
				ver[n] = 0;
			}
		}
		fclose(f);
	}
	return ver[0] != 0;
}

bool nvs_nvdriver_libcuda_version(const char *path, char *ver, size_t len)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	if (strncmp(b, "libcuda.so.", 11))
		return false;
	b += 11;
	n = strlen(b);
	if (!is_version(b, n) || n >= len)
		return false;
	memcpy(ver, b, n + 1);
	return true;
}
