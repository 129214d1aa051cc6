// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include "sys/dmabuf.h"

int nvs_udmabuf_create(uint64_t size, void **map, char *err, size_t errlen)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
	void *m = NULL;
	int memfd, dev, fd, ret;

	memfd = memfd_create("nvsidecar-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to create a memfd for udmabuf: %s", strerror(errno));
		return ret;
	}
	/* udmabuf pins the pages: it refuses a memfd that could shrink under it. */
	if (ftruncate(memfd, (off_t)size) < 0 || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to size and seal the memfd for udmabuf: %s", strerror(errno));
		goto out_close;
	}
	if (map) {
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		if (m == MAP_FAILED) {
			ret = -errno;
			m = NULL;
			snprintf(err, errlen, "Unable to map the memfd for udmabuf: %s", strerror(errno));
			goto out_close;
		}
	}
	dev = open(NVS_UDMABUF_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to open `%s': %s%s", NVS_UDMABUF_DEV, strerror(errno),
			 errno == ENOENT ? " (load the udmabuf module; the kernel needs CONFIG_UDMABUF)" : "");
		goto out_unmap;
	}
	c.memfd = (uint32_t)memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	ret = fd < 0 ? -errno : fd;
	close(dev);
	if (fd < 0) {
		snprintf(err, errlen, "Unable to create a udmabuf of %" PRIu64 " bytes: %s%s", size, strerror(-ret),
			 ret == -EINVAL ? " (above /sys/module/udmabuf/parameters/size_limit_mb?)" : "");
		goto out_unmap;
	}
	close(memfd);
	if (map)
		*map = m;
	return fd;

out_unmap:
	if (m)
		munmap(m, size);
out_close:
	close(memfd);
	return ret;
}

int nvs_dmaheap_alloc(uint64_t size, char *err, size_t errlen)
{
	struct dma_heap_allocation_data a = { .len = size, .fd_flags = O_RDWR | O_CLOEXEC };
	int dev, ret;

	dev = open(NVS_DMAHEAP_DEV, O_RDONLY | O_CLOEXEC);
	if (dev < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to open `%s': %s%s", NVS_DMAHEAP_DEV, strerror(errno),
			 errno == ENOENT ? " (the kernel needs CONFIG_DMABUF_HEAPS_SYSTEM)" : "");
		return ret;
	}
	ret = ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &a) < 0 ? -errno : (int)a.fd;
	close(dev);
	if (ret < 0)
		snprintf(err, errlen, "Unable to allocate %" PRIu64 " bytes from `%s': %s", size, NVS_DMAHEAP_DEV,
			 strerror(-ret));
	return ret;
}
