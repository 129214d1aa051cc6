/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_NCCL_H
#define CHECK_NCCL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A reader for NCCL_DEBUG=INFO output (nccl-tests or any application):
 * which transport each rank's connections really use, which network and
 * whether it used GPUDirect RDMA, what the log shows about DMA-BUF, and the
 * lines that explain a fallback. `nccl-check' shows it; `p2p' and `doctor'
 * use it for level 3 of the acceptance ladder. Nothing here prints.
 *
 * The formats are NCCL's own (src/debug.cc, init.cc and the transport/ files of
 * 2.14 to 2.27; tests/nccl/ has a fixture per family), with what launchers
 * put in front of a line: Open MPI's --tag-output, pdsh, srun --label,
 * Python logging, NCCL 2.26's WARN timestamps.
 */
/*
 * A host name as a prefix writes it: NCCL's is the node's name (up to its
 * first dot), and Linux allows HOST_NAME_MAX (64) characters; a 64-character
 * name cut to 63 would never match the node it names.
 */
#define NVS_NCCL_HOST_LEN	(HOST_NAME_MAX + 1)

enum nvs_nccl_transport {
	NVS_NCCL_P2P_DIRECT,	/* P2P/direct pointer: one process, peer pointers */
	NVS_NCCL_P2P_IPC,	/* P2P/IPC: across processes, CUDA IPC handles */
	NVS_NCCL_P2P_CUMEM,	/* P2P/CUMEM (or MNNVL): across processes, cuMem handles */
	NVS_NCCL_P2P_OTHER,	/* P2P/indirect and whatever NCCL adds */
	NVS_NCCL_SHM,		/* through host shared memory: no peer access */
	NVS_NCCL_NET_GDR,	/* a network, GPUDirect RDMA (any net plugin's GDRDMA flag) */
	NVS_NCCL_NET,		/* a network, staged through host memory */
	NVS_NCCL_OTHER,
	NVS_NCCL__COUNT
};

struct nvs_nccl_conn {
	char host[NVS_NCCL_HOST_LEN];
	int pid, dev;		/* from the line prefix; -1 unknown */
	char kind[8];		/* Channel or Ring */
	int channel;
	int from_rank, to_rank;
	char dir[8];		/* send, receive or "" */
	char via[96];		/* as logged: P2P/direct pointer, NET/AWS Libfabric/0/GDRDMA, ... */
	char net[48];		/* the network of NET/<net>/..., "" otherwise */
	enum nvs_nccl_transport t;
	bool gdr;
};

struct nvs_nccl_note {
	bool warn;		/* an NCCL WARN line */
	char host[NVS_NCCL_HOST_LEN];
	int dev;
	char text[256];
	const char *explain;	/* why it matters; NULL when we have nothing to add */
	bool inter_node;	/* only matters when nodes talk over a network */
};

/* A GPU that a line names: host and CUDA device. */
struct nvs_nccl_gpu {
	char host[NVS_NCCL_HOST_LEN];
	int dev;
};

struct nvs_nccl_gpus {
	struct nvs_nccl_gpu *v;
	size_t n, cap;
};

/* Distinct numbers: CUDA devices, PCI bus ids. */
struct nvs_nccl_ids {
	unsigned long long *v;
	size_t n, cap;
};

