// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Does CUDA really copy peer to peer, and correctly? For every ordered GPU
 * pair, with peer access on and off: fill a pattern, copy it across, copy
 * it back, and compare every byte; then measure bandwidth and latency, and
 * judge the acceptance ladder. `p2p' shows the result; nothing here prints.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/p2p.h"

static int cu_fail(struct nvs_p2p_run *rn, CUresult r, const char *what, char *err, size_t len)
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

/* The same, for a function that cleans up at its out: label. */
#define CU_OUT(call, what)                                               \
	do {                                                             \
		CUresult r_ = (call);                                    \
		if (r_ != CUDA_SUCCESS) {                                \
			ret = cu_fail(rn, r_, what, err, errlen);        \
			goto out;                                        \
		}                                                        \
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

static int peer_mode(struct nvs_p2p_run *rn, int a, int b, bool on, char *err, size_t errlen)
{
	int pair[2][2] = { { a, b }, { b, a } };

	for (int k = 0; k < 2; ++k) {
		struct nvs_p2p_gpu *x = &rn->g[pair[k][0]], *y = &rn->g[pair[k][1]];
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

static int alloc_on(struct nvs_p2p_run *rn, struct nvs_p2p_gpu *g, CUdeviceptr *p, size_t n, char *err, size_t errlen)
{
	CU(rn->cu.cuCtxSetCurrent(g->ctx), "Unable to select a context");
	CU(rn->cu.cuMemAlloc_v2(p, n), "Unable to allocate GPU memory (try a smaller --size)");
	return 0;
}

static void free_on(struct nvs_p2p_run *rn, struct nvs_p2p_gpu *g, CUdeviceptr *p)
{
	if (!*p)
		return;
	rn->cu.cuCtxSetCurrent(g->ctx);
	rn->cu.cuMemFree_v2(*p);
	*p = 0;
}

/* Elapsed milliseconds of `iters' async copies src -> dst on stream s. */
static int time_copies(struct nvs_p2p_run *rn, struct nvs_p2p_gpu *sg, struct nvs_p2p_gpu *dg, CUdeviceptr dst, CUdeviceptr src,
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
	/* one copy first: the first transfer pays for mappings */
	CU_OUT(rn->cu.cuMemcpyPeerAsync(dst, dg->ctx, src, sg->ctx, n, sg->stream), "Peer copy failed");
	CU_OUT(rn->cu.cuEventRecord(e0, sg->stream), "Unable to record an event");
	for (int i = 0; i < iters; ++i)
		CU_OUT(rn->cu.cuMemcpyPeerAsync(dst, dg->ctx, src, sg->ctx, n, sg->stream), "Peer copy failed");
	CU_OUT(rn->cu.cuEventRecord(e1, sg->stream), "Unable to record an event");
	CU_OUT(rn->cu.cuEventSynchronize(e1), "Peer copies did not complete");
	CU_OUT(rn->cu.cuEventElapsedTime(ms, e0, e1), "Unable to read the event timer");
out:
	rn->cu.cuEventDestroy_v2(e0);
	rn->cu.cuEventDestroy_v2(e1);
	return ret;
}

