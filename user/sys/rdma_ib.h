/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef RDMA_IB_H
#define RDMA_IB_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "sys/rdma_mem.h"

/*
 * The verbs and rdma_cm backend of `nvsidecar rdma': one "side" is a
 * device port, a protection domain, one CQ and one RC queue pair, plus a
 * small registered buffer for control messages. Every wait has a
 * deadline; nothing here blocks without one.
 */
#define NVS_RCTL_MAGIC 0x4e565352u	/* "NVSR" */
#define NVS_RCTL_VERSION 1

enum nvs_rctl_type {
	NVS_RCTL_CHECK = 1,	/* client wrote n slots: verify them */
	NVS_RCTL_PREP,		/* client will read n slots: fill them */
	NVS_RCTL_REPLY,
	NVS_RCTL_BYE,
};

/* Control message, sent with SEND/RECV after the data it describes. */
struct nvs_rctl {
	uint32_t magic, type;
	uint32_t n, status;	/* status: 0 or a positive errno (EILSEQ: bad data) */
	uint64_t size, stride, seq0;
	uint64_t csum;		/* combined checksum of the n slots */
	uint64_t bad_seq, bad_off;
	uint8_t bad_got, bad_want, pad[6];
	char text[160];
};

/* Exchanged in the rdma_cm private data (at most 56 bytes on connect). */
struct nvs_rhello {
	uint32_t magic, version;
	uint64_t addr, len;
	uint32_t rkey, kind;
};

struct nvs_rside {
	struct ibv_context *ctx;
	bool own_ctx;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int port, gid_index;
	union ibv_gid gid;
	uint16_t lid;
	uint8_t link_layer;
	enum ibv_mtu mtu;
	uint32_t max_rd, depth;
	struct nvs_rmem mem;
	struct nvs_rctl *ctl;	/* [0] receive, [1] send */
	struct ibv_mr *ctl_mr;
	char dev[IBV_SYSFS_NAME_MAX];
	char gid_str[64];
	bool cm_gone;		/* rdma_cm reported the peer gone */
};

/* Device choice: --dev, else nearest the GPU, else the first active port. */
int nvs_rdev_choose(const char *want, const char *gpu_bdf, char *name, size_t namelen,
		    char *why, size_t whylen, char *err, size_t errlen);
/* PCI address of an RDMA device, "" for a virtual one (rxe, siw). */
void nvs_rdev_bdf(const char *name, char *bdf, size_t len);

int nvs_rside_open(struct nvs_rside *s, const char *dev, int port, char *err, size_t errlen);
/* Once ctx is set (open, or an rdma_cm id): PD, CQ, QP, control buffers. */
int nvs_rside_setup(struct nvs_rside *s, char *err, size_t errlen);
void nvs_rside_close(struct nvs_rside *s);
/* Connects two local RC QPs to each other (loopback). */
int nvs_rside_pair(struct nvs_rside *a, struct nvs_rside *b, char *err, size_t errlen);

int nvs_post_rdma(struct nvs_rside *s, bool write, uint64_t loff, uint64_t raddr, uint32_t rkey,
		  uint32_t len, uint64_t wr_id);
/*
 * Waits for one completion until deadline (CLOCK_MONOTONIC ns). block:
 * sleep on the completion channel (also watching cm_fd, -1 none, for a
 * disconnect) instead of spinning. Returns 1, 0 on timeout, -ENOTCONN when
 * the rdma_cm connection went away and no completion is left to reap, or
 * another -errno.
 */
int nvs_wait_wc(struct nvs_rside *s, uint64_t deadline, bool block, int cm_fd, struct ibv_wc *wc);
int nvs_post_ctl_recv(struct nvs_rside *s);
int nvs_post_ctl_send(struct nvs_rside *s);

uint64_t nvs_now_ns(void);
const char *nvs_wc_status_hint(enum ibv_wc_status st);

#endif
