/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef RDMA_MEM_H
#define RDMA_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "sys/cuda.h"

/*
 * The memory an RDMA test reads and writes, and how it is registered with
 * the NIC: plain host memory (ibv_reg_mr), GPU memory exported as a
 * dma-buf (ibv_reg_dmabuf_mr: the path a patched libcuda opens), or GPU
 * memory through the legacy nvidia-peermem hook (ibv_reg_mr on a device
 * pointer). A udmabuf can stand in for the CUDA dma-buf so that the
 * dma-buf registration path runs without a GPU.
 */
enum nvs_rmem_kind {
	NVS_RMEM_HOST,
	NVS_RMEM_CUDA_DMABUF,
	NVS_RMEM_CUDA_PEERMEM,
};

enum nvs_rmem_source {
	NVS_RMEM_SRC_CUDA,
	NVS_RMEM_SRC_UDMABUF,
};

struct nvs_rmem {
	enum nvs_rmem_kind kind;
	enum nvs_rmem_source src;
	size_t len;
	uint8_t *host;		/* CPU view: the buffer itself, or a staging copy */
	bool host_is_buf;	/* host memory or a udmabuf mapping */
	CUdeviceptr dptr;
	int dmabuf_fd;
	struct ibv_mr *mr;
	uint64_t addr;		/* what the peer puts in its work requests */
	struct nvs_cuda *cu;	/* set for the CUDA kinds */
	char what[96];		/* "host (ibv_reg_mr)", ... */
};

int nvs_rmem_parse_kind(const char *s, enum nvs_rmem_kind *k);
const char *nvs_rmem_kind_str(enum nvs_rmem_kind k);

/*
 * Allocates len bytes (cu: a loaded libcuda with a current context, for
 * the CUDA kinds). Returns 0, or -errno with an admin-readable message;
 * -EOPNOTSUPP means libcuda refused the dma-buf export (the GeForce gate).
 */
int nvs_rmem_alloc(struct nvs_rmem *m, enum nvs_rmem_kind k, enum nvs_rmem_source src,
		   size_t len, struct nvs_cuda *cu, char *err, size_t errlen);
/*
 * Registers the buffer with pd for local writes and remote reads and
 * writes. On failure returns -errno and says in err which call failed,
 * the errno and what it means for this kind of memory.
 */
int nvs_rmem_register(struct nvs_rmem *m, struct ibv_pd *pd, char *err, size_t errlen);
void nvs_rmem_free(struct nvs_rmem *m);

/* What a registration errno means for this kind of memory. */
const char *nvs_rmem_reg_meaning(enum nvs_rmem_kind k, int err);

/*
 * Sequence-stamped patterns. Fill writes the pattern of transfer seq into
 * [off, off+len) (through the staging copy for GPU memory) and returns its
 * checksum; check reads the range back (copying it from the GPU first)
 * and compares it with the pattern, returning 0 or -EILSEQ with the first
 * wrong byte in *bad_off, *got and *want, and its checksum in *csum.
 */
int nvs_rmem_fill(struct nvs_rmem *m, size_t off, size_t len, uint64_t seq, uint64_t *csum,
		  char *err, size_t errlen);
int nvs_rmem_check(struct nvs_rmem *m, size_t off, size_t len, uint64_t seq, uint64_t *csum,
		   size_t *bad_off, uint8_t *got, uint8_t *want, char *err, size_t errlen);
/* Test hook: flips one byte of [off, off+len) in place. */
int nvs_rmem_corrupt(struct nvs_rmem *m, size_t off, size_t len, char *err, size_t errlen);

uint64_t nvs_pattern_csum(const uint8_t *p, size_t len, uint64_t seq);

#endif