/* Both directions at once: src's stream starts, dst's stream waits for it. */
static int time_bidir(struct nvs_p2p_run *rn, struct nvs_p2p_gpu *sg, struct nvs_p2p_gpu *dg, const struct bufs *bf, size_t n,
		      int iters, float *ms, char *err, size_t errlen)
{
	CUevent start = NULL, dst_done = NULL, end = NULL;
	int ret = 0;

	CU(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuEventCreate(&start, CU_EVENT_DEFAULT), "Unable to create an event");
	CU_OUT(rn->cu.cuEventCreate(&end, CU_EVENT_DEFAULT), "Unable to create an event");
	CU_OUT(rn->cu.cuCtxSetCurrent(dg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuEventCreate(&dst_done, CU_EVENT_DEFAULT), "Unable to create an event");
	CU_OUT(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuEventRecord(start, sg->stream), "Unable to record an event");
	CU_OUT(rn->cu.cuStreamWaitEvent(dg->stream, start, 0), "Unable to order the streams");
	for (int i = 0; i < iters; ++i) {
		CU_OUT(rn->cu.cuMemcpyPeerAsync(bf->b, dg->ctx, bf->a, sg->ctx, n, sg->stream), "Peer copy failed");
		CU_OUT(rn->cu.cuMemcpyPeerAsync(bf->c, sg->ctx, bf->d, dg->ctx, n, dg->stream), "Peer copy failed");
	}
	CU_OUT(rn->cu.cuEventRecord(dst_done, dg->stream), "Unable to record an event");
	CU_OUT(rn->cu.cuStreamWaitEvent(sg->stream, dst_done, 0), "Unable to order the streams");
	CU_OUT(rn->cu.cuEventRecord(end, sg->stream), "Unable to record an event");
	CU_OUT(rn->cu.cuEventSynchronize(end), "Peer copies did not complete");
	CU_OUT(rn->cu.cuEventElapsedTime(ms, start, end), "Unable to read the event timer");
out:
	if (start)
		rn->cu.cuEventDestroy_v2(start);
	if (end)
		rn->cu.cuEventDestroy_v2(end);
	if (dst_done)
		rn->cu.cuEventDestroy_v2(dst_done);
	return ret;
}

static double gbps(size_t bytes, int iters, float ms)
{
	return ms > 0 ? (double)bytes * iters / (ms * 1e-3) / 1e9 : 0;
}

static int run_pair(struct nvs_p2p_run *rn, int s, int d, bool on, struct nvs_p2p_result *res, char *err, size_t errlen)
{
	struct nvs_p2p_gpu *sg = &rn->g[s], *dg = &rn->g[d];
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
	/* destinations start as the inverse, so a copy that did not happen shows */
	CU_OUT(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuMemcpyHtoD_v2(bf.a, rn->pattern, n), "Unable to fill the source");
	CU_OUT(rn->cu.cuMemcpyHtoD_v2(bf.c, rn->check, n), "Unable to fill the copy-back buffer");
	CU_OUT(rn->cu.cuCtxSetCurrent(dg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuMemcpyHtoD_v2(bf.b, rn->check, n), "Unable to fill the destination");
	CU_OUT(rn->cu.cuMemcpyPeer(bf.b, dg->ctx, bf.a, sg->ctx, n), "Peer copy failed");
	CU_OUT(rn->cu.cuMemcpyPeer(bf.c, sg->ctx, bf.b, dg->ctx, n), "Peer copy back failed");
	CU_OUT(rn->cu.cuCtxSynchronize(), "Peer copies did not complete");
	CU_OUT(rn->cu.cuMemcpyDtoH_v2(rn->check, bf.b, n), "Unable to read the destination back");
	res->bad_fwd = count_bad(rn->pattern, rn->check, n, &res->first_fwd);
	CU_OUT(rn->cu.cuCtxSetCurrent(sg->ctx), "Unable to select a context");
	CU_OUT(rn->cu.cuMemcpyDtoH_v2(rn->check, bf.c, n), "Unable to read the copy back");
	res->bad_back = count_bad(rn->pattern, rn->check, n, &res->first_back);

	ret = time_copies(rn, sg, dg, bf.b, bf.a, n, rn->o.iters, &ms, err, errlen);
	if (ret)
		goto out;
	res->uni_gbps = gbps(n, rn->o.iters, ms);
	ret = time_bidir(rn, sg, dg, &bf, n, rn->o.iters, &ms, err, errlen);
	if (ret)
		goto out;
	res->bi_gbps = gbps(2 * n, rn->o.iters, ms);
	ret = time_copies(rn, sg, dg, bf.b, bf.a, NVS_P2P_LAT_BYTES, lat_iters, &ms, err, errlen);
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
static int run_local(struct nvs_p2p_run *rn, int i, char *err, size_t errlen)
{
	struct nvs_p2p_gpu *g = &rn->g[i];
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

static bool relevant(const struct nvs_p2p_run *rn, const struct nvs_finding *f)
{
	for (int i = 0; i < rn->n; ++i) {
		const struct nvs_pci_dev *d = nvs_pci_find(rn->pci, rn->g[i].busid);
		int guard = 64;

		for (; d && guard--; d = d->parent >= 0 ? &rn->pci->devs[d->parent] : NULL)
			if (strstr(f->where, d->bdf))
				return true;
	}
	return false;
}

void nvs_p2p_origin_init(struct nvs_p2p_origin *o, struct nvs_nccl_log *log, const char *log_host)
{
	memset(o, 0, sizeof(*o));
	o->node_gpus = -1;
	/* all of it: glibc refuses (ENAMETOOLONG) a buffer without room for the NUL */
	if (gethostname(o->node, sizeof(o->node)))
		o->node[0] = 0;
	o->node[sizeof(o->node) - 1] = 0;
	o->log_host = log_host;
	o->want = log_host ? log_host : o->node;
	log->only_host = o->want;
}

int nvs_p2p_origin_host(struct nvs_p2p_origin *o, const struct nvs_nccl_log *log, const char *path, char *err,
			size_t errlen)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	const char *node = o->node[0] ? o->node : "its name is unknown: gethostname failed";
	const char *first = log->hosts.n ? log->hosts.v[0].host : "";
	size_t len = 0, shown = 0;

	o->hosts = log->hosts.n;
	o->other_lines = log->other_lines;
	for (size_t i = 0; i < log->hosts.n; ++i) {
		const char *h = log->hosts.v[i].host;

		if (!o->used[0] && nvs_nccl_host_match(h, o->want))
			snprintf(o->used, sizeof(o->used), "%s", h);
		if (len + strlen(h) + 24 >= sizeof(o->host_list))
			continue;
		len += snprintf(o->host_list + len, sizeof(o->host_list) - len, "%s%s", len ? ", " : "", h);
		shown++;
	}
	if (shown < log->hosts.n)
		snprintf(o->host_list + len, sizeof(o->host_list) - len, " and %zu more", log->hosts.n - shown);
	o->host_checked = o->used[0];
	/*
	 * A log whose lines name no host is taken as it is (the caller says
	 * so), unless --log-host names one: that cannot be checked, and taking
	 * the name on trust would say the log is that host's.
	 */
	if (!log->hosts.n && o->log_host) {
		snprintf(err, errlen,
			 "`%.300s' carries no host names (its lines have no \"host:pid:tid [dev]\" prefix), so --log-host %.64s cannot be checked against it: drop --log-host to judge the log as it is, its host unchecked",
			 name, o->log_host);
		return -EXDEV;
	}
	if (!log->hosts.n || o->host_checked)
		return 0;
	if (o->log_host)
		snprintf(err, errlen,
			 "`%.300s' has no lines of %.64s (--log-host): the log names %zu host(s), %s; pass --log-host %s to read that host's lines, or run the check on the host the log is from",
			 name, o->log_host, log->hosts.n, o->host_list, first);
	else if (log->hosts.n == 1)
		snprintf(err, errlen,
			 "`%.300s' is an NCCL log from %s, not from this node (%s): its P2P findings are %s's. Run the check on %s, or pass --log-host %s to read it here anyway",
			 name, first, node, first, first, first);
	else
		snprintf(err, errlen,
			 "`%.300s' is an NCCL log from %zu hosts (%s), none of them this node (%s): its P2P findings are theirs. Run the check on one of them, or pass --log-host HOST (e.g. --log-host %s) to read that host's lines here anyway",
			 name, log->hosts.n, o->host_list, node, first);
	return -EXDEV;
}

void nvs_p2p_origin_gpus(struct nvs_p2p_origin *o, const struct nvs_nccl_log *log, const struct nvs_pci *pci)
{
	int n = 0;

	o->log_gpus = nvs_nccl_gpus_named(log);
	o->node_gpus = -1;
	o->node_source[0] = 0;
	if (pci) {
		/* NVIDIA display and 3D controllers, as `topo' lists them */
		for (size_t i = 0; i < pci->n; ++i)
			n += pci->devs[i].role == NVS_ROLE_GPU && pci->devs[i].vendor == 0x10de;
		snprintf(o->node_source, sizeof(o->node_source), "%s", pci->source);
		/* none: a container or a VM that hides them, not a node without GPUs that ran CUDA */
		if (n)
			o->node_gpus = n;
	}
	o->gpu_mismatch = o->node_gpus > 0 && o->log_gpus > (size_t)o->node_gpus;
}

int nvs_p2p_judge(struct nvs_p2p_run *rn, const struct nvs_nccl_log *nccl, const struct nvs_p2p_origin *origin)
{
	struct nvs_ladder *l = &rn->ladder;
	int pairs = 0, no_access = 0, p2p_ran = 0, bad = 0;
	double worst = 0, theory = 0;
	char first_bad[200] = "";
	size_t warns = 0;
	const char *first_warn = NULL;

	for (int a = 0; a < rn->n; ++a) {
		if (rn->g[a].used && !rn->g[a].local_ok) {
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
				const struct nvs_p2p_result *r = &rn->r[on][a][b];

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
					if (rn->pci) {
						da = nvs_pci_find(rn->pci, rn->g[a].busid);
						db = nvs_pci_find(rn->pci, rn->g[b].busid);
					}
					if (da && db) {
						double ta = path_gbps(rn->pci, da), tb = path_gbps(rn->pci, db);

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

	if (rn->pci) {
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
		return bad;
	}
	if (no_access)
		nvs_ladder_set(l, 1, NVS_LADDER_FAIL,
			       "%d of %d ordered pairs report no peer access (cuDeviceCanAccessPeer = 0: driver without P2P support, or the topology blocks it)",
			       no_access, pairs);
	else if (!rn->pci)
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

	if (nccl) {
		char why[384], where[256];

		bool met = nvs_nccl_expect_p2p(nccl, false, why, sizeof(why), where, sizeof(where));

		if (!nccl->nccl_lines)
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL, "the NCCL log has no NCCL INFO lines (run with NCCL_DEBUG=INFO)");
		else if (origin && origin->gpu_mismatch)
			/* whatever it shows, it shows another machine */
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL,
				       "the log names %zu GPUs%s%.64s, this node has %d NVIDIA GPU(s) (PCI facts: %.60s): it is not from this node's current hardware (the log alone: %.100s)",
				       origin->log_gpus, origin->used[0] ? " on " : "", origin->used, origin->node_gpus,
				       origin->node_source, why);
		else if (met)
			nvs_ladder_set(l, 3, NVS_LADDER_PASS, "%s", why);
		else
			nvs_ladder_set(l, 3, NVS_LADDER_FAIL, "%s%s%.200s", why, where[0] ? "; at " : "", where);
	} else {
		nvs_ladder_set(l, 3, NVS_LADDER_NOT_RUN,
			       "give --nccl-log FILE (output of a run with NCCL_DEBUG=INFO, e.g. nccl-tests)");
	}
	if (p2p_ran)
		nvs_ladder_bandwidth(l, worst, theory, rn->o.min_eff);
	else
		nvs_ladder_set(l, 4, NVS_LADDER_FAIL, "no peer-to-peer bandwidth to measure");
	return bad;
}

/* CUDA, the GPUs and the entry points: no context yet. */
static int setup(struct nvs_p2p_run *rn, char *err, size_t errlen)
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
	if (n > NVS_P2P_MAX_GPUS)
		n = NVS_P2P_MAX_GPUS;
	/* Every entry point the measurement uses, checked before any is called. */
	{
		const struct { const void *fn; const char *name; } need[] = {
#define NEED(fn) { (const void *)rn->cu.fn, #fn }
			NEED(cuDevicePrimaryCtxRetain), NEED(cuCtxSetCurrent), NEED(cuMemAlloc_v2),
			NEED(cuMemFree_v2), NEED(cuMemcpyHtoD_v2), NEED(cuMemcpyDtoH_v2), NEED(cuMemcpyDtoD_v2),
			NEED(cuMemcpyPeer), NEED(cuMemcpyPeerAsync), NEED(cuStreamCreate), NEED(cuStreamDestroy_v2),
			NEED(cuEventCreate), NEED(cuEventRecord), NEED(cuEventSynchronize), NEED(cuEventElapsedTime),
			NEED(cuEventDestroy_v2), NEED(cuStreamWaitEvent), NEED(cuCtxSynchronize),
			NEED(cuDeviceCanAccessPeer), NEED(cuCtxEnablePeerAccess), NEED(cuCtxDisablePeerAccess),
#undef NEED
		};

		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); ++i) {
			if (need[i].fn)
				continue;
			snprintf(err, errlen, "%.300s lacks %s: the driver is too old or this is not libcuda",
				 rn->cu.path, need[i].name);
			return -ENOEXEC;
		}
	}
	rn->n = n;
	for (int i = 0; i < n; ++i) {
		struct nvs_p2p_gpu *g = &rn->g[i];

		CU(rn->cu.cuDeviceGet(&g->dev, i), "Unable to get a CUDA device");
		if (!rn->cu.cuDeviceGetName || rn->cu.cuDeviceGetName(g->name, sizeof(g->name), g->dev))
			snprintf(g->name, sizeof(g->name), "CUDA device %d", i);
		if (!rn->cu.cuDeviceGetPCIBusId || rn->cu.cuDeviceGetPCIBusId(g->busid, sizeof(g->busid), g->dev))
			snprintf(g->busid, sizeof(g->busid), "unknown");
		for (char *c = g->busid; *c; ++c)
			*c = (char)tolower((unsigned char)*c);
		if (rn->cu.cuDeviceTotalMem_v2)
			rn->cu.cuDeviceTotalMem_v2(&g->mem, g->dev);
	}
	for (int a = 0; a < n; ++a)
		for (int b = 0; b < n; ++b)
			if (a != b)
				CU(rn->cu.cuDeviceCanAccessPeer(&rn->can[a][b], rn->g[a].dev, rn->g[b].dev),
				   "Unable to query peer access");
	return 0;
}

/*
 * A context and a stream on each GPU that a wanted pair names, and only
 * those: a GPU that a job holds, outside --pairs, must not stop the pairs
 * asked for (admin review M2).
 */
static int open_contexts(struct nvs_p2p_run *rn, char *err, size_t errlen)
{
	for (int i = 0; i < rn->n; ++i) {
		struct nvs_p2p_gpu *g = &rn->g[i];
		char what[200];
		int mode = -1;
		CUresult r;

		if (!g->used)
			continue;
		r = rn->cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev);
		if (r != CUDA_SUCCESS) {
			int ret;

			/* the GPU by number and bus id, as doctor names it (admin review L7) */
			if (r == CUDA_ERROR_DEVICE_UNAVAILABLE && rn->cu.cuDeviceGetAttribute &&
			    !rn->cu.cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, g->dev) &&
			    mode == CU_COMPUTEMODE_PROHIBITED) {
				snprintf(err, errlen,
					 "Unable to create a CUDA context on GPU %d (%s, %s): its compute mode is PROHIBITED, so no process may use it; `nvidia-smi -i %s -c DEFAULT' allows it again%s",
					 i, g->name, g->busid, g->busid,
					 rn->n > 1 ? ", or leave it out with --pairs" : "");
				return -EPERM;
			}
			snprintf(what, sizeof(what), "Unable to create a CUDA context on GPU %d (%s, %s)", i, g->name,
				 g->busid);
			ret = cu_fail(rn, r, what, err, errlen);
			/* a job holds it: nvs_p2p_open's -EBUSY, NVS_EX_BUSY for doctor --full */
			return nvs_cuda_held(&rn->cu, r, g->dev) ? -EBUSY : ret;
		}
		CU(rn->cu.cuCtxSetCurrent(g->ctx), "Unable to select a context");
		CU(rn->cu.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "Unable to create a stream");
	}
	return 0;
}

