// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/io.h"
#include "sys/cuda.h"

int nvs_cuda_load(struct nvs_cuda *cu, const char *path, char *err, size_t errlen)
{
	bool given = path;
	int ret;

	memset(cu, 0, sizeof(*cu));
	if (!path)
		path = "libcuda.so.1";
	ret = nvs_dlopen_path_ok(path, "the libcuda shared library itself", err, errlen);
	if (ret)
		return ret;
	/* RTLD_LOCAL: a patched copy must never leak symbols into other loads. */
	cu->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->handle) {
		/* a path the admin named is the thing to check, not the driver */
		snprintf(err, errlen, "Unable to load %s: %s%s", path, dlerror(),
			 given ? " (check the path given: it must be a libcuda shared library)" :
				 " (is the NVIDIA driver installed?)");
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

bool nvs_cuda_held(const struct nvs_cuda *cu, CUresult r, CUdevice dev)
{
	int mode = -1;

	if (r != CUDA_ERROR_DEVICE_UNAVAILABLE || !cu->cuDeviceGetAttribute ||
	    cu->cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev))
		return false;
	return mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS;
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

CUresult nvs_cuda_export_dmabuf(const struct nvs_cuda *cu, CUdeviceptr ptr, size_t size, int *fd,
				char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	char buf[160];
	CUresult r;

	*fd = -1;
	if (!cu->cuMemGetHandleForAddressRange) {
		snprintf(err, errlen, "%s has no cuMemGetHandleForAddressRange: dma-buf export needs a CUDA 11.7 or newer driver",
			 cu->path);
		return NVS_CUDA_NO_ENTRY;
	}
	/* The exporter works in host pages: an unaligned range is refused. */
	if (page <= 0 || ptr % (unsigned long)page || size % (unsigned long)page) {
		snprintf(err, errlen, "GPU range 0x%llx + %zu is not page aligned: dma-buf export needs whole pages",
			 ptr, size);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = cu->cuMemGetHandleForAddressRange(fd, ptr, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r == CUDA_SUCCESS && *fd >= 0)
		return r;
	if (r == CUDA_SUCCESS)
		r = CUDA_ERROR_INVALID_VALUE;
	*fd = -1;
	snprintf(err, errlen, "cuMemGetHandleForAddressRange(DMA_BUF_FD) failed: %s%s",
		 nvs_cuda_strerror(cu, r, buf, sizeof(buf)),
		 r == CUDA_ERROR_NOT_SUPPORTED ?
		 ". libcuda refuses dma-buf export on this GPU: on GeForce this is its dma-buf gate; run `nvsidecar libcuda patch' and load the patched copy (--lib)" :
		 "");
	return r;
}
