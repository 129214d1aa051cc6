// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NVIDIA driver's version strings (see nvdriver.h). The two line
 * formats are those NVIDIA's README ("Open Linux Kernel Modules") gives for
 * the proprietary and the open flavour; the open module's text comes from
 * open-gpu-kernel-modules' utils.mk ("NVIDIA UNIX Open Kernel Module for
 * $(TARGET_ARCH)"), so the word after "for" is an architecture, never the
 * version.
 */
#include <errno.h>
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
	int open;

	return nvs_nvdriver_info(ver, len, &open);
}

bool nvs_nvdriver_info(char *ver, size_t len, int *open)
{
	const char *file = nvs_env_nvidia_version_file();
	char line[512];
	FILE *f;

	*open = -1;
	if (!len)
		return false;
	ver[0] = 0;
	f = fopen(file ? file : "/proc/driver/nvidia/version", "re");
	while (f && !ver[0] && fgets(line, sizeof(line), f))
		if (nvs_nvdriver_parse_line(line, ver, len))
			*open = strstr(line, "Open Kernel Module") != NULL;
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

/* The version after label in line into out; false when the line has no such label or version. */
static bool labelled(const char *line, const char *label, char *out, size_t len)
{
	const char *p = strstr(line, label);
	size_t n;

	if (!p)
		return false;
	p += strlen(label);
	p += strspn(p, " \t");
	n = strcspn(p, " \t|\n");
	if (!is_version(p, n) || n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

bool nvs_nvdriver_smi_header(const char *line, char *drv, size_t dlen, char *cuda, size_t clen)
{
	if (dlen)
		drv[0] = 0;
	if (clen)
		cuda[0] = 0;
	if (!strstr(line, "NVIDIA-SMI"))
		return false;
	if (!labelled(line, "CUDA UMD Version:", cuda, clen))
		labelled(line, "CUDA Version:", cuda, clen);
	return labelled(line, "KMD Version:", drv, dlen) || labelled(line, "Driver Version:", drv, dlen);
}

int nvs_nvdriver_registry(const char *path, char *out, size_t len)
{
	static const char key[] = "RegistryDwords:";
	char line[4096];
	int ret = -EINVAL;
	FILE *f;

	if (len)
		out[0] = 0;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		char *p = line, *q;

		if (strncmp(p, key, strlen(key)))
			continue;
		p += strlen(key);
		p += strspn(p, " \t");
		q = *p == '"' ? strchr(p + 1, '"') : NULL;
		if (!q)
			break;
		*q = 0;
		if (snprintf(out, len, "%s", p + 1) < (int)len)
			ret = 0;
		else if (len)
			out[0] = 0;
	}
	fclose(f);
	return ret;
}

/* a and b equal, as numbers when both are (strtoull's base 0), else as text */
static bool same_value(const char *a, size_t an, const char *b)
{
	char x[32];
	char *e1, *e2;
	unsigned long long u, v;

	if (an < sizeof(x)) {
		memcpy(x, a, an);
		x[an] = 0;
		u = strtoull(x, &e1, 0);
		v = strtoull(b, &e2, 0);
		if (e1 != x && !*e1 && e2 != b && !*e2)
			return u == v;
	}
	return strlen(b) == an && !strncmp(a, b, an);
}

bool nvs_nvdriver_registry_has(const char *dwords, const char *key, const char *val)
{
	size_t klen = strlen(key);
	const char *p = dwords;

	while (*p) {
		size_t n = strcspn(p, ";");
		const char *eq = memchr(p, '=', n);

		if (eq && (size_t)(eq - p) == klen && !strncmp(p, key, klen) &&
		    same_value(eq + 1, n - klen - 1, val))
			return true;
		p += n;
		p += *p == ';';
	}
	return false;
}
