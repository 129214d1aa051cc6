// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A stand-in libcuda for `nvsidecar dmabuf probe --gpu N` without a GPU.
 * t-dmabuf.sh builds it as a shared library:
 *
 *   gcc -shared -fPIC -DFAKECUDA_LIB -o libcuda-fake.so dmabuf_fakecuda.c
 *
 * One device, whose PCI bus id is $FAKECUDA_BUSID (the simulated GPU).
 * cuMemGetHandleForAddressRange either refuses with 801, as GeForce
 * libcuda does before the gate is patched ($FAKECUDA_MODE=gate), or
 * exports a udmabuf of the requested size ($FAKECUDA_MODE=udmabuf), which
 * the kernel then maps as system memory, not BAR1: the CLI's "outside BAR1"
 * path. Built as a program (the lane runner builds every C file in tools/) it only
 * says how to build it.
 */
#define _GNU_SOURCE
#include <stdio.h>

#ifdef FAKECUDA_LIB
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/udmabuf.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define EXPORTED __attribute__((visibility("default")))

EXPORTED CUresult cuInit(unsigned int flags);
EXPORTED CUresult cuDeviceGetCount(int *n);
EXPORTED CUresult cuDeviceGet(int *dev, int ordinal);
EXPORTED CUresult cuDeviceGetName(char *name, int len, int dev);
EXPORTED CUresult cuDeviceGetPCIBusId(char *id, int len, int dev);
EXPORTED CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
EXPORTED CUresult cuDevicePrimaryCtxRelease_v2(int dev);
EXPORTED CUresult cuCtxSetCurrent(void *ctx);
EXPORTED CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
EXPORTED CUresult cuMemFree_v2(CUdeviceptr p);
EXPORTED CUresult cuMemGetHandleForAddressRange(void *h, CUdeviceptr p, size_t n, int type,
						unsigned long long flags);
EXPORTED CUresult cuGetErrorName(CUresult r, const char **s);

static int ctx_refs, allocs;

CUresult cuInit(unsigned int flags) { return flags ? 1 : 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal ? 101 : 0; }
CUresult cuDeviceGetName(char *name, int len, int dev)
{
	snprintf(name, (size_t)len, "Fake GPU %d", dev);
	return 0;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, int dev)
{
	const char *b = getenv("FAKECUDA_BUSID");

	/* CUDA prints an 8-digit domain and upper-case hex. */
	unsigned int d, bus, s, f;

	if (dev || !b || sscanf(b, "%x:%x:%x.%x", &d, &bus, &s, &f) != 4)
		return 101;
	snprintf(id, (size_t)len, "%08X:%02X:%02X.%X", d, bus, s, f);
	return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	*ctx = &ctx_refs;
	ctx_refs++;
	return dev ? 101 : 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { ctx_refs--; return dev ? 101 : 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &ctx_refs ? 0 : 201; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	allocs++;
	*p = 0x7f0000000000ULL;	/* 2 MiB aligned, like a real device pointer */
	return n ? 0 : 1;
}
CUresult cuMemFree_v2(CUdeviceptr p)
{
	allocs--;
	return p == 0x7f0000000000ULL ? 0 : 1;
}
CUresult cuGetErrorName(CUresult r, const char **s)
{
	*s = r == 801 ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_UNKNOWN";
	return 0;
}

CUresult cuMemGetHandleForAddressRange(void *h, CUdeviceptr p, size_t n, int type,
				       unsigned long long flags)
{
	const char *mode = getenv("FAKECUDA_MODE");
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = n };
	int memfd, dev, fd;

	if (type != 1 || flags || p != 0x7f0000000000ULL)
		return 1;
	if (!mode || !strcmp(mode, "gate"))
		return 801;
	memfd = memfd_create("fakecuda", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, (off_t)n) < 0 ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		return 2;
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		return 100;
	c.memfd = (unsigned int)memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	close(memfd);
	if (fd < 0)
		return 2;
	*(int *)h = fd;
	return 0;
}

#else

int main(void)
{
	fprintf(stderr, "dmabuf_fakecuda is a library: gcc -shared -fPIC -DFAKECUDA_LIB -o libcuda-fake.so dmabuf_fakecuda.c\n");
	return 2;
}

#endif