struct nvs_nccl_log {
	char version[48];
	struct nvs_nccl_conn *conns;
	size_t n_conns, cap_conns;
	size_t *conn_hash;	/* open addressing over conns: index + 1, 0 free */
	size_t hash_cap;
	struct nvs_nccl_note *notes;
	size_t n_notes, cap_notes;
	/* DMA-BUF: NCCL's init line says only that the GPU supports it */
	struct nvs_nccl_gpus dmabuf_avail;	/* "DMA-BUF is available on GPU device N" */
	struct nvs_nccl_gpus dmabuf_used;	/* a registration with a dma-buf fd */
	struct nvs_nccl_gpus dmabuf_failed;	/* ibv_reg_dmabuf_mr failed */
	struct nvs_nccl_gpus hosts;		/* every host named by a prefix (dev -1) */
	/*
	 * One node's lines (`p2p --log-host'): set only_host before reading,
	 * and the lines whose prefix names another host (nvs_nccl_host_match)
	 * are counted in other_lines and not judged; hosts still lists every
	 * host. Of the lines judged, dev_ids collects the CUDA devices (the
	 * prefix's "[N]", "cudaDev N") and bus_ids the PCI bus ids ("busId X").
	 */
	const char *only_host;
	size_t other_lines;
	struct nvs_nccl_ids dev_ids, bus_ids;
	size_t lines, nccl_lines, interleaved;
	size_t binary_lines;	/* lines with NUL bytes, skipped */
	size_t init_complete;	/* "Init COMPLETE" lines (one per rank) */
	size_t init_lines;	/* lines only the INIT subsystem prints */
	int nnodes;		/* from "nNodes N" (2.21+); -1 not logged */
	bool connected;		/* "Connected all rings" seen */
	bool cut_line;		/* the input ended in the middle of a line */
	bool no_writer;		/* the file read last was a FIFO with no writer: read as empty */
	int all_direct_p2p;	/* "Check P2P Type isAllDirectP2p N"; -1 not logged */
};

/* Bounds, so that a log that is not one cannot take all memory. */
#define NVS_NCCL_MAX_LINE	(1 << 20)
#define NVS_NCCL_MAX_CONNS	262144
#define NVS_NCCL_MAX_NOTES	4096
#define NVS_NCCL_MAX_GPUS	8192
#define NVS_NCCL_MAX_IDS	1024	/* per node: more than any node has GPUs */

void nvs_nccl_init(struct nvs_nccl_log *log);
/*
 * Reads one log (a file, a pipe, "-" for standard input) into log; call it
 * once per file. Lines holding NUL bytes (the zero-filled blocks a crash
 * leaves in a log being written) are skipped and counted; a file in which
 * no NCCL line is left is refused as binary. Returns 0, or -errno with a
 * message in err (unreadable, binary, an over-long line, more than the
 * bounds above).
 */
int nvs_nccl_read(struct nvs_nccl_log *log, const char *path, char *err, size_t errlen);
void nvs_nccl_free(struct nvs_nccl_log *log);
/* Orders the connections by rank pair, direction, transport and channel. */
void nvs_nccl_sort(struct nvs_nccl_log *log);

const char *nvs_nccl_transport_str(enum nvs_nccl_transport t);
bool nvs_nccl_is_p2p(enum nvs_nccl_transport t);
bool nvs_nccl_is_net(enum nvs_nccl_transport t);

/* Ended in the middle (cut line, or INIT lines but no completion). */
bool nvs_nccl_truncated(const struct nvs_nccl_log *log);
/* Connection lines but no INIT line: NCCL_DEBUG_SUBSYS left INIT out. */
bool nvs_nccl_filtered(const struct nvs_nccl_log *log);
/* How many nodes ran: nNodes when logged, else the hosts the prefixes name (0 unknown). */
size_t nvs_nccl_nodes(const struct nvs_nccl_log *log);
/*
 * Whether a log's host and a node's name are one node: case-insensitive,
 * and a short name is the FQDN it begins ("gpu01", "GPU01.example.com"),
 * as NCCL writes the host name up to its first dot.
 */
bool nvs_nccl_host_match(const char *a, const char *b);
/* How many GPUs the lines judged name: the more of distinct CUDA devices and bus ids. */
size_t nvs_nccl_gpus_named(const struct nvs_nccl_log *log);

/*
 * Expectation checks: true when met. why explains; where names the node
 * and ranks at fault ("" when met or when nothing is at fault).
 */
bool nvs_nccl_expect_p2p(const struct nvs_nccl_log *log, bool direct_only, char *why, size_t len,
			 char *where, size_t wlen);
bool nvs_nccl_expect_gdr(const struct nvs_nccl_log *log, char *why, size_t len, char *where, size_t wlen);
bool nvs_nccl_expect_dmabuf(const struct nvs_nccl_log *log, char *why, size_t len, char *where,
			    size_t wlen);

#endif
