/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_RDMA_H
#define CHECK_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cuda.h"
#include "sys/rdma_ib.h"
#include "sys/rdma_mem.h"

/*
 * The RDMA test protocol (`nvsidecar rdma'): loopback on one host, or a
 * server and a client over rdma_cm; every transfer carries a
 * sequence-stamped pattern that is compared byte for byte and by
 * checksum at its destination. The engine fills a run's results and exit
 * code; it never prints (cmd/rdma.c renders the run).
 */
#define NVS_RDMA_MAX_SIZES 32
#define NVS_RDMA_LAT_ITERS 32

struct nvs_rdma_opts {
	bool loopback, server, json;
	const char *client, *dev, *peer_dev, *bind, *port, *cuda_lib;
	enum nvs_rmem_kind mem, peer_mem;
	enum nvs_rmem_source src;
	int gpu, iters, timeout_s, wait_s;
	bool do_write, do_read;
	size_t sizes[NVS_RDMA_MAX_SIZES], nsizes, buffer;
};

struct nvs_rdma_result {
	bool write;
	size_t size;
	unsigned long done, verified;
	uint64_t bw_ns, bytes, lat_ns, lat_n;
};

struct nvs_rdma_run {
	struct nvs_rdma_opts o;
	struct nvs_rside a, b;	/* a: this side; b: the loopback peer */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	uint64_t raddr, rlen;
	uint32_t rkey;
	uint64_t seq;
	bool corrupt;		/* NVS_RDMA_TEST_CORRUPT: flip one received byte, once */
	struct nvs_cuda cu;
	bool cu_loaded;
	CUdevice cudev;
	CUcontext cuctx;
	char gpu_bdf[32];
	char why[320];
	char peer_why[320];
	struct nvs_rdma_result res[2 * NVS_RDMA_MAX_SIZES];
	size_t nres;
	int exit;
	char err[768];
	/* --server: called once listening, before the wait for a client (cmd/ says so) */
	void (*waiting)(const struct nvs_rdma_run *r);
};

/* Fills the parts of r that are not options; call before nvs_rdma_do(). */
void nvs_rdma_init(struct nvs_rdma_run *r);
/* Runs the test r->o asks for: loopback, server or client. r->exit is its code (r->err why). */
int nvs_rdma_do(struct nvs_rdma_run *r);
/* Disconnects and releases everything the run opened; r itself is the caller's. */
void nvs_rdma_release(struct nvs_rdma_run *r);

#endif
