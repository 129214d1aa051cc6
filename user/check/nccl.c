// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NCCL log reader behind `nccl-check', `p2p' level 3 and `doctor': did
 * NCCL really use P2P, GPUDirect RDMA and DMA-BUF? Reads NCCL_DEBUG=INFO
 * output, tolerating interleaved multi-node logs (host:pid:tid [dev]
 * prefixes) and logs cut short. Nothing here prints.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/nccl.h"

static const char *const tnames[NVS_NCCL__COUNT] = {
	[NVS_NCCL_P2P_DIRECT] = "P2P/direct pointer",
	[NVS_NCCL_P2P_IPC] = "P2P/IPC",
	[NVS_NCCL_P2P_CUMEM] = "P2P/CUMEM",
	[NVS_NCCL_P2P_OTHER] = "P2P (other)",
	[NVS_NCCL_SHM] = "SHM",
	[NVS_NCCL_NET_IB_GDR] = "NET/IB with GDRDMA",
	[NVS_NCCL_NET_IB] = "NET/IB without GDR",
	[NVS_NCCL_NET_SOCKET] = "NET/Socket",
	[NVS_NCCL_NET_OTHER] = "NET (other)",
	[NVS_NCCL_OTHER] = "other",
};

const char *nvs_nccl_transport_str(enum nvs_nccl_transport t)
{
	return t < NVS_NCCL__COUNT ? tnames[t] : "other";
}

bool nvs_nccl_is_p2p(enum nvs_nccl_transport t)
{
	return t <= NVS_NCCL_P2P_OTHER;
}

bool nvs_nccl_is_net(enum nvs_nccl_transport t)
{
	return t >= NVS_NCCL_NET_IB_GDR && t <= NVS_NCCL_NET_OTHER;
}

/* Log text that explains a fallback, and what it means for the admin. */
static const struct {
	const char *match;
	const char *explain;
} explain[] = {
	{ "No device found",
	  "NCCL found no usable InfiniBand/RoCE device and falls back to TCP sockets: check `ibv_devinfo', the port state and NCCL_IB_HCA" },
	{ "Using network Socket",
	  "Inter-node traffic goes over TCP sockets: no RDMA, so no GPUDirect RDMA" },
	{ "GPU Direct RDMA Disabled",
	  "NCCL stages network traffic through host memory: the GPU-memory registration path (dma-buf or nvidia-peermem) is missing, or the GPU-NIC distance exceeds NCCL_NET_GDR_LEVEL; see `nvsidecar topo' and `nvsidecar libcuda status'" },
	{ "P2P is disabled",
	  "NCCL will not use peer access between these GPUs (beyond NCCL_P2P_LEVEL, or the driver reports no P2P): traffic goes through host shared memory" },
	{ "P2P disabled",
	  "NCCL will not use peer access between these GPUs: traffic goes through host shared memory" },
	{ "NCCL_P2P_DISABLE set",
	  "Peer-to-peer was switched off through the environment" },
	{ "NCCL_P2P_LEVEL set",
	  "The P2P distance limit was forced; SYS lets NCCL use P2P across sockets, which can be slower than its default choice" },
	{ "NCCL_IB_DISABLE set",
	  "RDMA was switched off through the environment: NCCL uses sockets" },
	{ "NCCL_NET_GDR_LEVEL set",
	  "The GPU-NIC distance allowed for GPUDirect RDMA was forced" },
	{ "NCCL_DMABUF_ENABLE set",
	  "DMA-BUF registration was forced on or off through the environment" },
	{ "NCCL_SHM_DISABLE set",
	  "Shared memory was switched off: without P2P, intra-node traffic uses the network" },
	{ "Cuda failure",
	  "A CUDA call failed inside NCCL; check `nvsidecar p2p' for the same pair" },
	{ "peer access",
	  "CUDA refused peer access: the driver lacks P2P support for these GPUs, or ACS/IOMMU blocks it (`nvsidecar topo')" },
	{ "DMA-BUF is not",
	  "This GPU cannot export dma-bufs (GeForce libcuda gate): NCCL cannot register GPU memory through dma-buf" },
	{ "ibv_reg_dmabuf_mr",
	  "Registering a dma-buf memory region failed: the NIC driver, kernel or GPU driver lacks dma-buf support" },
};

static const char *explain_for(const char *msg)
{
	for (size_t i = 0; i < sizeof(explain) / sizeof(explain[0]); ++i)
		if (strstr(msg, explain[i].match))
			return explain[i].explain;
	return NULL;
}

