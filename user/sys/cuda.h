/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CUDA_H
#define CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The CUDA driver API, loaded at run time with dlopen so that the helper
 * builds and runs on machines with no NVIDIA driver and no CUDA toolkit.
 * Only the few types and constants we use are declared here; every entry
 * point is optional and NULL when the library lacks it.
 */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS				0
#define CUDA_ERROR_INVALID_VALUE		1
#define CUDA_ERROR_DEVICE_UNAVAILABLE		46
#define CUDA_ERROR_NOT_SUPPORTED		801
#define CUDA_ERROR_PEER_ACCESS_UNSUPPORTED	217
#define CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED	704
#define CUDA_ERROR_PEER_ACCESS_NOT_ENABLED	705

/* CUdevice_attribute values used by the helper */
#define CU_DEVICE_ATTRIBUTE_COMPUTE_MODE				20
#define CU_DEVICE_ATTRIBUTE_PCI_BUS_ID					33
#define CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID				34
#define CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID				50
#define CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED	103
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED	110
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED			116
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS	117
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING		118
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED				124
#define CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED		146

#define CU_COMPUTEMODE_PROHIBITED		2
#define CU_COMPUTEMODE_EXCLUSIVE_PROCESS	3

#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE	1

#define CU_EVENT_DEFAULT	0
#define CU_STREAM_NON_BLOCKING	1

#define NVS_CUDA_FUNCS(X) \
	X(cuInit, (unsigned int flags)) \
	X(cuDriverGetVersion, (int *version)) \
	X(cuGetErrorString, (CUresult err, const char **str)) \
	X(cuGetErrorName, (CUresult err, const char **str)) \
	X(cuDeviceGetCount, (int *count)) \
	X(cuDeviceGet, (CUdevice *dev, int ordinal)) \
	X(cuDeviceGetName, (char *name, int len, CUdevice dev)) \
	X(cuDeviceGetAttribute, (int *val, int attr, CUdevice dev)) \
	X(cuDeviceGetPCIBusId, (char *busid, int len, CUdevice dev)) \
	X(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev)) \
	X(cuDeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer)) \
	X(cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev)) \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev)) \
	X(cuCtxCreate_v2, (CUcontext *ctx, unsigned int flags, CUdevice dev)) \
	X(cuCtxDestroy_v2, (CUcontext ctx)) \
	X(cuCtxSetCurrent, (CUcontext ctx)) \
	X(cuCtxSynchronize, (void)) \
	X(cuCtxEnablePeerAccess, (CUcontext peer, unsigned int flags)) \
	X(cuCtxDisablePeerAccess, (CUcontext peer)) \
	X(cuMemAlloc_v2, (CUdeviceptr *ptr, size_t bytes)) \
	X(cuMemFree_v2, (CUdeviceptr ptr)) \
	X(cuMemAllocHost_v2, (void **ptr, size_t bytes)) \
	X(cuMemFreeHost, (void *ptr)) \
	X(cuMemsetD8_v2, (CUdeviceptr ptr, unsigned char val, size_t n)) \
	X(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n)) \
	X(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n)) \
	X(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n)) \
	X(cuMemcpyPeer, (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)) \
	X(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s)) \
	X(cuMemGetHandleForAddressRange, (void *handle, CUdeviceptr ptr, size_t size, int type, unsigned long long flags)) \
	X(cuStreamCreate, (CUstream *s, unsigned int flags)) \
	X(cuStreamSynchronize, (CUstream s)) \
	X(cuStreamDestroy_v2, (CUstream s)) \
	X(cuEventCreate, (CUevent *e, unsigned int flags)) \
	X(cuEventRecord, (CUevent e, CUstream s)) \
	X(cuEventSynchronize, (CUevent e)) \
	X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end)) \
	X(cuEventDestroy_v2, (CUevent e)) \
	X(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int flags))

struct nvs_cuda {
	void *handle;
	char path[4096];	/* what was loaded */
#define X(name, args) CUresult (*name) args;
	NVS_CUDA_FUNCS(X)
#undef X
};

/*
 * Loads libcuda from path (NULL: "libcuda.so.1", as the dynamic loader
 * would find it). Returns 0, or -errno with a message in err (ENOENT: no
 * library; ENOEXEC: not a usable libcuda).
 */
int nvs_cuda_load(struct nvs_cuda *cu, const char *path, char *err, size_t errlen);
void nvs_cuda_unload(struct nvs_cuda *cu);
/*
 * The one dma-buf export: [ptr, ptr + size) of device memory (a current
 * context must own it) as a dma-buf fd through
 * cuMemGetHandleForAddressRange(DMA_BUF_FD, flags 0), as NCCL and the RDMA
 * stacks ask for it. Returns the CUresult (CUDA_SUCCESS with *fd set), or
 * NVS_CUDA_NO_ENTRY when the library predates the call; err says what went
 * wrong and, for CUDA_ERROR_NOT_SUPPORTED, that this is the GeForce gate
 * and how to open it.
 */
#define NVS_CUDA_NO_ENTRY (-1)
CUresult nvs_cuda_export_dmabuf(const struct nvs_cuda *cu, CUdeviceptr ptr, size_t size, int *fd,
				char *err, size_t errlen);
/* "CUDA_ERROR_NOT_SUPPORTED (801): operation not supported" style text. */
/*
 * Whether r, from a context call on dev, says that another process holds
 * the GPU: CUDA_ERROR_DEVICE_UNAVAILABLE (46) where the compute mode is
 * EXCLUSIVE_PROCESS, the only mode in which one process can hold it. A 46
 * in any other mode is a fault.
 */
bool nvs_cuda_held(const struct nvs_cuda *cu, CUresult r, CUdevice dev);
const char *nvs_cuda_strerror(const struct nvs_cuda *cu, CUresult r, char *buf, size_t len);

#endif
