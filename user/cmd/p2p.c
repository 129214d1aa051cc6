// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar p2p: does CUDA really copy peer to peer, and correctly? For
 * every ordered GPU pair, with peer access on and off: fill a pattern, copy
 * it across, copy it back, and compare every byte; then measure bandwidth
 * and latency. Prints the acceptance ladder.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/cuda.h"
#include "common/json.h"
#include "check/ladder.h"
#include "check/nccl.h"
#include "sys/pci.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/out.h"
#include "check/topo.h"

#define MAX_GPUS 16
#define LAT_BYTES 4

struct gpu {
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	char name[96];
	char busid[32];
	size_t mem;
	double link_gbps;	/* theoretical, slowest link to the root port; 0 unknown */
	bool local_ok;
	size_t local_bad, local_first;
	double local_gbps;
	char err[160];
};

struct result {
	bool ran;
	char err[200];
	size_t bad_fwd, first_fwd;	/* src -> dst */
	size_t bad_back, first_back;	/* dst -> src, the copy back */
	double uni_gbps, bi_gbps, lat_us;
};

struct opts {
	size_t size;
	int iters;
	bool json;
	const char *lib, *nccl_log, *pci_dump, *pairs;
	double min_eff;
};

struct run {
	struct nvs_cuda cu;
	struct opts o;
	struct gpu g[MAX_GPUS];
	int n;
	int can[MAX_GPUS][MAX_GPUS];
	bool want[MAX_GPUS][MAX_GPUS];
	struct result r[2][MAX_GPUS][MAX_GPUS];	/* [p2p on][src][dst] */
	uint8_t *pattern, *check;
	struct nvs_pci pci;
	bool have_pci;
	struct nvs_findings findings;
	struct nvs_ladder ladder;
};

static int cu_fail(struct run *rn, CUresult r, const char *what, char *err, size_t len)
{
	char buf[160];

	snprintf(err, len, "%s: %s", what, nvs_cuda_strerror(&rn->cu, r, buf, sizeof(buf)));
	return -EIO;
}

#define CU(call, what)                                                   \
	do {                                                             \
		CUresult r_ = (call);                                    \
		if (r_ != CUDA_SUCCESS)                                  \
			return cu_fail(rn, r_, what, err, errlen);       \
	} while (0)

/* A position-dependent pattern: a shifted or partial copy cannot pass. */
static void fill_pattern(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i = 0;

	for (uint64_t k = 0; i < n; ++k) {
		uint64_t z = seed + k * 0x9e3779b97f4a7c15ULL;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		for (int b = 0; b < 8 && i < n; ++b, ++i)
			p[i] = (uint8_t)(z >> (8 * b));
	}
}

static size_t count_bad(const uint8_t *want, const uint8_t *got, size_t n, size_t *first)
{
	size_t bad = 0;

	*first = 0;
	if (!memcmp(want, got, n))
		return 0;
	for (size_t i = 0; i < n; ++i)
		if (want[i] != got[i] && !bad++)
			*first = i;
	return bad;
}

