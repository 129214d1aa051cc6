// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar nccl-check: did NCCL really use P2P, GPUDirect RDMA and
 * DMA-BUF? Reads NCCL_DEBUG=INFO output, tolerating interleaved multi-node
 * logs (host:pid:tid [dev] prefixes) and logs cut short.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "nccl.h"
#include "subcommands.h"

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

/* ---- the subcommand ---- */

enum { EXP_P2P = 1, EXP_GDR = 2, EXP_DMABUF = 4, EXP_DIRECT = 8 };

static int parse_expect(const char *s, unsigned int *exp)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "p2p"))
			*exp |= EXP_P2P;
		else if (!strcmp(tok, "direct"))
			*exp |= EXP_DIRECT;
		else if (!strcmp(tok, "gdr"))
			*exp |= EXP_GDR;
		else if (!strcmp(tok, "dmabuf"))
			*exp |= EXP_DMABUF;
		else
			return -EINVAL;
	}
	return *exp ? 0 : -EINVAL;
}

static void print_human(const struct nvs_nccl_log *log, bool color)
{
	const char *b = color ? "\033[1m" : "", *o = color ? "\033[0m" : "", *w = color ? "\033[33m" : "";
	size_t per[NVS_NCCL__COUNT] = { 0 };

	printf("%sNCCL%s %s, %zu NCCL lines of %zu, %zu connection(s), %zu rank(s) completed init\n", b, o,
	       log->version[0] ? log->version : "(version not logged)", log->nccl_lines, log->lines,
	       log->n_conns, log->init_complete);
	for (size_t i = 0; i < log->n_conns; ++i)
		per[log->conns[i].t]++;
	printf("\n%sTransports%s\n", b, o);
	for (int t = 0; t < NVS_NCCL__COUNT; ++t)
		if (per[t])
			printf("  %-20s %zu\n", nvs_nccl_transport_str(t), per[t]);
	if (!log->n_conns)
		printf("  none logged\n");

	printf("\n%sConnections%s (rank -> peer: channels, transport)\n", b, o);
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];
		bool seen = false;

		for (size_t k = 0; k < i && !seen; ++k) {
			const struct nvs_nccl_conn *p = &log->conns[k];

			seen = p->from_rank == c->from_rank && p->to_rank == c->to_rank &&
			       !strcmp(p->via, c->via) && !strcmp(p->dir, c->dir);
		}
		if (seen)
			continue;
		printf("  rank %d -> %d%s%s%s: %s", c->from_rank, c->to_rank, c->dir[0] ? " [" : "", c->dir,
		       c->dir[0] ? "]" : "", c->kind);
		for (size_t k = i, first = 1; k < log->n_conns; ++k) {
			const struct nvs_nccl_conn *p = &log->conns[k];

			if (p->from_rank == c->from_rank && p->to_rank == c->to_rank && !strcmp(p->via, c->via) &&
			    !strcmp(p->dir, c->dir)) {
				printf("%s%02d", first ? " " : ",", p->channel);
				first = 0;
			}
		}
		printf(" via %s%s%s%s\n", c->via, c->gdr ? " (GDR)" : "", c->host[0] ? " on " : "", c->host);
	}

	printf("\n%sDMA-BUF%s: ", b, o);
	if (!log->n_dmabuf)
		printf("not reported\n");
	for (size_t i = 0; i < log->n_dmabuf; ++i)
		printf("%sGPU %d%s%s%s", i ? ", " : "", log->dmabuf[i].dev, log->dmabuf[i].host[0] ? " on " : "",
		       log->dmabuf[i].host, i + 1 == log->n_dmabuf ? "\n" : "");
	if (log->all_direct_p2p >= 0)
		printf("P2P type check: isAllDirectP2p %d\n", log->all_direct_p2p);

	if (log->n_notes)
		printf("\n%sNotes%s\n", b, o);
	for (size_t i = 0; i < log->n_notes; ++i) {
		const struct nvs_nccl_note *n = &log->notes[i];

		printf("  %s%s%s%s%s: %s\n", n->warn ? w : "", n->warn ? "WARN" : "INFO", o,
		       n->host[0] ? " " : "", n->host, n->text);
		if (n->explain)
			printf("        %s\n", n->explain);
	}
	if (log->cut_line || (log->n_conns && !log->init_complete && !log->connected))
		printf("\n%sThe log looks truncated%s: %s\n", w, o,
		       log->cut_line ? "it ends in the middle of a line (ignored)" :
				       "no `Init COMPLETE' or `Connected all rings' line");
	if (log->interleaved)
		printf("%zu line(s) held several interleaved messages; only the last of each was read\n",
		       log->interleaved);
}