static void teardown(struct nvs_p2p_run *rn)
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

int nvs_p2p_parse_pairs(const char *s, struct nvs_p2p_pairs *p)
{
	char buf[512], *tok, *save = NULL;

	memset(p, 0, sizeof(*p));
	if (!s || !strcmp(s, "all")) {
		p->all = true;
		return 0;
	}
	/* An empty list (an unset $PAIRS) would test nothing and pass. */
	if (!*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end, *dash = strchr(tok, '-');
		long a, b;

		/* strtol with range checks: sscanf's %d wraps 4294967297 to 1 */
		if (p->n == NVS_P2P_MAX_GPUS * NVS_P2P_MAX_GPUS || !dash || !isdigit((unsigned char)tok[0]) ||
		    !isdigit((unsigned char)dash[1]))
			return -EINVAL;
		errno = 0;
		a = strtol(tok, &end, 10);
		if (errno || end != dash)
			return -EINVAL;
		b = strtol(dash + 1, &end, 10);
		if (errno || *end || a == b || a >= NVS_P2P_MAX_GPUS || b >= NVS_P2P_MAX_GPUS)
			return -EINVAL;
		p->src[p->n] = a;
		p->dst[p->n++] = b;
	}
	return p->n ? 0 : -EINVAL;
}

int nvs_p2p_open(struct nvs_p2p_run *rn, const struct nvs_p2p_opts *o, const struct nvs_p2p_pairs *pairs,
		 const struct nvs_pci *pci, char *err, size_t errlen)
{
	int ret;

	memset(rn, 0, sizeof(*rn));
	rn->o = *o;
	nvs_ladder_init(&rn->ladder);
	ret = nvs_cuda_load(&rn->cu, o->lib, err, errlen);
	if (ret)
		return ret;
	if (rn->cu.cuDriverGetVersion)
		rn->cu.cuDriverGetVersion(&rn->driver_version);
	ret = setup(rn, err, errlen);
	if (ret)
		return ret;
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b)
			rn->want[a][b] = pairs->all && a != b;
	for (int i = 0; i < pairs->n; ++i) {
		if (pairs->src[i] >= rn->n || pairs->dst[i] >= rn->n) {
			snprintf(err, errlen, "--pairs names GPU %d, but CUDA shows %d GPU(s) (0 to %d)",
				 pairs->src[i] >= rn->n ? pairs->src[i] : pairs->dst[i], rn->n, rn->n - 1);
			return -ERANGE;
		}
		rn->want[pairs->src[i]][pairs->dst[i]] = true;
	}
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b)
			if (rn->want[a][b])
				rn->g[a].used = rn->g[b].used = true;
	if (rn->n == 1)
		rn->g[0].used = true;	/* one GPU: its local copy is the test */
	ret = open_contexts(rn, err, errlen);
	if (ret)
		return ret;
	/* PCI facts are optional: without them levels 1 and 4 say so. */
	if (pci) {
		if (nvs_topo_findings(pci, &rn->findings))
			return -ENOMEM;
		rn->pci = pci;
		for (int i = 0; i < rn->n; ++i) {
			const struct nvs_pci_dev *d = nvs_pci_find(pci, rn->g[i].busid);

			if (d)
				rn->g[i].link_gbps = path_gbps(pci, d);
		}
	}
	return 0;
}

int nvs_p2p_measure(struct nvs_p2p_run *rn)
{
	char err[512];

	rn->pattern = malloc(rn->o.size);
	rn->check = malloc(rn->o.size);
	if (!rn->pattern || !rn->check)
		return -ENOMEM;
	for (int i = 0; i < rn->n; ++i)
		if (rn->g[i].used)
			run_local(rn, i, err, sizeof(err));
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b) {
			if (!rn->want[a][b])
				continue;
			if (rn->can[a][b])
				run_pair(rn, a, b, true, &rn->r[1][a][b], err, sizeof(err));
			run_pair(rn, a, b, false, &rn->r[0][a][b], err, sizeof(err));
		}
	return 0;
}

void nvs_p2p_close(struct nvs_p2p_run *rn)
{
	teardown(rn);
	free(rn->pattern);
	free(rn->check);
	rn->pattern = rn->check = NULL;
	nvs_findings_free(&rn->findings);
	nvs_cuda_unload(&rn->cu);
}