static int peer_mode(struct run *rn, int a, int b, bool on, char *err, size_t errlen)
{
	int pair[2][2] = { { a, b }, { b, a } };

	for (int k = 0; k < 2; ++k) {
		struct gpu *x = &rn->g[pair[k][0]], *y = &rn->g[pair[k][1]];
		CUresult r;

		CU(rn->cu.cuCtxSetCurrent(x->ctx), "Unable to select a context");
		if (on) {
			r = rn->cu.cuCtxEnablePeerAccess(y->ctx, 0);
			/* the reverse direction is a bonus: copies back may be staged */
			if (k == 1 && r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
				continue;
			if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
				return cu_fail(rn, r, "Unable to enable peer access", err, errlen);
		} else {
			r = rn->cu.cuCtxDisablePeerAccess(y->ctx);
			if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
				return cu_fail(rn, r, "Unable to disable peer access", err, errlen);
		}
	}
	return 0;
}

struct bufs {
	CUdeviceptr a, c;	/* on src */
	CUdeviceptr b, d;	/* on dst */
};

static int alloc_on(struct run *rn, struct gpu *g, CUdeviceptr *p, size_t n, char *err, size_t errlen)
{
	CU(rn->cu.cuCtxSetCurrent(g->ctx), "Unable to select a context");
	CU(rn->cu.cuMemAlloc_v2(p, n), "Unable to allocate GPU memory (try a smaller --size)");
	return 0;
}

static void free_on(struct run *rn, struct gpu *g, CUdeviceptr *p)
{
	if (!*p)
		return;
	rn->cu.cuCtxSetCurrent(g->ctx);
	rn->cu.cuMemFree_v2(*p);
	*p = 0;
}

/* Elapsed milliseconds of `iters' async copies src -> dst on stream s. */
static int time_copies(struct run *rn, struct gpu *sg, struct gpu *dg, CUdeviceptr dst, CUdeviceptr src,
		       size_t n, int iters, float *ms, char *err, size_t errlen)
{
	CUevent e0 = NULL, e1 = NULL;
	int ret = 0;

	CU(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	CU(rn->cu.cuEventCreate(&e0, CU_EVENT_DEFAULT), "Unable to create an event");
	if (rn->cu.cuEventCreate(&e1, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
		rn->cu.cuEventDestroy_v2(e0);
		snprintf(err, errlen, "Unable to create an event");
		return -EIO;
	}
#define TRY(call, what)                                                       \
	do {                                                                  \
		CUresult r_ = (call);                                         \
		if (r_ != CUDA_SUCCESS) {                                     \
			ret = cu_fail(rn, r_, what, err, errlen);             \
			goto out;                                             \
		}                                                             \
	} while (0)
	/* one copy first: the first transfer pays for mappings */
	TRY(rn->cu.cuMemcpyPeerAsync(dst, dg->ctx, src, sg->ctx, n, sg->stream), "Peer copy failed");
	TRY(rn->cu.cuEventRecord(e0, sg->stream), "Unable to record an event");
	for (int i = 0; i < iters; ++i)
		TRY(rn->cu.cuMemcpyPeerAsync(dst, dg->ctx, src, sg->ctx, n, sg->stream), "Peer copy failed");
	TRY(rn->cu.cuEventRecord(e1, sg->stream), "Unable to record an event");
	TRY(rn->cu.cuEventSynchronize(e1), "Peer copies did not complete");
	TRY(rn->cu.cuEventElapsedTime(ms, e0, e1), "Unable to read the event timer");
out:
	rn->cu.cuEventDestroy_v2(e0);
	rn->cu.cuEventDestroy_v2(e1);
	return ret;
}

/* Both directions at once: src's stream starts, dst's stream waits for it. */
static int time_bidir(struct run *rn, struct gpu *sg, struct gpu *dg, const struct bufs *bf, size_t n,
		      int iters, float *ms, char *err, size_t errlen)
{
	CUevent start = NULL, dst_done = NULL, end = NULL;
	int ret = 0;

	CU(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	TRY(rn->cu.cuEventCreate(&start, CU_EVENT_DEFAULT), "Unable to create an event");
	TRY(rn->cu.cuEventCreate(&end, CU_EVENT_DEFAULT), "Unable to create an event");
	TRY(rn->cu.cuCtxSetCurrent(dg->ctx), "Unable to select a context");
	TRY(rn->cu.cuEventCreate(&dst_done, CU_EVENT_DEFAULT), "Unable to create an event");
	TRY(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	TRY(rn->cu.cuEventRecord(start, sg->stream), "Unable to record an event");
	TRY(rn->cu.cuStreamWaitEvent(dg->stream, start, 0), "Unable to order the streams");
	for (int i = 0; i < iters; ++i) {
		TRY(rn->cu.cuMemcpyPeerAsync(bf->b, dg->ctx, bf->a, sg->ctx, n, sg->stream), "Peer copy failed");
		TRY(rn->cu.cuMemcpyPeerAsync(bf->c, sg->ctx, bf->d, dg->ctx, n, dg->stream), "Peer copy failed");
	}
	TRY(rn->cu.cuEventRecord(dst_done, dg->stream), "Unable to record an event");
	TRY(rn->cu.cuStreamWaitEvent(sg->stream, dst_done, 0), "Unable to order the streams");
	TRY(rn->cu.cuEventRecord(end, sg->stream), "Unable to record an event");
	TRY(rn->cu.cuEventSynchronize(end), "Peer copies did not complete");
	TRY(rn->cu.cuEventElapsedTime(ms, start, end), "Unable to read the event timer");
out:
	if (start)
		rn->cu.cuEventDestroy_v2(start);
	if (end)
		rn->cu.cuEventDestroy_v2(end);
	if (dst_done)
		rn->cu.cuEventDestroy_v2(dst_done);
	return ret;
}
#undef TRY

static double gbps(size_t bytes, int iters, float ms)
{
	return ms > 0 ? (double)bytes * iters / (ms * 1e-3) / 1e9 : 0;
}

static int run_pair(struct run *rn, int s, int d, bool on, struct result *res, char *err, size_t errlen)
{
	struct gpu *sg = &rn->g[s], *dg = &rn->g[d];
	struct bufs bf = { 0 };
	size_t n = rn->o.size;
	int lat_iters = rn->o.iters < 100 ? 100 : rn->o.iters;
	float ms;
	int ret;

	res->ran = true;
	ret = peer_mode(rn, s, d, on, err, errlen);
	if (!ret)
		ret = alloc_on(rn, sg, &bf.a, n, err, errlen);
	if (!ret)
		ret = alloc_on(rn, sg, &bf.c, n, err, errlen);
	if (!ret)
		ret = alloc_on(rn, dg, &bf.b, n, err, errlen);
	if (!ret)
		ret = alloc_on(rn, dg, &bf.d, n, err, errlen);
	if (ret)
		goto out;

	fill_pattern(rn->pattern, n, (uint64_t)s << 40 | (uint64_t)d << 32 | on);
	for (size_t i = 0; i < n; ++i)
		rn->check[i] = (uint8_t)~rn->pattern[i];
#define STEP(call, what)                                                      \
	do {                                                                  \
		CUresult r_ = (call);                                         \
		if (r_ != CUDA_SUCCESS) {                                     \
			ret = cu_fail(rn, r_, what, err, errlen);             \
			goto out;                                             \
		}                                                             \
	} while (0)
	/* destinations start as the inverse, so a copy that did not happen shows */
	STEP(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	STEP(rn->cu.cuMemcpyHtoD_v2(bf.a, rn->pattern, n), "Unable to fill the source");
	STEP(rn->cu.cuMemcpyHtoD_v2(bf.c, rn->check, n), "Unable to fill the copy-back buffer");
	STEP(rn->cu.cuCtxSetCurrent(dg->ctx), "Unable to select a context");
	STEP(rn->cu.cuMemcpyHtoD_v2(bf.b, rn->check, n), "Unable to fill the destination");
	STEP(rn->cu.cuMemcpyPeer(bf.b, dg->ctx, bf.a, sg->ctx, n), "Peer copy failed");
	STEP(rn->cu.cuMemcpyPeer(bf.c, sg->ctx, bf.b, dg->ctx, n), "Peer copy back failed");
	STEP(rn->cu.cuCtxSynchronize(), "Peer copies did not complete");
	STEP(rn->cu.cuMemcpyDtoH_v2(rn->check, bf.b, n), "Unable to read the destination back");
	res->bad_fwd = count_bad(rn->pattern, rn->check, n, &res->first_fwd);
	STEP(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	STEP(rn->cu.cuMemcpyDtoH_v2(rn->check, bf.c, n), "Unable to read the copy back");
	res->bad_back = count_bad(rn->pattern, rn->check, n, &res->first_back);
#undef STEP

	ret = time_copies(rn, sg, dg, bf.b, bf.a, n, rn->o.iters, &ms, err, errlen);
	if (ret)
		goto out;
	res->uni_gbps = gbps(n, rn->o.iters, ms);
	ret = time_bidir(rn, sg, dg, &bf, n, rn->o.iters, &ms, err, errlen);
	if (ret)
		goto out;
	res->bi_gbps = gbps(2 * n, rn->o.iters, ms);
	ret = time_copies(rn, sg, dg, bf.b, bf.a, LAT_BYTES, lat_iters, &ms, err, errlen);
	if (ret)
		goto out;
	res->lat_us = ms * 1000.0 / lat_iters;
out:
	free_on(rn, sg, &bf.a);
	free_on(rn, sg, &bf.c);
	free_on(rn, dg, &bf.b);
	free_on(rn, dg, &bf.d);
	if (ret)
		snprintf(res->err, sizeof(res->err), "%.199s", err);
	return ret;
}

/* On one GPU: device-to-device copy, verified and timed. */
static int run_local(struct run *rn, int i, char *err, size_t errlen)
{
	struct gpu *g = &rn->g[i];
	CUdeviceptr a = 0, c = 0;
	size_t n = rn->o.size;
	float ms;
	int ret;

	ret = alloc_on(rn, g, &a, n, err, errlen);
	if (!ret)
		ret = alloc_on(rn, g, &c, n, err, errlen);
	if (ret)
		goto out;
	fill_pattern(rn->pattern, n, 0x10ca1ULL << 32 | (unsigned int)i);
	for (size_t k = 0; k < n; ++k)
		rn->check[k] = (uint8_t)~rn->pattern[k];
	ret = -EIO;
	if (rn->cu.cuMemcpyHtoD_v2(a, rn->pattern, n) || rn->cu.cuMemcpyHtoD_v2(c, rn->check, n) ||
	    rn->cu.cuMemcpyDtoD_v2(c, a, n) || rn->cu.cuCtxSynchronize() ||
	    rn->cu.cuMemcpyDtoH_v2(rn->check, c, n)) {
		snprintf(err, errlen, "Device-local copy failed on GPU%d", i);
		goto out;
	}
	g->local_bad = count_bad(rn->pattern, rn->check, n, &g->local_first);
	g->local_ok = !g->local_bad;
	ret = time_copies(rn, g, g, c, a, n, rn->o.iters, &ms, err, errlen);
	if (!ret)
		g->local_gbps = gbps(n, rn->o.iters, ms);
out:
	free_on(rn, g, &a);
	free_on(rn, g, &c);
	if (ret)
		snprintf(g->err, sizeof(g->err), "%.159s", err);
	return ret;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	case 0: break;
	default: return -EINVAL;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v < LAT_BYTES || v > (64ULL << 30))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pairs(struct run *rn, const char *s)
{
	char buf[512], *tok, *save = NULL;

	if (!s || !strcmp(s, "all")) {
		for (int a = 0; a < rn->n; ++a)
			for (int b = 0; b < rn->n; ++b)
				rn->want[a][b] = a != b;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int a, b, used = 0;

		if (sscanf(tok, "%d-%d%n", &a, &b, &used) != 2 || tok[used] || a == b || a < 0 || b < 0 ||
		    a >= rn->n || b >= rn->n)
			return -EINVAL;
		rn->want[a][b] = true;
	}
	return 0;
}

/* The slowest theoretical link on the way from the GPU to its root port. */
static double path_gbps(const struct nvs_pci *p, const struct nvs_pci_dev *d)
{
	double best = 0;
	int guard = 64;

	for (const struct nvs_pci_dev *x = d; x && guard--; x = x->parent >= 0 ? &p->devs[x->parent] : NULL) {
		double v;

		if (!x->link.present || !x->link.max_speed)
			continue;
		v = nvs_pcie_gbps(x->link.max_speed, x->link.max_width);
		if (v > 0 && (best == 0 || v < best))
			best = v;
	}
	return best;
}

static bool relevant(const struct run *rn, const struct nvs_finding *f)
{
	for (int i = 0; i < rn->n; ++i) {
		const struct nvs_pci_dev *d = nvs_pci_find(&rn->pci, rn->g[i].busid);
		int guard = 64;

		for (; d && guard--; d = d->parent >= 0 ? &rn->pci.devs[d->parent] : NULL)
			if (strstr(f->where, d->bdf))
				return true;
	}
	return false;
}

static void judge(struct run *rn, int *fails)
{
	struct nvs_ladder *l = &rn->ladder;
	int pairs = 0, no_access = 0, p2p_ran = 0, bad = 0;
	double worst = 0, theory = 0;
	char first_bad[200] = "";
	size_t warns = 0;
	const char *first_warn = NULL;

	for (int a = 0; a < rn->n; ++a) {
		if (!rn->g[a].local_ok) {
			bad++;
			if (!first_bad[0])
				snprintf(first_bad, sizeof(first_bad), "GPU%d local copy: %s", a,
					 rn->g[a].err[0] ? rn->g[a].err : "data mismatch");
		}
		for (int b = 0; b < rn->n; ++b) {
			if (!rn->want[a][b])
				continue;
			pairs++;
			no_access += !rn->can[a][b];
			for (int on = 0; on < 2; ++on) {
				const struct result *r = &rn->r[on][a][b];

				if (!r->ran)
					continue;
				if (r->err[0] || r->bad_fwd || r->bad_back) {
					bad++;
					if (!first_bad[0] && r->err[0])
						snprintf(first_bad, sizeof(first_bad), "%d->%d P2P %s: %s", a, b,
							 on ? "on" : "off", r->err);
					else if (!first_bad[0])
						snprintf(first_bad, sizeof(first_bad),
							 "%d->%d P2P %s: %zu wrong byte(s), first at offset %zu",
							 a, b, on ? "on" : "off", r->bad_fwd ? r->bad_fwd : r->bad_back,
							 r->bad_fwd ? r->first_fwd : r->first_back);
				}
				if (on && !r->err[0]) {
					double t = 0;
					const struct nvs_pci_dev *da = NULL, *db = NULL;

					p2p_ran++;
					if (rn->have_pci) {
						da = nvs_pci_find(&rn->pci, rn->g[a].busid);
						db = nvs_pci_find(&rn->pci, rn->g[b].busid);
					}
					if (da && db) {
						double ta = path_gbps(&rn->pci, da), tb = path_gbps(&rn->pci, db);

						t = ta < tb ? ta : tb;
					}
					/* judge the pair furthest below its own link */
					if (p2p_ran == 1 || (t > 0 && theory > 0 && r->uni_gbps / t < worst / theory) ||
					    (theory <= 0 && t > 0) || (theory <= 0 && t <= 0 && r->uni_gbps < worst)) {
						worst = r->uni_gbps;
						theory = t;
					}
				}
			}
		}
	}
	*fails = bad;

	if (rn->have_pci) {
		for (size_t i = 0; i < rn->findings.n; ++i) {
			const struct nvs_finding *f = &rn->findings.v[i];

			/* only findings about these GPUs or their paths matter here */
			if (f->sev != NVS_SEV_WARN || !relevant(rn, f))
				continue;
			warns++;
			if (!first_warn)
				first_warn = f->id;
		}
	}
	if (rn->n < 2) {
		nvs_ladder_set(l, 1, warns ? NVS_LADDER_WARN : NVS_LADDER_PASS,
			       "CUDA driver loads, 1 GPU%s%s", warns ? "; topology warning: " : "",
			       warns ? first_warn : "");
		if (bad)
			nvs_ladder_set(l, 2, NVS_LADDER_FAIL, "%s", first_bad);
		else
			nvs_ladder_set(l, 2, NVS_LADDER_NA, "one GPU: P2P not applicable (device-local copies verified)");
		nvs_ladder_set(l, 3, NVS_LADDER_NA, "one GPU: P2P not applicable");
		nvs_ladder_set(l, 4, NVS_LADDER_NA, "one GPU: P2P not applicable");
		return;
	}
	if (no_access)
		nvs_ladder_set(l, 1, NVS_LADDER_FAIL,
			       "%d of %d ordered pairs report no peer access (cuDeviceCanAccessPeer = 0: driver without P2P support, or the topology blocks it)",
			       no_access, pairs);
	else if (!rn->have_pci)
		nvs_ladder_set(l, 1, NVS_LADDER_WARN, "all %d ordered pairs report peer access; PCI topology not read", pairs);
	else if (warns)
		nvs_ladder_set(l, 1, NVS_LADDER_WARN,
			       "all %d ordered pairs report peer access; %zu topology warning(s), first: %s (see `nvsidecar topo')",
			       pairs, warns, first_warn);
	else
		nvs_ladder_set(l, 1, NVS_LADDER_PASS, "all %d ordered pairs report peer access; topology clean", pairs);

	if (bad)
		nvs_ladder_set(l, 2, NVS_LADDER_FAIL, "%d copy check(s) failed; %s", bad, first_bad);
	else if (!p2p_ran)
		nvs_ladder_set(l, 2, NVS_LADDER_FAIL, "no pair could enable peer access (only copies staged through host memory were verified)");
	else if (no_access)
		nvs_ladder_set(l, 2, NVS_LADDER_WARN, "%d pair(s) verified with P2P on; others have no peer access", p2p_ran);
	else
		nvs_ladder_set(l, 2, NVS_LADDER_PASS, "%d ordered pair(s) verified byte for byte with P2P on and off (%zu bytes each)",
			       p2p_ran, rn->o.size);

	if (rn->o.nccl_log) {
		struct nvs_nccl_log log;
		FILE *f = fopen(rn->o.nccl_log, "re");
		char err[256], why[256];

		nvs_nccl_init(&log);
		if (!f)
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL, "Unable to open NCCL log `%s': %s", rn->o.nccl_log,
				       strerror(errno));
		else if (nvs_nccl_parse(&log, f, rn->o.nccl_log, err, sizeof(err)))
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL, "%s", err);
		else if (!log.nccl_lines)
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL, "`%s' has no NCCL INFO lines (run with NCCL_DEBUG=INFO)",
				       rn->o.nccl_log);
		else
			nvs_ladder_set(l, 3, nvs_nccl_expect_p2p(&log, false, why, sizeof(why)) ? NVS_LADDER_PASS :
												      NVS_LADDER_FAIL,
				       "%s", why);
		if (f)
			fclose(f);
		nvs_nccl_free(&log);
	} else {
		nvs_ladder_set(l, 3, NVS_LADDER_NOT_RUN,
			       "give --nccl-log FILE (output of a run with NCCL_DEBUG=INFO, e.g. nccl-tests)");
	}
	if (p2p_ran)
		nvs_ladder_bandwidth(l, worst, theory, rn->o.min_eff);
	else
		nvs_ladder_set(l, 4, NVS_LADDER_FAIL, "no peer-to-peer bandwidth to measure");
}

static void ladder_print(const struct nvs_ladder *l, FILE *f, bool color)
{
	static const char *const col[] = { "\033[2m", "\033[32m", "\033[33m", "\033[31m", "\033[2m" };

	fprintf(f, "%sAcceptance ladder%s (reached level %d of %d)\n", color ? "\033[1m" : "",
		color ? "\033[0m" : "", nvs_ladder_reached(l), NVS_LADDER_LEVELS);
	for (int i = 0; i < NVS_LADDER_LEVELS; ++i)
		fprintf(f, "  %d %-32s %s%-7s%s %s\n", i + 1, nvs_ladder_title(i + 1), color ? col[l->state[i]] : "",
			nvs_ladder_state_str(l->state[i]), color ? "\033[0m" : "", l->detail[i]);
}

static void ladder_json(const struct nvs_ladder *l, struct json *j, const char *key)
{
	json_obj_open(j, key);
	json_int(j, "reached", nvs_ladder_reached(l));
	json_arr_open(j, "levels");
	for (int i = 0; i < NVS_LADDER_LEVELS; ++i) {
		json_obj_open(j, NULL);
		json_int(j, "level", i + 1);
		json_str(j, "title", nvs_ladder_title(i + 1));
		json_str(j, "state", nvs_ladder_state_str(l->state[i]));
		json_str(j, "detail", l->detail[i]);
		json_obj_close(j);
	}
	json_arr_close(j);
	json_obj_close(j);
}

static void print_matrix(struct run *rn, const char *title, int which)
{
	printf("\n%s\n   S\\D ", title);
	for (int b = 0; b < rn->n; ++b)
		printf(" %8d", b);
	printf("\n");
	for (int a = 0; a < rn->n; ++a) {
		printf("  %4d ", a);
		for (int b = 0; b < rn->n; ++b) {
			const struct result *on = &rn->r[1][a][b], *off = &rn->r[0][a][b];
			const struct result *r = which >= 3 ? off : on;
			int kind = which % 3;

			if (a == b) {
				if (which == 0 && rn->g[a].local_gbps > 0)
					printf(" %8.1f", rn->g[a].local_gbps);
				else
					printf(" %8s", "X");
			} else if (!r->ran || r->err[0]) {
				printf(" %8s", r->ran ? "error" : "-");
			} else {
				printf(" %8.2f", kind == 0 ? r->uni_gbps : kind == 1 ? r->bi_gbps : r->lat_us);
			}
		}
		printf("\n");
	}
}

static void print_human(struct run *rn)
{
	const char *nc = getenv("NO_COLOR");
	bool color = isatty(STDOUT_FILENO) && (!nc || !*nc);
	int ver = 0;

	if (rn->cu.cuDriverGetVersion)
		rn->cu.cuDriverGetVersion(&ver);
	printf("CUDA driver API %d.%d from %s, %d GPU(s), %zu bytes per copy, %d iterations\n", ver / 1000,
	       ver % 1000 / 10, rn->cu.path, rn->n, rn->o.size, rn->o.iters);
	for (int i = 0; i < rn->n; ++i)
		printf("  GPU%d %-40s %s  local copy %s\n", i, rn->g[i].name, rn->g[i].busid,
		       rn->g[i].local_ok ? "verified" : "FAILED");
	if (rn->n < 2) {
		printf("\nOne GPU: P2P not applicable; device-local copies checked.\n\n");
		ladder_print(&rn->ladder, stdout, color);
		return;
	}
	printf("\nPeer access (cuDeviceCanAccessPeer; row = source)\n      ");
	for (int b = 0; b < rn->n; ++b)
		printf(" GPU%-2d", b);
	printf("\n");
	for (int a = 0; a < rn->n; ++a) {
		printf("GPU%-2d ", a);
		for (int b = 0; b < rn->n; ++b)
			printf(" %-5s", a == b ? "X" : rn->can[a][b] ? "OK" : "NS");
		printf("\n");
	}

	printf("\nVerification (every byte; copy = source to destination, back = destination to source)\n");
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b)
			for (int on = 1; on >= 0; --on) {
				const struct result *r = &rn->r[on][a][b];

				if (!r->ran)
					continue;
				printf("  %d->%d P2P %-3s ", a, b, on ? "on" : "off");
				if (r->err[0])
					printf("%sERROR%s %s\n", color ? "\033[31m" : "", color ? "\033[0m" : "", r->err);
				else if (r->bad_fwd || r->bad_back) {
					printf("%sMISMATCH%s", color ? "\033[31m" : "", color ? "\033[0m" : "");
					if (r->bad_fwd)
						printf(" copy: %zu wrong byte(s), first at offset %zu;", r->bad_fwd,
						       r->first_fwd);
					if (r->bad_back)
						printf(" back: %zu wrong byte(s), first at offset %zu;", r->bad_back,
						       r->first_back);
					printf("\n");
				} else
					printf("ok\n");
			}
	printf("\nBandwidth in GB/s (decimal: 1 GB = 10^9 bytes, as NCCL reports), latency in microseconds\n");
	printf("(diagonal: device-local copy rate; latency: %d-byte stream-ordered cuMemcpyPeerAsync)\n", LAT_BYTES);
	print_matrix(rn, "Unidirectional, P2P on (row = source, column = destination)", 0);
	print_matrix(rn, "Unidirectional, P2P off", 3);
	print_matrix(rn, "Bidirectional, P2P on", 1);
	print_matrix(rn, "Bidirectional, P2P off", 4);
	print_matrix(rn, "Latency (us), P2P on", 2);
	print_matrix(rn, "Latency (us), P2P off", 5);
	printf("\n");
	ladder_print(&rn->ladder, stdout, color);
}

static void json_result(struct json *j, const char *key, const struct result *r)
{
	json_obj_open(j, key);
	json_bool(j, "ran", r->ran);
	if (r->ran) {
		json_str(j, "error", r->err[0] ? r->err : NULL);
		json_bool(j, "verified", !r->err[0] && !r->bad_fwd && !r->bad_back);
		json_uint(j, "wrong_bytes", r->bad_fwd);
		if (r->bad_fwd)
			json_uint(j, "first_mismatch", r->first_fwd);
		else
			json_null(j, "first_mismatch");
		json_uint(j, "wrong_bytes_back", r->bad_back);
		if (r->bad_back)
			json_uint(j, "first_mismatch_back", r->first_back);
		else
			json_null(j, "first_mismatch_back");
		json_double(j, "uni_gbps", r->uni_gbps, 3);
		json_double(j, "bi_gbps", r->bi_gbps, 3);
		json_double(j, "latency_us", r->lat_us, 3);
	}
	json_obj_close(j);
}

static void print_json(struct run *rn)
{
	struct json j;
	int ver = 0;

	if (rn->cu.cuDriverGetVersion)
		rn->cu.cuDriverGetVersion(&ver);
	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "library", rn->cu.path);
	json_int(&j, "driver_version", ver);
	json_uint(&j, "size", rn->o.size);
	json_int(&j, "iters", rn->o.iters);
	json_str(&j, "units", "GB/s decimal (1e9 bytes per second); latency in microseconds");
	json_bool(&j, "p2p_applicable", rn->n > 1);
	json_arr_open(&j, "gpus");
	for (int i = 0; i < rn->n; ++i) {
		json_obj_open(&j, NULL);
		json_int(&j, "index", i);
		json_str(&j, "name", rn->g[i].name);
		json_str(&j, "bus_id", rn->g[i].busid);
		json_uint(&j, "memory", rn->g[i].mem);
		json_bool(&j, "local_verified", rn->g[i].local_ok);
		json_uint(&j, "local_wrong_bytes", rn->g[i].local_bad);
		json_double(&j, "local_gbps", rn->g[i].local_gbps, 3);
		if (rn->g[i].link_gbps > 0)
			json_double(&j, "link_gbps", rn->g[i].link_gbps, 2);
		else
			json_null(&j, "link_gbps");
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "can_access_peer");
	for (int a = 0; a < rn->n; ++a) {
		json_arr_open(&j, NULL);
		for (int b = 0; b < rn->n; ++b)
			json_bool(&j, NULL, a != b && rn->can[a][b]);
		json_arr_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "pairs");
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b) {
			if (!rn->want[a][b])
				continue;
			json_obj_open(&j, NULL);
			json_int(&j, "src", a);
			json_int(&j, "dst", b);
			json_bool(&j, "can_access_peer", rn->can[a][b]);
			json_result(&j, "p2p_on", &rn->r[1][a][b]);
			json_result(&j, "p2p_off", &rn->r[0][a][b]);
			json_obj_close(&j);
		}
	json_arr_close(&j);
	ladder_json(&rn->ladder, &j, "ladder");
	json_obj_close(&j);
	json_end(&j);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--size BYTES[K|M|G]] [--iters N] [--pairs all|A-B,...] [--lib PATH]\n"
		"            [--nccl-log FILE] [--pci-dump FILE] [--min-efficiency F] [--json]\n"
		"\n"
		"For every ordered GPU pair, with peer access on and off: fills a pattern,\n"
		"copies it to the peer and back, verifies every byte (first mismatch offset\n"
		"and count), then measures unidirectional and bidirectional bandwidth (GB/s,\n"
		"decimal) and latency. On one GPU it checks device-local copies only. Prints\n"
		"the acceptance ladder (levels 1-4; see docs/p2p.md).\n"
		"\n"
		"  --size          bytes per copy (default 64M)\n"
		"  --iters         timed copies per measurement (default 20)\n"
		"  --pairs         ordered pairs to test, e.g. 0-1,1-0 (default all)\n"
		"  --lib           libcuda to load (default libcuda.so.1)\n"
		"  --nccl-log      NCCL_DEBUG=INFO output for ladder level 3\n"
		"  --pci-dump      read PCI facts from an lspci -xxxx dump instead of sysfs\n"
		"  --min-efficiency share of the link's theoretical rate level 4 needs (default %.2f)\n"
		"  --json          JSON document\n"
		"\n"
		"Exit status: 0 every copy verified, 1 a copy failed verification or a\n"
		"CUDA call failed, 2 usage error, 3 no libcuda or no CUDA device.\n",
		PROG_NAME, prog, NVS_LADDER_MIN_EFFICIENCY);
}

