/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_NCCL_H
#define CHECK_NCCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * A reader for NCCL_DEBUG=INFO output (nccl-tests or any application):
 * which transport each rank's channels really use, whether DMA-BUF and
 * GPUDirect RDMA were available, and the lines that explain a fallback.
 * `nccl-check' shows it; `p2p' and `doctor' use it for level 3 of the
 * acceptance ladder.
 */
enum nvs_nccl_transport {
	NVS_NCCL_P2P_DIRECT,	/* P2P/direct pointer: one process, peer pointers */
	NVS_NCCL_P2P_IPC,	/* P2P/IPC: across processes, CUDA IPC handles */
	NVS_NCCL_P2P_CUMEM,	/* P2P/CUMEM: across processes, cuMem handles */
	NVS_NCCL_P2P_OTHER,
	NVS_NCCL_SHM,		/* through host shared memory: no peer access */
	NVS_NCCL_NET_IB_GDR,	/* RDMA straight to GPU memory */
	NVS_NCCL_NET_IB,	/* RDMA staged through host memory */
	NVS_NCCL_NET_SOCKET,	/* TCP */
	NVS_NCCL_NET_OTHER,
	NVS_NCCL_OTHER,
	NVS_NCCL__COUNT
};

struct nvs_nccl_conn {
	char host[64];
	int pid, dev;		/* from the line prefix; -1 unknown */
	char kind[8];		/* Channel or Ring */
	int channel;
	int from_rank, to_rank;
	char dir[8];		/* send, receive or "" */
	char via[64];		/* as logged: P2P/direct pointer, NET/IB/0/GDRDMA, ... */
	enum nvs_nccl_transport t;
	bool gdr;
};

struct nvs_nccl_note {
	bool warn;		/* an NCCL WARN line */
	char host[64];
	int dev;
	char text[256];
	const char *explain;	/* why it matters; NULL when we have nothing to add */
};

struct nvs_nccl_dmabuf {
	char host[64];
	int dev;
};

struct nvs_nccl_log {
	char version[48];
	struct nvs_nccl_conn *conns;
	size_t n_conns, cap_conns;
	struct nvs_nccl_note *notes;
	size_t n_notes, cap_notes;
	struct nvs_nccl_dmabuf *dmabuf;
	size_t n_dmabuf, cap_dmabuf;
	size_t lines, nccl_lines, interleaved;
	size_t init_complete;	/* "Init COMPLETE" lines (one per rank) */
	bool connected;		/* "Connected all rings" seen */
	bool cut_line;		/* the input ended in the middle of a line */
	int all_direct_p2p;	/* "Check P2P Type isAllDirectP2p N"; -1 not logged */
};

void nvs_nccl_init(struct nvs_nccl_log *log);
/* Returns 0, or -errno with a message in err (binary input, read error). */
int nvs_nccl_parse(struct nvs_nccl_log *log, FILE *f, const char *name, char *err, size_t errlen);
void nvs_nccl_free(struct nvs_nccl_log *log);
/* Orders the connections by rank pair, direction, transport and channel. */
void nvs_nccl_sort(struct nvs_nccl_log *log);
const char *nvs_nccl_transport_str(enum nvs_nccl_transport t);
bool nvs_nccl_is_p2p(enum nvs_nccl_transport t);
bool nvs_nccl_is_net(enum nvs_nccl_transport t);

/* Expectation checks: true when met; otherwise why explains. */
bool nvs_nccl_expect_p2p(const struct nvs_nccl_log *log, bool direct_only, char *why, size_t len);
bool nvs_nccl_expect_gdr(const struct nvs_nccl_log *log, char *why, size_t len);
bool nvs_nccl_expect_dmabuf(const struct nvs_nccl_log *log, char *why, size_t len);

#endif
