// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"

int nvs_cuda_load(struct nvs_cuda *cu, const char *path, char *err, size_t errlen)
{
	memset(cu, 0, sizeof(*cu));
	if (!path)
		path = "libcuda.so.1";
	/* RTLD_LOCAL: a patched copy must never leak symbols into other loads. */
	cu->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->handle) {
		snprintf(err, errlen, "Unable to load %s: %s (is the NVIDIA driver installed?)",
			 path, dlerror());
		return -ENOENT;
	}
	snprintf(cu->path, sizeof(cu->path), "%s", path);
#define X(name, args) cu->name = (CUresult (*) args)dlsym(cu->handle, #name);
	NVS_CUDA_FUNCS(X)
#undef X
	if (!cu->cuInit || !cu->cuDeviceGet || !cu->cuDeviceGetCount) {
		snprintf(err, errlen, "%s does not look like libcuda: cuInit, cuDeviceGet or cuDeviceGetCount is missing",
			 path);
		nvs_cuda_unload(cu);
		return -ENOEXEC;
	}
	return 0;
}

void nvs_cuda_unload(struct nvs_cuda *cu)
{
	if (cu->handle)
		dlclose(cu->handle);
	memset(cu, 0, sizeof(*cu));
}

const char *nvs_cuda_strerror(const struct nvs_cuda *cu, CUresult r, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;

	if (cu->cuGetErrorName)
		cu->cuGetErrorName(r, &name);
	if (cu->cuGetErrorString)
		cu->cuGetErrorString(r, &str);
	snprintf(buf, len, "%s (%d)%s%s", name ? name : "CUDA error", r,
		 str ? ": " : "", str ? str : "");
	return buf;
}