static void print_json(const struct nvs_nccl_log *log, unsigned int exp, const bool *ok, char (*why)[256])
{
	struct json j;
	static const char *const names[] = { "p2p", "gdr", "dmabuf", "direct" };

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "version", log->version[0] ? log->version : NULL);
	json_uint(&j, "lines", log->lines);
	json_uint(&j, "nccl_lines", log->nccl_lines);
	json_uint(&j, "init_complete", log->init_complete);
	json_bool(&j, "truncated", log->cut_line || (log->n_conns && !log->init_complete && !log->connected));
	json_uint(&j, "interleaved", log->interleaved);
	if (log->all_direct_p2p >= 0)
		json_int(&j, "all_direct_p2p", log->all_direct_p2p);
	json_obj_open(&j, "transports");
	for (int t = 0; t < NVS_NCCL__COUNT; ++t) {
		size_t n = 0;

		for (size_t i = 0; i < log->n_conns; ++i)
			n += log->conns[i].t == (enum nvs_nccl_transport)t;
		json_uint(&j, tnames[t], n);
	}
	json_obj_close(&j);
	json_arr_open(&j, "connections");
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];

		json_obj_open(&j, NULL);
		json_str(&j, "host", c->host[0] ? c->host : NULL);
		json_int(&j, "pid", c->pid);
		json_int(&j, "dev", c->dev);
		json_str(&j, "kind", c->kind);
		json_int(&j, "channel", c->channel);
		json_int(&j, "from_rank", c->from_rank);
		json_int(&j, "to_rank", c->to_rank);
		json_str(&j, "dir", c->dir[0] ? c->dir : NULL);
		json_str(&j, "via", c->via);
		json_str(&j, "transport", nvs_nccl_transport_str(c->t));
		json_bool(&j, "gdr", c->gdr);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "dmabuf");
	for (size_t i = 0; i < log->n_dmabuf; ++i) {
		json_obj_open(&j, NULL);
		json_str(&j, "host", log->dmabuf[i].host[0] ? log->dmabuf[i].host : NULL);
		json_int(&j, "dev", log->dmabuf[i].dev);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "notes");
	for (size_t i = 0; i < log->n_notes; ++i) {
		json_obj_open(&j, NULL);
		json_str(&j, "level", log->notes[i].warn ? "WARN" : "INFO");
		json_str(&j, "host", log->notes[i].host[0] ? log->notes[i].host : NULL);
		json_str(&j, "text", log->notes[i].text);
		json_str(&j, "explain", log->notes[i].explain);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_open(&j, "expect");
	for (int i = 0; i < 4; ++i) {
		if (!(exp & 1u << i))
			continue;
		json_obj_open(&j, names[i]);
		json_bool(&j, "ok", ok[i]);
		json_str(&j, "detail", why[i]);
		json_obj_close(&j);
	}
	json_obj_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--json] [--expect p2p,direct,gdr,dmabuf] LOG... | -\n"
		"\n"
		"Reads NCCL_DEBUG=INFO output (nccl-tests or any application; several files\n"
		"or interleaved multi-node logs are fine; - reads standard input) and reports\n"
		"the transport per rank and channel, DMA-BUF availability, GDR use, the NCCL\n"
		"version and the log lines that explain a fallback.\n"
		"\n"
		"  --expect LIST  check: p2p    every intra-node connection uses P2P\n"
		"                        direct every intra-node connection is P2P/direct pointer\n"
		"                        gdr    every network connection is NET/IB with GDRDMA\n"
		"                        dmabuf DMA-BUF is available on every GPU using the network\n"
		"  --json         JSON document\n"
		"\n"
		"Exit status: 0 read (and every expectation met), 1 an expectation failed,\n"
		"2 usage error, unreadable input or no NCCL lines in it.\n",
		PROG_NAME, prog);
}