static int setup(struct run *rn, char *err, size_t errlen)
{
	CUresult r = rn->cu.cuInit(0);
	int n = 0;

	if (r != CUDA_SUCCESS) {
		char buf[160];

		snprintf(err, errlen, "Unable to initialise CUDA: %s (is the NVIDIA driver loaded?)",
			 nvs_cuda_strerror(&rn->cu, r, buf, sizeof(buf)));
		return -ENXIO;
	}
	CU(rn->cu.cuDeviceGetCount(&n), "Unable to count CUDA devices");
	if (n < 1) {
		snprintf(err, errlen, "No CUDA devices found (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
		return -ENODEV;
	}
	if (n > MAX_GPUS)
		n = MAX_GPUS;
	for (const char *need = NULL;;) {
#define NEED(fn) if (!rn->cu.fn) need = #fn;
		NEED(cuDevicePrimaryCtxRetain) NEED(cuCtxSetCurrent) NEED(cuMemAlloc_v2) NEED(cuMemFree_v2)
		NEED(cuMemcpyHtoD_v2) NEED(cuMemcpyDtoH_v2) NEED(cuMemcpyDtoD_v2) NEED(cuMemcpyPeer)
		NEED(cuMemcpyPeerAsync) NEED(cuStreamCreate) NEED(cuStreamDestroy_v2) NEED(cuEventCreate)
		NEED(cuEventRecord) NEED(cuEventSynchronize) NEED(cuEventElapsedTime) NEED(cuEventDestroy_v2)
		NEED(cuStreamWaitEvent) NEED(cuCtxSynchronize) NEED(cuDeviceCanAccessPeer)
		NEED(cuCtxEnablePeerAccess) NEED(cuCtxDisablePeerAccess)
#undef NEED
		if (need) {
			snprintf(err, errlen, "%.300s lacks %s: the driver is too old or this is not libcuda",
				 rn->cu.path, need);
			return -ENOEXEC;
		}
		break;
	}
	rn->n = n;
	for (int i = 0; i < n; ++i) {
		struct gpu *g = &rn->g[i];

		CU(rn->cu.cuDeviceGet(&g->dev, i), "Unable to get a CUDA device");
		if (!rn->cu.cuDeviceGetName || rn->cu.cuDeviceGetName(g->name, sizeof(g->name), g->dev))
			snprintf(g->name, sizeof(g->name), "CUDA device %d", i);
		if (!rn->cu.cuDeviceGetPCIBusId || rn->cu.cuDeviceGetPCIBusId(g->busid, sizeof(g->busid), g->dev))
			snprintf(g->busid, sizeof(g->busid), "unknown");
		for (char *c = g->busid; *c; ++c)
			*c = (char)tolower((unsigned char)*c);
		if (rn->cu.cuDeviceTotalMem_v2)
			rn->cu.cuDeviceTotalMem_v2(&g->mem, g->dev);
		CU(rn->cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "Unable to create a CUDA context");
		CU(rn->cu.cuCtxSetCurrent(g->ctx), "Unable to select a context");
		CU(rn->cu.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "Unable to create a stream");
	}
	for (int a = 0; a < n; ++a)
		for (int b = 0; b < n; ++b)
			if (a != b)
				CU(rn->cu.cuDeviceCanAccessPeer(&rn->can[a][b], rn->g[a].dev, rn->g[b].dev),
				   "Unable to query peer access");
	return 0;
}

static void teardown(struct run *rn)
{
	for (int i = 0; i < rn->n; ++i) {
		if (!rn->g[i].ctx)
			continue;
		rn->cu.cuCtxSetCurrent(rn->g[i].ctx);
		if (rn->g[i].stream)
			rn->cu.cuStreamDestroy_v2(rn->g[i].stream);
		for (int k = 0; k < rn->n; ++k)
			if (k != i && rn->g[k].ctx)
				rn->cu.cuCtxDisablePeerAccess(rn->g[k].ctx);
		if (rn->cu.cuDevicePrimaryCtxRelease_v2)
			rn->cu.cuDevicePrimaryCtxRelease_v2(rn->g[i].dev);
	}
}

int p2p_main(int argc, const char *argv[])
{
	struct run *rn;
	char err[512];
	int ret = NVS_EX_USAGE, fails = 0, r;

	rn = calloc(1, sizeof(*rn));
	if (!rn) {
		perror("Unable to allocate memory");
		return NVS_EX_FAIL;
	}
	rn->o.size = 64 << 20;
	rn->o.iters = 20;
	rn->o.min_eff = NVS_LADDER_MIN_EFFICIENCY;
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			ret = NVS_EX_OK;
			goto out_free;
		} else if (!strcmp(a, "--json")) {
			rn->o.json = true;
		} else if (v && !strcmp(a, "--size")) {
			if (parse_size(v, &rn->o.size)) {
				fprintf(stderr, "Invalid --size (a byte count from 4 to 64G, suffix K, M or G): `%s'\n", v);
				goto out_free;
			}
			i++;
		} else if (v && !strcmp(a, "--iters")) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || n < 1 || n > 100000) {
				fprintf(stderr, "Invalid --iters (1 to 100000): `%s'\n", v);
				goto out_free;
			}
			rn->o.iters = (int)n;
			i++;
		} else if (v && !strcmp(a, "--min-efficiency")) {
			char *end;

			rn->o.min_eff = strtod(v, &end);
			if (*end || rn->o.min_eff <= 0 || rn->o.min_eff > 1) {
				fprintf(stderr, "Invalid --min-efficiency (a share above 0 and at most 1): `%s'\n", v);
				goto out_free;
			}
			i++;
		} else if (v && !strcmp(a, "--pairs")) {
			rn->o.pairs = argv[++i];
		} else if (v && !strcmp(a, "--lib")) {
			rn->o.lib = argv[++i];
		} else if (v && !strcmp(a, "--nccl-log")) {
			rn->o.nccl_log = argv[++i];
		} else if (v && !strcmp(a, "--pci-dump")) {
			rn->o.pci_dump = argv[++i];
		} else {
			fprintf(stderr, "Invalid argument: `%s'\n", a);
			usage(stderr, argv[0]);
			goto out_free;
		}
	}

	if (nvs_cuda_load(&rn->cu, rn->o.lib, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		/* a --lib that is not libcuda is a bad argument; no libcuda at all is missing */
		ret = rn->o.lib ? NVS_EX_USAGE : NVS_EX_MISSING;
		goto out_free;
	}
	r = setup(rn, err, sizeof(err));
	if (r) {
		fprintf(stderr, "%s\n", err);
		ret = r == -ENODEV || r == -ENOEXEC || r == -ENXIO ? NVS_EX_MISSING : NVS_EX_FAIL;
		goto out_teardown;
	}
	if (parse_pairs(rn, rn->o.pairs)) {
		fprintf(stderr, "Invalid --pairs (all, or SRC-DST,... with indices below %d): `%s'\n", rn->n,
			rn->o.pairs);
		goto out_teardown;
	}
	/* PCI facts are optional: without them level 1 and 4 say so */
	if (!nvs_pci_scan(&rn->pci, rn->o.pci_dump, NULL, 0, err, sizeof(err))) {
		rn->have_pci = true;
		for (int i = 0; i < rn->n; ++i) {
			const struct nvs_pci_dev *d = nvs_pci_find(&rn->pci, rn->g[i].busid);

			if (d)
				rn->g[i].link_gbps = path_gbps(&rn->pci, d);
		}
		if (nvs_topo_findings(&rn->pci, &rn->findings))
			rn->have_pci = false;
	} else if (rn->o.pci_dump) {
		fprintf(stderr, "%s\n", err);
		goto out_teardown;
	}

	rn->pattern = malloc(rn->o.size);
	rn->check = malloc(rn->o.size);
	if (!rn->pattern || !rn->check) {
		perror("Unable to allocate host buffers (try a smaller --size)");
		goto out_teardown;
	}
	for (int i = 0; i < rn->n; ++i)
		run_local(rn, i, err, sizeof(err));
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b) {
			if (!rn->want[a][b])
				continue;
			if (rn->can[a][b])
				run_pair(rn, a, b, true, &rn->r[1][a][b], err, sizeof(err));
			run_pair(rn, a, b, false, &rn->r[0][a][b], err, sizeof(err));
		}
	judge(rn, &fails);
	if (rn->o.json)
		print_json(rn);
	else
		print_human(rn);
	ret = fails ? NVS_EX_FAIL : NVS_EX_OK;

out_teardown:
	teardown(rn);
	free(rn->pattern);
	free(rn->check);
	nvs_findings_free(&rn->findings);
	nvs_pci_free(&rn->pci);
	nvs_cuda_unload(&rn->cu);
out_free:
	free(rn);
	return ret;
}