void nvs_nccl_init(struct nvs_nccl_log *log)
{
	memset(log, 0, sizeof(*log));
	log->all_direct_p2p = -1;
}

void nvs_nccl_free(struct nvs_nccl_log *log)
{
	free(log->conns);
	free(log->notes);
	free(log->dmabuf);
	nvs_nccl_init(log);
}

static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	void *nv;

	if (n < *cap)
		return v;
	nv = realloc(v, (*cap ? *cap * 2 : 16) * size);
	if (nv)
		*cap = *cap ? *cap * 2 : 16;
	return nv;
}

static enum nvs_nccl_transport classify(const char *via, bool *gdr)
{
	*gdr = strstr(via, "GDRDMA") || strstr(via, "/GDR");
	if (!strncmp(via, "P2P/direct pointer", 18))
		return NVS_NCCL_P2P_DIRECT;
	if (!strncmp(via, "P2P/IPC", 7))
		return NVS_NCCL_P2P_IPC;
	if (!strncmp(via, "P2P/CUMEM", 9))
		return NVS_NCCL_P2P_CUMEM;
	if (!strncmp(via, "P2P", 3))
		return NVS_NCCL_P2P_OTHER;
	if (!strncmp(via, "SHM", 3))
		return NVS_NCCL_SHM;
	if (!strncmp(via, "NET/IB", 6))
		return *gdr ? NVS_NCCL_NET_IB_GDR : NVS_NCCL_NET_IB;
	if (!strncmp(via, "NET/Socket", 10))
		return NVS_NCCL_NET_SOCKET;
	if (!strncmp(via, "NET", 3))
		return NVS_NCCL_NET_OTHER;
	return NVS_NCCL_OTHER;
}

/* "host:pid:tid [dev] " before the NCCL marker; either part may be absent. */
static void parse_prefix(const char *line, const char *end, char *host, size_t hlen, int *pid, int *dev)
{
	const char *b = end, *tok;
	char buf[128];
	size_t n;

	host[0] = 0;
	*pid = *dev = -1;
	while (b > line && isspace((unsigned char)b[-1]))
		b--;
	if (b > line && b[-1] == ']') {
		const char *o = b - 1;

		while (o > line && o[-1] != '[')
			o--;
		if (o > line) {
			*dev = atoi(o);
			b = o - 1;
		}
	}
	while (b > line && isspace((unsigned char)b[-1]))
		b--;
	tok = b;
	while (tok > line && !isspace((unsigned char)tok[-1]))
		tok--;
	n = (size_t)(b - tok);
	if (!n || n >= sizeof(buf))
		return;
	memcpy(buf, tok, n);
	buf[n] = 0;
	/* host:pid:tid; host names have no colons */
	{
		char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (c1 && c2) {
			*c1 = 0;
			snprintf(host, hlen, "%.63s", buf);
			*pid = atoi(c1 + 1);
		}
	}
}

static int add_note(struct nvs_nccl_log *log, bool warn, const char *host, int dev, const char *msg,
		    const char *why)
{
	struct nvs_nccl_note *n;

	/* the same message from every rank says nothing new */
	for (size_t i = 0; i < log->n_notes; ++i)
		if (!strcmp(log->notes[i].text, msg) && !strcmp(log->notes[i].host, host))
			return 0;
	log->notes = grow(log->notes, &log->cap_notes, log->n_notes, sizeof(*log->notes));
	if (!log->notes)
		return -ENOMEM;
	n = &log->notes[log->n_notes++];
	n->warn = warn;
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->dev = dev;
	snprintf(n->text, sizeof(n->text), "%s", msg);
	n->explain = why;
	return 0;
}

