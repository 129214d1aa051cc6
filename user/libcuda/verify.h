/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_VERIFY_H
#define LIBCUDA_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Loads a libcuda in a CHILD process (fork, then dlopen there: a patched
 * copy never enters the caller), reads the dma-buf / GPUDirect RDMA
 * attributes, allocates device memory and exports it as a dma-buf with
 * cuMemGetHandleForAddressRange(..., DMA_BUF_FD, flags 0).
 *
 * The dma-buf seam: when opts.hook is set it is called in the child with
 * the exported fd while the allocation is alive; e.g. `nvsidecar dmabuf`
 * hands the fd to the kernel module's dma-buf probe there. The fd belongs
 * to verify (closed after the hook returns); dup() it to keep it. The hook
 * returns 0 or -errno and may leave a one-line report in msg, which comes
 * back in result.hook_msg.
 */
/* busid: the CUDA device's PCI bus id as CUDA prints it ("" if unknown). */
typedef int (*lc_dmabuf_hook)(int fd, uint64_t size, int device, const char *busid, void *arg,
			      char *msg, size_t msglen);

struct lc_verify_opts {
	const char *lib;	/* file or directory holding libcuda.so.1 */
	int device;		/* CUDA ordinal */
	uint64_t bytes;		/* allocation size, rounded up to pages */
	lc_dmabuf_hook hook;
	void *hook_arg;
};

#define LC_VERIFY_NATTR 7
extern const int lc_verify_attrs[LC_VERIFY_NATTR];
extern const char *const lc_verify_attr_names[LC_VERIFY_NATTR];

struct lc_verify_result {
	char loaded[4096];
	int driver_version;
	int ndevices;
	int attr[LC_VERIFY_NATTR];
	int attr_rc[LC_VERIFY_NATTR];	/* CUresult of each query */
	int alloc_rc;
	uint64_t size;			/* exported size */
	int export_rc;			/* CUresult of the export */
	int fd;				/* the fd number the child got, or -1 */
	char fd_kind[128];		/* dma-buf exporter name or what the fd is */
	bool fd_dmabuf;			/* the kernel lists the fd as a dma-buf */
	uint64_t fd_size;
	int hook_rc;
	bool hook_ran;
	char hook_msg[256];
	char error[512];		/* the child could not get this far */
	int stage;			/* 0 load, 1 init, 2 device, 3 attrs, 4 alloc, 5 export, 6 done */
};

/* 0 when the child ran to the end (see result for what it found), else -errno. */
int lc_verify(const struct lc_verify_opts *opts, struct lc_verify_result *res);

#endif
