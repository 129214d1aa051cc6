/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_P2P_H
#define CHECK_P2P_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/ladder.h"
#include "check/nccl.h"
#include "check/topo.h"
#include "sys/cuda.h"
#include "sys/pci.h"

/*
 * The peer-to-peer engine behind `p2p': for every ordered GPU pair, with
 * peer access on and off, fill a pattern, copy it across and back, compare
 * every byte, then measure bandwidth and latency; and judge the acceptance
 * ladder from that, the PCI topology and an NCCL log. Nothing here prints.
 */
#define NVS_P2P_MAX_GPUS 16
#define NVS_P2P_LAT_BYTES 4

struct nvs_p2p_gpu {
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	char name[96];
	char busid[32];
	size_t mem;
	double link_gbps;	/* theoretical, slowest link to the root port; 0 unknown */
	bool used;		/* in a wanted pair (or alone, one GPU): has a context */
	bool local_ok;
	size_t local_bad, local_first;
	double local_gbps;
	char err[160];
};

struct nvs_p2p_result {
	bool ran;
	char err[200];
	size_t bad_fwd, first_fwd;	/* src -> dst */
	size_t bad_back, first_back;	/* dst -> src, the copy back */
	double uni_gbps, bi_gbps, lat_us;
};

struct nvs_p2p_opts {
	size_t size;		/* bytes per copy */
	int iters;
	double min_eff;		/* level 4's share of the theoretical rate */
	const char *lib;	/* libcuda to load, NULL: libcuda.so.1 */
};

struct nvs_p2p_run {
	struct nvs_cuda cu;
	struct nvs_p2p_opts o;
	struct nvs_p2p_gpu g[NVS_P2P_MAX_GPUS];
	int n;
	int can[NVS_P2P_MAX_GPUS][NVS_P2P_MAX_GPUS];
	bool want[NVS_P2P_MAX_GPUS][NVS_P2P_MAX_GPUS];
	struct nvs_p2p_result r[2][NVS_P2P_MAX_GPUS][NVS_P2P_MAX_GPUS];	/* [p2p on][src][dst] */
	uint8_t *pattern, *check;
	const struct nvs_pci *pci;		/* NULL: no PCI facts */
	struct nvs_findings findings;
	struct nvs_ladder ladder;
	int driver_version;
};

/*
 * Whose NCCL log is it? NCCL's prefix names the host of every line
 * ("%s:%d:%d [%d] NCCL INFO ": host, pid, tid, CUDA device; src/debug.cc),
 * so a log written on another node is told apart before its P2P findings
 * are taken for this node's; and a log naming more GPUs than this node
 * has is not from its current hardware.
 */
struct nvs_p2p_origin {
	char node[HOST_NAME_MAX + 1];	/* this node's name (gethostname); "" unknown */
	const char *log_host;	/* --log-host, or NULL */
	const char *want;	/* the host the lines must be from: log_host, else node */
	size_t hosts;		/* hosts the log's prefixes name */
	char host_list[192];	/* "gpu01, gpu02" (the first ones) */
	char used[NVS_NCCL_HOST_LEN];	/* the log's spelling of want; "" when it names no host */
	bool host_checked;	/* the log names hosts, and want is one of them */
	size_t other_lines;	/* NCCL lines of other hosts, not judged */
	size_t log_gpus;	/* GPUs the judged lines name */
	int node_gpus;		/* NVIDIA GPUs in this node's PCI facts; -1 unknown */
	char node_source[256];	/* "sysfs" or the --pci-dump path; "" none */
	bool gpu_mismatch;	/* log_gpus > node_gpus */
};

/*
 * Before reading: what to compare (node from gethostname(), log_host from
 * --log-host or NULL); sets log->only_host.
 */
void nvs_p2p_origin_init(struct nvs_p2p_origin *o, struct nvs_nccl_log *log, const char *log_host);
/*
 * After reading: 0 when the log is this node's (or --log-host's), or names
 * no host at all; -EXDEV with a message naming the hosts, this node and
 * what to do when none of its hosts is, or when --log-host names a host
 * and the log names none (nothing to check the name against).
 */
int nvs_p2p_origin_host(struct nvs_p2p_origin *o, const struct nvs_nccl_log *log, const char *path, char *err,
			size_t errlen);
/* The GPU count: the log's judged lines against this node's PCI facts (NULL: unknown). */
void nvs_p2p_origin_gpus(struct nvs_p2p_origin *o, const struct nvs_nccl_log *log, const struct nvs_pci *pci);

/* Pairs as given to --pairs: "all", or "0-1,1-0"; ranges are checked at open. */
struct nvs_p2p_pairs {
	bool all;
	int n;
	int src[NVS_P2P_MAX_GPUS * NVS_P2P_MAX_GPUS], dst[NVS_P2P_MAX_GPUS * NVS_P2P_MAX_GPUS];
};

/* -EINVAL for an empty or malformed list, so that it fails before CUDA starts. */
int nvs_p2p_parse_pairs(const char *s, struct nvs_p2p_pairs *p);

/*
 * Loads libcuda, opens every device and checks the pairs against them.
 * Returns 0, or with err: -ENOENT (no libcuda), -ENOEXEC (not libcuda),
 * -ENXIO (CUDA does not start), -ENODEV (no device), -ERANGE (a pair
 * names a GPU that is not there), another -errno.
 */
int nvs_p2p_open(struct nvs_p2p_run *rn, const struct nvs_p2p_opts *o, const struct nvs_p2p_pairs *pairs,
		 const struct nvs_pci *pci, char *err, size_t errlen);
/* Copies, verifies and times every wanted pair and every GPU alone. -ENOMEM (host buffers). */
int nvs_p2p_measure(struct nvs_p2p_run *rn);
/*
 * Fills the ladder (nccl: a read NCCL log, or NULL when none was given;
 * origin: what nvs_p2p_origin_*() found of it) and returns how many copy
 * checks failed. A log with more GPUs than this node fails level 3.
 */
int nvs_p2p_judge(struct nvs_p2p_run *rn, const struct nvs_nccl_log *nccl, const struct nvs_p2p_origin *origin);
void nvs_p2p_close(struct nvs_p2p_run *rn);

#endif