static int parse_conn(struct nvs_nccl_log *log, const char *msg, const char *host, int pid, int dev)
{
	struct nvs_nccl_conn c = { 0 };
	const char *p = msg, *via;
	int used = 0, sub;

	if (sscanf(p, "Channel %d/%d :%n", &c.channel, &sub, &used) == 2 && used) {
		snprintf(c.kind, sizeof(c.kind), "Channel");
	} else if (used = 0, sscanf(p, "Channel %d :%n", &c.channel, &used) == 1 && used) {
		snprintf(c.kind, sizeof(c.kind), "Channel");
	} else if (used = 0, sscanf(p, "Ring %d :%n", &c.channel, &used) == 1 && used) {
		snprintf(c.kind, sizeof(c.kind), "Ring");
	} else {
		return 1;
	}
	p += used;
	/* "0[0] -> 1[1]" (cudaDev or busId inside the brackets) */
	if (sscanf(p, " %d[%*[^]]] -> %d[%*[^]]]", &c.from_rank, &c.to_rank) != 2)
		return 1;
	via = strstr(p, " via ");
	if (!via)
		return 1;
	if (strstr(p, "[send]"))
		snprintf(c.dir, sizeof(c.dir), "send");
	else if (strstr(p, "[receive]"))
		snprintf(c.dir, sizeof(c.dir), "receive");
	via += 5;
	snprintf(c.via, sizeof(c.via), "%.*s", (int)strcspn(via, " \t"), via);
	/* "P2P/direct pointer" has a space in it */
	if (!strncmp(via, "P2P/direct pointer", 18))
		snprintf(c.via, sizeof(c.via), "%.*s", (int)strcspn(via + 11, " \t") + 11, via);
	c.t = classify(c.via, &c.gdr);
	snprintf(c.host, sizeof(c.host), "%s", host);
	c.pid = pid;
	c.dev = dev;
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *o = &log->conns[i];

		if (o->channel == c.channel && o->from_rank == c.from_rank && o->to_rank == c.to_rank &&
		    !strcmp(o->dir, c.dir) && !strcmp(o->via, c.via) && !strcmp(o->kind, c.kind))
			return 0;
	}
	log->conns = grow(log->conns, &log->cap_conns, log->n_conns, sizeof(*log->conns));
	if (!log->conns)
		return -ENOMEM;
	log->conns[log->n_conns++] = c;
	return 0;
}

static int parse_msg(struct nvs_nccl_log *log, bool warn, const char *msg, const char *host, int pid, int dev)
{
	const char *s;
	int d, ret;

	if (warn)
		return add_note(log, true, host, dev, msg, explain_for(msg));
	if ((s = strstr(msg, "NCCL version "))) {
		snprintf(log->version, sizeof(log->version), "%.*s", (int)strcspn(s + 13, " \t"), s + 13);
		return 0;
	}
	if (sscanf(msg, "DMA-BUF is available on GPU device %d", &d) == 1) {
		for (size_t i = 0; i < log->n_dmabuf; ++i)
			if (log->dmabuf[i].dev == d && !strcmp(log->dmabuf[i].host, host))
				return 0;
		log->dmabuf = grow(log->dmabuf, &log->cap_dmabuf, log->n_dmabuf, sizeof(*log->dmabuf));
		if (!log->dmabuf)
			return -ENOMEM;
		snprintf(log->dmabuf[log->n_dmabuf].host, sizeof(log->dmabuf[0].host), "%s", host);
		log->dmabuf[log->n_dmabuf++].dev = d;
		return 0;
	}
	if ((s = strstr(msg, "isAllDirectP2p "))) {
		log->all_direct_p2p = atoi(s + 15);
		return 0;
	}
	if (strstr(msg, "Init COMPLETE")) {
		log->init_complete++;
		return 0;
	}
	if (strstr(msg, "Connected all rings")) {
		log->connected = true;
		return 0;
	}
	ret = parse_conn(log, msg, host, pid, dev);
	if (ret <= 0)
		return ret;
	if (explain_for(msg) || strstr(msg, "set by environment to"))
		return add_note(log, false, host, dev, msg, explain_for(msg));
	return 0;
}

int nvs_nccl_parse(struct nvs_nccl_log *log, FILE *f, const char *name, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	while ((n = getline(&line, &cap, f)) > 0) {
		const char *mark = NULL, *m;
		char host[64];
		int pid, dev;
		bool warn;

		log->lines++;
		if (memchr(line, 0, (size_t)n)) {
			snprintf(err, errlen,
				 "`%s' line %zu holds binary data: expected the text output of a program run with NCCL_DEBUG=INFO",
				 name, log->lines);
			ret = -EINVAL;
			break;
		}
		/* a last line without its end may be cut mid-word: never trust it */
		log->cut_line = line[n - 1] != '\n';
		if (log->cut_line)
			break;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		/* interleaved writers: the last message on the line is the whole one */
		for (m = line; (m = strstr(m, "NCCL ")); m += 5)
			if (!strncmp(m + 5, "INFO ", 5) || !strncmp(m + 5, "WARN ", 5)) {
				if (mark)
					log->interleaved++;
				mark = m;
			}
		if (!mark)
			continue;
		log->nccl_lines++;
		warn = mark[5] == 'W';
		parse_prefix(line, mark, host, sizeof(host), &pid, &dev);
		ret = parse_msg(log, warn, mark + 10, host, pid, dev);
		if (ret) {
			snprintf(err, errlen, "Unable to allocate memory");
			break;
		}
	}
	if (!ret && ferror(f)) {
		ret = -errno;
		snprintf(err, errlen, "Unable to read `%s': %s", name, strerror(errno));
	}
	free(line);
	return ret;
}

