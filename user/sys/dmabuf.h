/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef SYS_DMABUF_H
#define SYS_DMABUF_H

#include <stddef.h>
#include <stdint.h>

/*
 * dma-bufs without a GPU, for the paths that import one (the kernel
 * probe, RDMA registration): from a sealed memfd through /dev/udmabuf, or
 * from the system dma-heap.
 */

/*
 * size bytes (a page multiple) through /dev/udmabuf; with map, *map is a
 * CPU mapping of the same memory (munmap(*map, size) when done). Returns
 * the dma-buf fd, or -errno with an admin-readable message in err.
 */
int nvs_udmabuf_create(uint64_t size, void **map, char *err, size_t errlen);
/* size bytes from /dev/dma_heap/system: the fd, or -errno with err. */
int nvs_dmaheap_alloc(uint64_t size, char *err, size_t errlen);

#define NVS_UDMABUF_DEV "/dev/udmabuf"
#define NVS_DMAHEAP_DEV "/dev/dma_heap/system"

#endif
