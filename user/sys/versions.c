// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The communication libraries' versions (see versions.h). Where each
 * version comes from, from the projects' public sources:
 * - NCCL: ncclGetVersion(int *) gives NCCL_VERSION_CODE, which nccl.h
 *   defines as X*1000+Y*100+Z up to 2.8 and X*10000+Y*100+Z since 2.9; its
 *   Makefiles name the library libnccl.so.<major>.<minor>.<patch>.
 * - UCX: ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
 *   (ucp.h); libucp's file name carries libtool's numbers, not the release.
 * - libfabric: uint32_t fi_version(void), FI_MAJOR(v) = v >> 16,
 *   FI_MINOR(v) = v & 0xFFFF (fabric.h): the API version, no patch level.
 * - rdma-core: its build names the verbs library
 *   libibverbs.so.1.<abi>.<rdma-core version>, e.g. libibverbs.so.1.14.44.0
 *   in Debian's rdma-core 44.0.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/env.h"
#include "sys/versions.h"

static bool dotted(const char *p)
{
	bool digit = false;

	for (; *p; ++p) {
		/* a dot only after a digit */
		if (*p == '.' && !digit)
			return false;
		if (*p != '.' && (*p < '0' || *p > '9'))
			return false;
		digit = *p != '.';
	}
	return digit;
}

/*
 * Opens soname from NVS_VERSIONS_LIBDIR or the loader's path, real (the
 * file behind the soname link, realpath) filled in when real is not NULL.
 * The handle, or NULL.
 */
static void *open_lib(const char *soname, char *real, size_t len)
{
	const char *dir = nvs_env_versions_libdir();
	char path[PATH_MAX], buf[PATH_MAX];
	struct link_map *lm = NULL;
	void *h;

	if (real && len)
		real[0] = 0;
	if (dir && snprintf(path, sizeof(path), "%s/%s", dir, soname) >= (int)sizeof(path))
		return NULL;
	h = dlopen(dir ? path : soname, RTLD_LAZY | RTLD_LOCAL);
	if (!h || !real)
		return h;
	if (!dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && lm->l_name && realpath(lm->l_name, buf))
		snprintf(real, len, "%s", buf);
	return h;
}

bool nvs_version_nccl_code(int code, char *ver, size_t len)
{
	int major, minor, patch;

	if (code <= 0)
		return false;
	if (code >= 10000) {
		major = code / 10000;
		minor = code % 10000 / 100;
	} else {
		major = code / 1000;
		minor = code % 1000 / 100;
	}
	patch = code % 100;
	return snprintf(ver, len, "%d.%d.%d", major, minor, patch) < (int)len;
}

/* The version after prefix in path's last component, when it is all numbers and dots. */
static const char *after(const char *path, const char *prefix)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (strncmp(b, prefix, strlen(prefix)))
		return NULL;
	b += strlen(prefix);
	return dotted(b) ? b : NULL;
}

bool nvs_version_nccl_name(const char *path, char *ver, size_t len)
{
	const char *v = after(path, "libnccl.so.");

	if (len)
		ver[0] = 0;
	/* libnccl.so.2 alone is the soname link: no version in it */
	if (!v || !strchr(v, '.'))
		return false;
	return snprintf(ver, len, "%s", v) < (int)len;
}

bool nvs_version_rdma_core_name(const char *path, char *ver, size_t len)
{
	const char *v = after(path, "libibverbs.so.1.");

	if (len)
		ver[0] = 0;
	/* <abi>.<rdma-core version>: skip the ABI number */
	v = v ? strchr(v, '.') : NULL;
	if (!v || !v[1])
		return false;
	return snprintf(ver, len, "%s", v + 1) < (int)len;
}

bool nvs_version_nccl(char *ver, size_t len)
{
	char real[PATH_MAX];
	int (*get)(int *version);
	int code = 0;
	bool ok = false;
	void *h;

	if (!len)
		return false;
	ver[0] = 0;
	h = open_lib("libnccl.so.2", real, sizeof(real));
	if (!h)
		return false;
	*(void **)&get = dlsym(h, "ncclGetVersion");
	/* ncclGetVersion returns ncclSuccess (0) */
	if (get && !get(&code))
		ok = nvs_version_nccl_code(code, ver, len);
	if (!ok)
		ok = nvs_version_nccl_name(real, ver, len);
	dlclose(h);
	return ok;
}

bool nvs_version_ucx(char *ver, size_t len)
{
	void (*get)(unsigned int *major, unsigned int *minor, unsigned int *release);
	unsigned int major = 0, minor = 0, release = 0;
	bool ok = false;
	void *h;

	if (!len)
		return false;
	ver[0] = 0;
	h = open_lib("libucp.so.0", NULL, 0);
	if (!h)
		return false;
	*(void **)&get = dlsym(h, "ucp_get_version");
	if (get) {
		get(&major, &minor, &release);
		ok = snprintf(ver, len, "%u.%u.%u", major, minor, release) < (int)len;
	}
	dlclose(h);
	return ok;
}

bool nvs_version_libfabric(char *ver, size_t len)
{
	uint32_t (*get)(void);
	bool ok = false;
	void *h;

	if (!len)
		return false;
	ver[0] = 0;
	h = open_lib("libfabric.so.1", NULL, 0);
	if (!h)
		return false;
	*(void **)&get = dlsym(h, "fi_version");
	if (get) {
		uint32_t v = get();

		ok = snprintf(ver, len, "%u.%u", (unsigned int)(v >> 16), (unsigned int)(v & 0xffff)) < (int)len;
	}
	dlclose(h);
	return ok;
}

bool nvs_version_rdma_core(char *ver, size_t len)
{
	char real[PATH_MAX];
	void *h;

	if (!len)
		return false;
	ver[0] = 0;
	h = open_lib("libibverbs.so.1", real, sizeof(real));
	if (!h)
		return false;
	dlclose(h);
	return nvs_version_rdma_core_name(real, ver, len);
}