int nccl_check_main(int argc, const char *argv[])
{
	struct nvs_nccl_log log;
	unsigned int exp = 0;
	bool json = false, ok[4] = { true, true, true, true }, all_ok = true;
	char err[512], why[4][256] = { "" };
	int nfiles = 0, ret = 2;

	nvs_nccl_init(&log);
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--expect") && i + 1 < argc) {
			if (parse_expect(argv[++i], &exp)) {
				fprintf(stderr, "Invalid --expect (use p2p, direct, gdr, dmabuf, comma separated): `%s'\n",
					argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "Invalid argument: `%s'\n", argv[i]);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	for (int i = 1; i < argc; ++i) {
		FILE *f;
		const char *name = argv[i];
		int r;

		if (!strcmp(name, "--expect")) {
			++i;
			continue;
		}
		if (name[0] == '-' && name[1])
			continue;
		nfiles++;
		f = strcmp(name, "-") ? fopen(name, "re") : stdin;
		if (!f) {
			fprintf(stderr, "Unable to open NCCL log `%s': %s\n", name, strerror(errno));
			goto cleanup;
		}
		r = nvs_nccl_parse(&log, f, strcmp(name, "-") ? name : "standard input", err, sizeof(err));
		if (f != stdin)
			fclose(f);
		if (r) {
			fprintf(stderr, "%s\n", err);
			goto cleanup;
		}
	}
	if (!nfiles) {
		usage(stderr, argv[0]);
		goto cleanup;
	}
	if (!log.nccl_lines) {
		fprintf(stderr,
			"No NCCL INFO or WARN lines in %zu line(s) of input: run the job with NCCL_DEBUG=INFO and pass its output\n",
			log.lines);
		goto cleanup;
	}
	qsort(log.conns, log.n_conns, sizeof(*log.conns), cmp_conn);
	if (exp & EXP_P2P)
		ok[0] = nvs_nccl_expect_p2p(&log, false, why[0], sizeof(why[0]));
	if (exp & EXP_GDR)
		ok[1] = nvs_nccl_expect_gdr(&log, why[1], sizeof(why[1]));
	if (exp & EXP_DMABUF)
		ok[2] = nvs_nccl_expect_dmabuf(&log, why[2], sizeof(why[2]));
	if (exp & EXP_DIRECT)
		ok[3] = nvs_nccl_expect_p2p(&log, true, why[3], sizeof(why[3]));
	for (int k = 0; k < 4; ++k)
		all_ok &= ok[k];

	if (json) {
		print_json(&log, exp, ok, why);
	} else {
		const char *nc = getenv("NO_COLOR");
		bool color = isatty(STDOUT_FILENO) && (!nc || !*nc);
		static const char *const names[] = { "p2p", "gdr", "dmabuf", "direct" };

		print_human(&log, color);
		if (exp)
			printf("\nExpectations\n");
		for (int k = 0; k < 4; ++k)
			if (exp & 1u << k)
				printf("  %-6s %s: %s\n", names[k], ok[k] ? "met" : "NOT MET", why[k]);
	}
	ret = all_ok ? 0 : 1;
cleanup:
	nvs_nccl_free(&log);
	return ret;
}