static size_t count(const struct nvs_nccl_log *log, bool (*pred)(enum nvs_nccl_transport))
{
	size_t n = 0;

	for (size_t i = 0; i < log->n_conns; ++i)
		n += pred(log->conns[i].t);
	return n;
}

static bool incomplete(const struct nvs_nccl_log *log, char *why, size_t len)
{
	if (log->init_complete || log->connected)
		return false;
	snprintf(why, len, "the log ends before NCCL finished connecting (no `Init COMPLETE' or `Connected all rings' line)%s",
		 log->cut_line ? " and its last line is cut" : "");
	return true;
}

static bool intra(enum nvs_nccl_transport t)
{
	return !nvs_nccl_is_net(t);
}

bool nvs_nccl_expect_p2p(const struct nvs_nccl_log *log, bool direct_only, char *why, size_t len)
{
	size_t all = count(log, intra), p2p = 0, direct = 0;
	if (incomplete(log, why, len))
		return false;

	for (size_t i = 0; i < log->n_conns; ++i) {
		p2p += nvs_nccl_is_p2p(log->conns[i].t);
		direct += log->conns[i].t == NVS_NCCL_P2P_DIRECT;
	}
	if (!all) {
		snprintf(why, len, "no intra-node connection lines in the log (one GPU per node, or init output missing)");
		return false;
	}
	if (p2p < all) {
		snprintf(why, len, "%zu of %zu intra-node connections do not use P2P (SHM or other)", all - p2p, all);
		return false;
	}
	if (direct_only && direct < all) {
		snprintf(why, len, "%zu of %zu intra-node connections use P2P/IPC or P2P/CUMEM, not P2P/direct pointer",
			 all - direct, all);
		return false;
	}
	snprintf(why, len, "all %zu intra-node connections use %s", all, direct_only ? "P2P/direct pointer" : "P2P");
	return true;
}

bool nvs_nccl_expect_gdr(const struct nvs_nccl_log *log, char *why, size_t len)
{
	size_t net = count(log, nvs_nccl_is_net), gdr = 0;
	if (incomplete(log, why, len))
		return false;

	for (size_t i = 0; i < log->n_conns; ++i)
		gdr += log->conns[i].t == NVS_NCCL_NET_IB_GDR;
	if (!net) {
		snprintf(why, len, "no network connection lines in the log (single node?)");
		return false;
	}
	if (gdr < net) {
		snprintf(why, len, "%zu of %zu network connections do not use NET/IB with GDRDMA", net - gdr, net);
		return false;
	}
	snprintf(why, len, "all %zu network connections use GPUDirect RDMA", net);
	return true;
}

bool nvs_nccl_expect_dmabuf(const struct nvs_nccl_log *log, char *why, size_t len)
{
	if (incomplete(log, why, len))
		return false;
	/* every GPU that talks to the network needs it, not just one */
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];
		bool found = false;

		if (!nvs_nccl_is_net(c->t) || c->dev < 0)
			continue;
		for (size_t k = 0; k < log->n_dmabuf; ++k)
			found |= log->dmabuf[k].dev == c->dev && !strcmp(log->dmabuf[k].host, c->host);
		if (!found) {
			snprintf(why, len, "no `DMA-BUF is available' line for GPU device %d on %s, which uses the network",
				 c->dev, c->host[0] ? c->host : "(unnamed host)");
			return false;
		}
	}
	if (!log->n_dmabuf) {
		snprintf(why, len, "no `DMA-BUF is available on GPU device N' line in the log");
		return false;
	}
	snprintf(why, len, "DMA-BUF available on %zu GPU(s)", log->n_dmabuf);
	return true;
}

static int cmp_conn(const void *a, const void *b)
{
	const struct nvs_nccl_conn *x = a, *y = b;
	int r;

	if (x->from_rank != y->from_rank)
		return x->from_rank - y->from_rank;
	if (x->to_rank != y->to_rank)
		return x->to_rank - y->to_rank;
	r = strcmp(x->dir, y->dir);
	if (r)
		return r;
	r = strcmp(x->via, y->via);
	return r ? r : x->channel - y->channel;
}

void nvs_nccl_sort(struct nvs_nccl_log *log)
{
	qsort(log->conns, log->n_conns, sizeof(*log->conns), cmp_conn);
}
