// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The driver calls `nvsidecar libcuda verify' makes, for the fake libcuda.
 * The gate itself is in fake_gate.S; this part only asks it (through the
 * exported cuDeviceGetAttribute), as the real export path does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Real libcuda builds carry the driver version in the search path of the
 * application profiles (the format of 535.261.03 and later); `status' reads
 * it from there and checks it against the file name. Built without
 * NVS_FAKE_VERSION, the fake has none, and its file name is all there is.
 */
#ifdef NVS_FAKE_VERSION
__attribute__((used)) const char nvs_app_profile_path[] =
	"/etc/nvidia/nvidia-application-profiles-rc:/etc/nvidia/nvidia-application-profiles-rc.d/:"
	"/usr/share/nvidia/nvidia-application-profiles-" NVS_FAKE_VERSION "-rc:"
	"/usr/share/nvidia/nvidia-application-profiles-rc";
#endif

int cuDeviceGetAttribute(int *val, int attr, int dev);
void nvs_fake_init(void);

static int initialised;

int cuInit(unsigned int flags)
{
	if (flags)
		return 1;
	if (!initialised++)
		nvs_fake_init();
	return 0;
}

int cuDriverGetVersion(int *v) { *v = 12020; return 0; }
int cuDeviceGetCount(int *n) { *n = initialised ? 1 : 0; return initialised ? 0 : 3; }
int cuDeviceGet(int *d, int ordinal) { if (ordinal) return 101; *d = 0; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int dev) { static int c; (void)dev; *ctx = &c; return 0; }
int cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return 0; }
int cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }

int cuGetErrorName(int r, const char **s)
{
	*s = r == 801 ? "CUDA_ERROR_NOT_SUPPORTED" : r == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
	return 0;
}

int cuGetErrorString(int r, const char **s)
{
	*s = r == 801 ? "operation not supported" : "fake libcuda error";
	return 0;
}

int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 2;
	*p = (uintptr_t)m;
	return 0;
}

int cuMemFree_v2(unsigned long long p) { (void)p; return 0; }

/*
 * A real dma-buf from udmabuf when the kernel has it, else the memfd.
 * EXPORT_MEMFD: always the memfd, so a host with /dev/udmabuf can still test
 * that verify fails an export that is not a dma-buf (review T3-16).
 */
int cuMemGetHandleForAddressRange(void *handle, unsigned long long p, size_t size, int type,
				  unsigned long long flags)
{
	int supported = 0, fd, dev;

	if (!handle || !p || !size || type != 1 || (p | size) & 4095 || flags > 1)
		return 1;
	if (cuDeviceGetAttribute(&supported, 124, 0) || !supported)
		return 801;
	fd = memfd_create("nvs-fake-vidmem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, size) < 0)
		return 2;
#ifdef EXPORT_MEMFD
	dev = -1;
#else
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
#endif
	if (dev >= 0) {
		struct udmabuf_create c = { .memfd = fd, .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
		int buf;

		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
		buf = ioctl(dev, UDMABUF_CREATE, &c);
		close(dev);
		if (buf >= 0) {
			close(fd);
			fd = buf;
		}
	}
	*(int *)handle = fd;
	return 0;
}
