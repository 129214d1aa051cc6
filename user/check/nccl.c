// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NCCL log reader behind `nccl-check', `p2p' level 3 and `doctor': did
 * NCCL really use P2P, GPUDirect RDMA and DMA-BUF? Reads NCCL_DEBUG=INFO
 * output as NCCL's src/debug.cc writes it ("host:pid:tid [dev] NCCL INFO",
 * WARN with "file:line" and, from 2.26, a timestamp), whatever a launcher
 * put in front, tolerating interleaved multi-node logs and logs cut short.
 * Nothing here prints.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check/nccl.h"
#include "lib/io.h"

static const char *const tnames[NVS_NCCL__COUNT] = {
	[NVS_NCCL_P2P_DIRECT] = "P2P/direct pointer",
	[NVS_NCCL_P2P_IPC] = "P2P/IPC",
	[NVS_NCCL_P2P_CUMEM] = "P2P/CUMEM",
	[NVS_NCCL_P2P_OTHER] = "P2P (other)",
	[NVS_NCCL_SHM] = "SHM",
	[NVS_NCCL_NET_GDR] = "NET with GDRDMA",
	[NVS_NCCL_NET] = "NET without GDR",
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
	return t == NVS_NCCL_NET_GDR || t == NVS_NCCL_NET;
}

/*
 * Log text that explains a fallback, and what it means for the admin.
 * Messages are NCCL's (transport/net_ib.cc, graph/paths.cc, misc/param.cc);
 * inter_node marks advice about networks, which a single-node run does
 * not need.
 */
static const struct {
	const char *match;
	bool inter_node;
	const char *explain;
} explain[] = {
	{ "NET/IB : No device found", true,
	  "NCCL found no usable InfiniBand/RoCE device and falls back to TCP sockets: check `ibv_devinfo', the port state and NCCL_IB_HCA" },
	{ "Using network Socket", true,
	  "Inter-node traffic goes over TCP sockets: no RDMA, so no GPUDirect RDMA" },
	{ "GPU Direct RDMA Disabled", true,
	  "NCCL stages network traffic through host memory: the GPU-memory registration path (dma-buf or nvidia-peermem) is missing, or the GPU-NIC distance exceeds NCCL_NET_GDR_LEVEL; see `nvsidecar topo' and `nvsidecar libcuda status'" },
	{ "P2P is disabled", false,
	  "NCCL will not use peer access between these GPUs (beyond NCCL_P2P_LEVEL, or the driver reports no P2P): traffic goes through host shared memory" },
	{ "NCCL_P2P_DISABLE set", false,
	  "Peer-to-peer was switched off through the environment" },
	{ "NCCL_P2P_LEVEL set", false,
	  "The P2P distance limit was forced (NCCL before 2.23 also prints this for NCCL_P2P_DISABLE=1, as level LOC); SYS lets NCCL use P2P across sockets, which can be slower than its default choice" },
	{ "NCCL_IB_DISABLE set", true,
	  "RDMA was switched off through the environment: NCCL uses sockets" },
	{ "NCCL_NET_GDR_LEVEL set", true,
	  "The GPU-NIC distance allowed for GPUDirect RDMA was forced" },
	{ "NCCL_DMABUF_ENABLE set", true,
	  "DMA-BUF registration was forced on or off through the environment" },
	{ "NCCL_SHM_DISABLE set", false,
	  "Shared memory was switched off: without P2P, intra-node traffic uses the network" },
	{ "Cuda failure", false,
	  "A CUDA call failed inside NCCL; check `nvsidecar p2p' for the same pair" },
	{ "peer access", false,
	  "CUDA refused peer access: the driver lacks P2P support for these GPUs, or ACS/IOMMU blocks it (`nvsidecar topo')" },
	{ "ibv_reg_dmabuf_mr", true,
	  "Registering a dma-buf memory region failed: the NIC driver, kernel or GPU driver lacks dma-buf support (on GeForce, libcuda's gate: `nvsidecar libcuda status')" },
};

static int explain_for(const char *msg)
{
	for (size_t i = 0; i < sizeof(explain) / sizeof(explain[0]); ++i)
		if (strstr(msg, explain[i].match))
			return (int)i;
	return -1;
}

void nvs_nccl_init(struct nvs_nccl_log *log)
{
	memset(log, 0, sizeof(*log));
	log->all_direct_p2p = -1;
	log->nnodes = -1;
}

void nvs_nccl_free(struct nvs_nccl_log *log)
{
	free(log->conns);
	free(log->conn_hash);
	free(log->notes);
	free(log->dmabuf_avail.v);
	free(log->dmabuf_used.v);
	free(log->dmabuf_failed.v);
	free(log->hosts.v);
	free(log->dev_ids.v);
	free(log->bus_ids.v);
	nvs_nccl_init(log);
}

/* Room for one more of size bytes, within max; -ENOMEM or -E2BIG. */
static int grow(void **v, size_t *cap, size_t n, size_t size, size_t max)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	if (n >= max)
		return -E2BIG;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > max)
		ncap = max;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static int gpu_add(struct nvs_nccl_gpus *g, const char *host, int dev)
{
	int ret;

	for (size_t i = 0; i < g->n; ++i)
		if (g->v[i].dev == dev && !strcmp(g->v[i].host, host))
			return 0;
	ret = grow((void **)&g->v, &g->cap, g->n, sizeof(*g->v), NVS_NCCL_MAX_GPUS);
	if (ret == -E2BIG)
		return 0;	/* more GPUs than any cluster: the rest are not listed */
	if (ret)
		return ret;
	snprintf(g->v[g->n].host, sizeof(g->v[0].host), "%s", host);
	g->v[g->n++].dev = dev;
	return 0;
}

static int id_add(struct nvs_nccl_ids *s, unsigned long long id)
{
	int ret;

	for (size_t i = s->n; i--;)
		if (s->v[i] == id)
			return 0;
	ret = grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v), NVS_NCCL_MAX_IDS);
	if (ret == -E2BIG)
		return 0;	/* more than any node has: the count says enough */
	if (ret)
		return ret;
	s->v[s->n++] = id;
	return 0;
}

static bool gpu_in(const struct nvs_nccl_gpus *g, const char *host, int dev)
{
	for (size_t i = 0; i < g->n; ++i)
		if (g->v[i].dev == dev && !strcmp(g->v[i].host, host))
			return true;
	return false;
}

static bool digits(const char *s, const char *e)
{
	if (s >= e)
		return false;
	for (; s < e; ++s)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static const char *rchr(const char *s, const char *e, char c)
{
	while (e > s)
		if (*--e == c)
			return e;
	return NULL;
}

/*
 * The host of an NCCL prefix whose "[dev]" opens at o (o[-1] is a space):
 * "host:pid:tid [dev]" (src/debug.cc), host starting after the last ':',
 * ']' or '>' of its word (see parse_prefix); NULL when the word before
 * " [dev]" is not "host:pid:tid". *colon: the ':' after host.
 */
static const char *prefix_host(const char *line, const char *o, const char **colon)
{
	const char *tok = o - 1, *t1, *t2, *h;

	while (tok > line && !isspace((unsigned char)tok[-1]))
		tok--;
	t2 = rchr(tok, o - 1, ':');
	if (!t2 || !digits(t2 + 1, o - 1))
		return NULL;
	t1 = rchr(tok, t2, ':');
	if (!t1 || !digits(t1 + 1, t2))
		return NULL;
	for (h = t1; h > tok && h[-1] != ':' && h[-1] != ']' && h[-1] != '>'; --h)
		;
	*colon = t1;
	return h;
}

/*
 * Whether the host word at h starts with what a line cut inside its "NCCL"
 * mark leaves: "NC", "NCC" or "NCCL" run into the next writer's host
 * ("NCnode22"). A host that merely starts with 'N' ("NVgpu03", "NODE4")
 * is a host (admin review L4); a cut right after the 'N' alone cannot be
 * told from such a host, and is read as one.
 */
static bool cut_mark(const char *h)
{
	return h[0] == 'N' && h[1] == 'C';	/* "NC", and so "NCC", "NCCL" */
}

/*
 * Whether the host at h may hold another writer's text: line holds, before
 * h, an NCCL mark, or a whole "host:pid:tid [dev]" prefix that h does not
 * follow at once. A prefix then one space then h is a launcher's tag with
 * the shape of NCCL's (a wrapper's "job:4242:0 [1] ",
 * tests/nccl/nccl-2.18-pdsh-wrapper.log), or an NCCL line cut right after
 * its prefix: either way nothing ran into the host's word, which is read
 * whole; unless it starts with what a line cut inside its "NCCL" mark
 * leaves ("NCnode22", cut_mark()).
 */
static bool nccl_before(const char *line, const char *h)
{
	const char *m, *c, *colon;

	for (m = line; (m = strstr(m, "NCCL ")) && m < h; m += 5)
		if (!strncmp(m + 5, "INFO ", 5) || !strncmp(m + 5, "WARN ", 5) || !strncmp(m + 5, "TRACE ", 6))
			return true;
	for (m = line + 1; m < h; ++m) {
		if (*m != '[' || m[-1] != ' ')
			continue;
		c = memchr(m, ']', (size_t)(h - m));
		if (!c || !digits(m + 1, c) || !prefix_host(line, m, &colon))
			continue;
		if (c[1] == ' ' && c + 2 == h && !cut_mark(h))
			continue;	/* a look-alike tag right before NCCL's prefix */
		return true;
	}
	return false;
}

/*
 * The prefix is "host:pid:tid [dev] " (src/debug.cc: "%s:%d:%d " of
 * hostname, pid and tid, then "[%d] " of cudaDev, in every NCCL from 2.14
 * to the newest at github.com/NVIDIA/nccl) and, for WARN and TRACE,
 * "file:line" or a time after [dev]. Whatever comes before host
 * (Open MPI's "[1,0]<stdout>:", Python logging's "INFO:root:", srun's
 * "0: ", pdsh's "node01: ", NCCL 2.26's "[date time] ") is not the host:
 * host names have no colons, so host starts after the last ':', ']' or '>'.
 * The prefix is the one whose "[dev]" is nearest the mark: a launcher's
 * tag shaped like it ("job:4242:0 [1] ") comes before, and names neither
 * host, pid nor device.
 *
 * The prefix is the first thing NCCL writes on a line, so only a
 * launcher's text may come before it, and no launcher writes NCCL's own
 * mark or another "host:pid:tid [dev]". When one does come before it, two
 * writers' output was glued into one line (a message cut short, then a
 * whole line: "node21:9101:9101 [0] NCCL INFO Connectednode22:9202:9202
 * [1] NCCL INFO Connected all trees", tests/nccl/nccl-2.23-python-logging):
 * the word before ":pid:tid" is the first message's tail run into the
 * second host, and where one ends and the other begins cannot be told
 * ("Connectednode22"). Such a line names no host (nor pid); its "[dev]"
 * still stands, as for a line without a host.
 */
static void parse_prefix(const char *line, const char *mark, char *host, size_t hlen, int *pid, int *dev)
{
	host[0] = 0;
	*pid = *dev = -1;
	for (const char *b = mark; b > line; --b) {
		const char *o = b - 1, *c, *t1, *h;

		if (*o != '[' || o == line || o[-1] != ' ')
			continue;
		c = memchr(o, ']', (size_t)(mark - o));
		if (!c || !digits(o + 1, c))
			continue;
		if (*dev < 0 && (c + 2 == mark || c + 1 == mark))
			*dev = atoi(o + 1);	/* "[0] NCCL INFO" with no host before it */
		h = prefix_host(line, o, &t1);
		if (!h)
			continue;
		*dev = atoi(o + 1);
		if (nccl_before(line, h))
			return;		/* glued onto another writer's text: no host */
		snprintf(host, hlen, "%.*s", (int)(t1 - h), h);
		*pid = atoi(t1 + 1);
		return;
	}
}

static int add_note(struct nvs_nccl_log *log, bool warn, const char *host, int dev, const char *msg)
{
	struct nvs_nccl_note *n;
	int e = explain_for(msg), ret;

	/* the same message from every rank says nothing new */
	for (size_t i = 0; i < log->n_notes; ++i)
		if (!strcmp(log->notes[i].text, msg) && !strcmp(log->notes[i].host, host))
			return 0;
	ret = grow((void **)&log->notes, &log->cap_notes, log->n_notes, sizeof(*log->notes),
		   NVS_NCCL_MAX_NOTES);
	if (ret == -E2BIG)
		return 0;	/* enough notes to read: the rest add nothing */
	if (ret)
		return ret;
	n = &log->notes[log->n_notes++];
	n->warn = warn;
	snprintf(n->host, sizeof(n->host), "%s", host);
	n->dev = dev;
	snprintf(n->text, sizeof(n->text), "%s", msg);
	n->explain = e >= 0 ? explain[e].explain : NULL;
	n->inter_node = e >= 0 && explain[e].inter_node;
	return 0;
}

/*
 * "NET/<net>/<dev>[(<proxy>)][/GDRDMA[(PCI)]][/Shared]" (transport/net.cc):
 * the network's name may hold spaces and slashes (a net plugin's name, e.g.
 * "AWS Libfabric"), so it is read from the end.
 */
static enum nvs_nccl_transport classify_net(const char *via, char *net, size_t nlen, bool *gdr)
{
	const char *s = via + 4, *e = via + strlen(via), *p;
	static const char *const tails[] = { "/Shared", "(PCI)" };

	for (size_t i = 0; i < 2; ++i)
		if ((size_t)(e - s) > strlen(tails[i]) && !strncmp(e - strlen(tails[i]), tails[i], strlen(tails[i])))
			e -= strlen(tails[i]);
	if (e - s > 7 && !strncmp(e - 7, "/GDRDMA", 7)) {
		*gdr = true;
		e -= 7;
	}
	p = e > s && e[-1] == ')' ? rchr(s, e, '(') : NULL;
	if (p && digits(p + 1, e - 1))
		e = p;		/* "(proxy rank)" */
	p = rchr(s, e, '/');
	if (p && digits(p + 1, e))
		e = p;
	snprintf(net, nlen, "%.*s", (int)(e - s), s);
	return *gdr ? NVS_NCCL_NET_GDR : NVS_NCCL_NET;
}

static enum nvs_nccl_transport classify(const char *via, char *net, size_t nlen, bool *gdr)
{
	*gdr = false;
	net[0] = 0;
	if (!strncmp(via, "P2P/direct pointer", 18))
		return NVS_NCCL_P2P_DIRECT;
	if (!strncmp(via, "P2P/IPC", 7))
		return NVS_NCCL_P2P_IPC;
	if (!strncmp(via, "P2P/CUMEM", 9) || !strncmp(via, "P2P/MNNVL", 9))
		return NVS_NCCL_P2P_CUMEM;
	if (!strncmp(via, "P2P", 3))
		return NVS_NCCL_P2P_OTHER;
	if (!strncmp(via, "SHM", 3))
		return NVS_NCCL_SHM;
	if (!strncmp(via, "NET/", 4))
		return classify_net(via, net, nlen, gdr);
	return NVS_NCCL_OTHER;
}

static bool same_conn(const struct nvs_nccl_conn *a, const struct nvs_nccl_conn *b)
{
	return a->channel == b->channel && a->from_rank == b->from_rank && a->to_rank == b->to_rank &&
	       !strcmp(a->dir, b->dir) && !strcmp(a->via, b->via) && !strcmp(a->kind, b->kind);
}

static size_t conn_key(const struct nvs_nccl_conn *c)
{
	size_t h = 14695981039346656037ULL;
	const char *parts[] = { c->dir, c->via, c->kind };
	int nums[] = { c->channel, c->from_rank, c->to_rank };

	for (size_t i = 0; i < 3; ++i) {
		h = (h ^ (size_t)(unsigned int)nums[i]) * 1099511628211ULL;
		for (const char *p = parts[i]; *p; ++p)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	}
	return h;
}

/*
 * Whether c was seen (0), or where to file it (1, *slot): a hash keeps
 * a log of a thousand ranks from costing a quadratic search per line.
 */
static int conn_find(struct nvs_nccl_log *log, const struct nvs_nccl_conn *c, size_t *slot)
{
	size_t mask, i;

	if (log->n_conns + 1 > log->hash_cap / 2) {
		size_t cap = log->hash_cap ? log->hash_cap * 2 : 64;
		size_t *h = calloc(cap, sizeof(*h));

		if (!h)
			return -ENOMEM;
		for (size_t k = 0; k < log->n_conns; ++k) {
			for (i = conn_key(&log->conns[k]) & (cap - 1); h[i]; i = (i + 1) & (cap - 1))
				;
			h[i] = k + 1;
		}
		free(log->conn_hash);
		log->conn_hash = h;
		log->hash_cap = cap;
	}
	mask = log->hash_cap - 1;
	for (i = conn_key(c) & mask; log->conn_hash[i]; i = (i + 1) & mask)
		if (same_conn(&log->conns[log->conn_hash[i] - 1], c))
			return 0;
	*slot = i;
	return 1;
}

/* "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" and kin; 1 if not one. */
static int parse_conn(struct nvs_nccl_log *log, const char *msg, const char *host, int pid, int dev)
{
	struct nvs_nccl_conn c = { 0 };
	const char *p = msg, *via;
	int used = 0, sub, ret;
	size_t n, slot;

	/* "Channel %02d/%d :" (P2P, NET), "Channel %02d :" (SHM), "Ring %02d :" (old) */
	if (sscanf(p, "Channel %d/%d :%n", &c.channel, &sub, &used) != 2 || !used) {
		used = 0;
		if (sscanf(p, "Channel %d :%n", &c.channel, &used) != 1 || !used) {
			used = 0;
			if (sscanf(p, "Ring %d :%n", &c.channel, &used) != 1 || !used)
				return 1;
		}
	}
	snprintf(c.kind, sizeof(c.kind), "%s", p[0] == 'R' ? "Ring" : "Channel");
	p += used;
	/* "0[0] -> 1[1]": nvmlDev, or busId before 2.18, in the brackets */
	if (sscanf(p, " %d[%*[^]]] -> %d[%*[^]]]", &c.from_rank, &c.to_rank) != 2)
		return 1;
	via = strstr(p, " via ");
	if (!via)
		return 1;
	if (strstr(p, "[send]") && strstr(p, "[send]") < via)
		snprintf(c.dir, sizeof(c.dir), "send");
	else if (strstr(p, "[receive]") && strstr(p, "[receive]") < via)
		snprintf(c.dir, sizeof(c.dir), "receive");
	/* the transport is the rest of the message: names may hold spaces */
	via += 5;
	n = strlen(via);
	while (n && isspace((unsigned char)via[n - 1]))
		n--;
	snprintf(c.via, sizeof(c.via), "%.*s", (int)n, via);
	c.t = classify(c.via, c.net, sizeof(c.net), &c.gdr);
	snprintf(c.host, sizeof(c.host), "%s", host);
	c.pid = pid;
	c.dev = dev;
	ret = conn_find(log, &c, &slot);
	if (ret <= 0)
		return ret;
	ret = grow((void **)&log->conns, &log->cap_conns, log->n_conns, sizeof(*log->conns),
		   NVS_NCCL_MAX_CONNS);
	if (ret)
		return ret;
	log->conn_hash[slot] = log->n_conns + 1;
	log->conns[log->n_conns++] = c;
	return 0;
}

/* TRACE "regAddr ... fd N" (net_ib.cc): a registration, with a dma-buf when fd >= 0. */
static int parse_trace(struct nvs_nccl_log *log, const char *msg, const char *host, int dev)
{
	const char *f = strstr(msg, " fd");

	if (strncmp(msg, "regAddr", 7) || !f || (f[3] != ' ' && f[3] != '='))
		return 0;
	if (atoi(f + 4) < 0 || !isdigit((unsigned char)f[4]))
		return 0;
	return gpu_add(&log->dmabuf_used, host, dev);
}

static int parse_msg(struct nvs_nccl_log *log, char level, const char *msg, const char *host, int pid, int dev)
{
	const char *s;
	int d, ret;

	if (level == 'T')
		return parse_trace(log, msg, host, dev);
	if (strstr(msg, "ibv_reg_dmabuf_mr") && strstr(msg, "failed")) {
		ret = gpu_add(&log->dmabuf_failed, host, dev);
		if (ret)
			return ret;
	}
	if (level == 'W')
		return add_note(log, true, host, dev, msg);
	s = strstr(msg, "NCCL version ");
	if (s) {
		snprintf(log->version, sizeof(log->version), "%.*s", (int)strcspn(s + 13, " \t"), s + 13);
		return 0;
	}
	if (sscanf(msg, "DMA-BUF is available on GPU device %d", &d) == 1) {
		log->init_lines++;
		return gpu_add(&log->dmabuf_avail, host, d);
	}
	s = strstr(msg, "isAllDirectP2p ");
	if (s) {
		log->all_direct_p2p = atoi(s + 15);
		return 0;
	}
	if (strstr(msg, "Init COMPLETE")) {
		log->init_lines++;
		log->init_complete++;
		return 0;
	}
	if (!strncmp(msg, "Connected all rings", 19)) {
		log->init_lines++;
		log->connected = true;
		return 0;
	}
	s = strstr(msg, " nNodes ");
	if (s) {
		log->init_lines++;
		if (atoi(s + 8) > log->nnodes)
			log->nnodes = atoi(s + 8);
		return 0;
	}
	if (!strncmp(msg, "Using network ", 14) || strstr(msg, "Init START"))
		log->init_lines++;
	ret = parse_conn(log, msg, host, pid, dev);
	if (ret <= 0)
		return ret;
	if (explain_for(msg) >= 0 || strstr(msg, "set by environment to"))
		return add_note(log, false, host, dev, msg);
	return 0;
}

bool nvs_nccl_host_match(const char *a, const char *b)
{
	size_t la = strcspn(a, "."), lb = strcspn(b, ".");

	if (!*a || !*b)
		return false;
	if (!strcasecmp(a, b))
		return true;
	/* two FQDNs that differ are two nodes, whatever their first labels */
	return (!a[la] || !b[lb]) && la == lb && !strncasecmp(a, b, la);
}

size_t nvs_nccl_gpus_named(const struct nvs_nccl_log *log)
{
	return log->dev_ids.n > log->bus_ids.n ? log->dev_ids.n : log->bus_ids.n;
}

/*
 * The GPUs a judged line names: the CUDA device of the prefix (cudaGetDevice
 * of the logging thread), "cudaDev N" and "busId X" (init.cc's
 * "... cudaDev %d nvmlDev %d busId %lx ... Init COMPLETE").
 */
static int note_ids(struct nvs_nccl_log *log, const char *msg, int dev)
{
	const char *s;
	int ret = 0;

	if (dev >= 0)
		ret = id_add(&log->dev_ids, (unsigned int)dev);
	s = strstr(msg, " cudaDev ");
	if (!ret && s && isdigit((unsigned char)s[9]))
		ret = id_add(&log->dev_ids, strtoull(s + 9, NULL, 10));
	s = strstr(msg, " busId ");
	if (!ret && s && isxdigit((unsigned char)s[7]))
		ret = id_add(&log->bus_ids, strtoull(s + 7, NULL, 16));
	return ret;
}

/* One line: the NCCL message on it (the last, when writers interleaved). */
static int parse_line(struct nvs_nccl_log *log, char *line)
{
	const char *mark = NULL, *m, *v, *msg;
	char host[NVS_NCCL_HOST_LEN];
	int pid, dev, ret;

	for (m = line; (m = strstr(m, "NCCL ")); m += 5)
		if (!strncmp(m + 5, "INFO ", 5) || !strncmp(m + 5, "WARN ", 5) || !strncmp(m + 5, "TRACE ", 6)) {
			if (mark)
				log->interleaved++;
			mark = m;
		}
	if (!mark) {
		/* NCCL before 2.22 prints its version with printf, without a prefix */
		v = strstr(line, "NCCL version ");
		if (v && isdigit((unsigned char)v[13])) {
			log->nccl_lines++;
			snprintf(log->version, sizeof(log->version), "%.*s", (int)strcspn(v + 13, " \t"), v + 13);
		}
		return 0;
	}
	log->nccl_lines++;
	parse_prefix(line, mark, host, sizeof(host), &pid, &dev);
	if (host[0] && gpu_add(&log->hosts, host, -1))
		return -ENOMEM;
	msg = mark + (mark[5] == 'T' ? 11 : 10);
	if (log->only_host) {
		/* a line without a host cannot be told apart: it is judged */
		if (host[0] && !nvs_nccl_host_match(host, log->only_host)) {
			log->other_lines++;
			return 0;
		}
		ret = note_ids(log, msg, dev);
		if (ret)
			return ret;
	}
	return parse_msg(log, mark[5], msg, host, pid, dev);
}

int nvs_nccl_read(struct nvs_nccl_log *log, const char *path, char *err, size_t errlen)
{
	const char *name = strcmp(path, "-") ? path : "standard input";
	struct nvs_ifile in;
	size_t n;
	char *line;
	bool cut;
	int ret;
	size_t nccl_before = log->nccl_lines, first_binary = 0;

	log->no_writer = false;
	ret = nvs_ifile_open(&in, path, NVS_NCCL_MAX_LINE, 0, err, errlen);
	if (ret)
		return ret;
	log->no_writer = in.no_writer;
	while ((ret = nvs_ifile_line(&in, &line, &n, &cut, err, errlen)) > 0) {
		log->lines++;
		if (memchr(line, 0, n)) {
			if (!first_binary)
				first_binary = log->lines;
			log->binary_lines++;
			continue;
		}
		/* a last line without its end may be cut mid-word: never trust it */
		if (cut) {
			log->cut_line = true;
			break;
		}
		if (n && line[n - 1] == '\r')
			line[n - 1] = 0;
		/* nccl-tests' own lines, and comments: never NCCL's */
		if (line[strspn(line, " \t")] == '#')
			continue;
		ret = parse_line(log, line);
		if (ret) {
			if (ret == -E2BIG)
				snprintf(err, errlen, "`%s' has more than %d distinct connection lines: not a log this tool can judge",
					 name, NVS_NCCL_MAX_CONNS);
			else
				snprintf(err, errlen, "Unable to read `%s': %s", name, strerror(-ret));
			break;
		}
	}
	nvs_ifile_close(&in);
	if (ret >= 0 && first_binary && log->nccl_lines == nccl_before) {
		snprintf(err, errlen,
			 "`%s' line %zu holds binary data and no line is NCCL's: expected the text output of a program run with NCCL_DEBUG=INFO",
			 name, first_binary);
		ret = -EINVAL;
	}
	return ret < 0 ? ret : 0;
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
	if (log->n_conns)
		qsort(log->conns, log->n_conns, sizeof(*log->conns), cmp_conn);
}

bool nvs_nccl_filtered(const struct nvs_nccl_log *log)
{
	return log->n_conns && !log->init_lines;
}

bool nvs_nccl_truncated(const struct nvs_nccl_log *log)
{
	return log->cut_line || (log->init_lines && !log->init_complete && !log->connected);
}

size_t nvs_nccl_nodes(const struct nvs_nccl_log *log)
{
	return log->nnodes > 0 ? (size_t)log->nnodes : log->hosts.n;
}

static bool incomplete(const struct nvs_nccl_log *log, char *why, size_t len)
{
	if (!nvs_nccl_truncated(log))
		return false;
	snprintf(why, len, "the log ends before NCCL finished connecting (%s)",
		 log->cut_line ? "its last line is cut" : "no `Init COMPLETE' or `Connected all rings' line");
	return true;
}

static int cmp_host_pair(const void *a, const void *b)
{
	const struct nvs_nccl_conn *x = *(const struct nvs_nccl_conn *const *)a;
	const struct nvs_nccl_conn *y = *(const struct nvs_nccl_conn *const *)b;
	int r = strcmp(x->host, y->host);

	if (r)
		return r;
	if (x->from_rank != y->from_rank)
		return x->from_rank - y->from_rank;
	return x->to_rank - y->to_rank;
}

/*
 * "node01 ranks 0->1 (SHM/direct/direct), 1->2 (...); node02 ranks ...":
 * the connections that fail bad(), by host, each rank pair once.
 */
static void describe(const struct nvs_nccl_log *log, bool (*bad)(const struct nvs_nccl_conn *, bool), bool arg,
		     char *where, size_t wlen)
{
	const struct nvs_nccl_conn **v = malloc((log->n_conns ? log->n_conns : 1) * sizeof(*v));
	size_t n = 0, len = 0, shown = 0, more = 0;

	where[0] = 0;
	if (!v)
		return;
	for (size_t i = 0; i < log->n_conns; ++i)
		if (bad(&log->conns[i], arg))
			v[n++] = &log->conns[i];
	qsort(v, n, sizeof(*v), cmp_host_pair);
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_nccl_conn *c = v[i], *p = i ? v[i - 1] : NULL;
		bool same_host = p && !strcmp(p->host, c->host);

		if (same_host && p->from_rank == c->from_rank && p->to_rank == c->to_rank)
			continue;
		if (shown >= 12 || len + 128 >= wlen) {
			more++;
			continue;
		}
		if (same_host)
			len += snprintf(where + len, wlen - len, ", ");
		else
			len += snprintf(where + len, wlen - len, "%s%s%sranks ", len ? "; " : "",
					c->host[0] ? c->host : "", c->host[0] ? " " : "");
		len += snprintf(where + len, wlen - len, "%d->%d (%s)", c->from_rank, c->to_rank, c->via);
		shown++;
	}
	if (more && len < wlen)
		snprintf(where + len, wlen - len, "; and %zu more", more);
	free(v);
}

/* The host list of a node-less check: "node01" or "node01, node02". */
static void host_list(const struct nvs_nccl_log *log, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < log->hosts.n && o + 8 < len; ++i)
		o += snprintf(buf + o, len - o, "%s%s", i ? ", " : "", log->hosts.v[i].host);
}

static bool not_p2p(const struct nvs_nccl_conn *c, bool direct_only)
{
	if (nvs_nccl_is_net(c->t))
		return false;
	return direct_only ? c->t != NVS_NCCL_P2P_DIRECT : !nvs_nccl_is_p2p(c->t);
}

bool nvs_nccl_expect_p2p(const struct nvs_nccl_log *log, bool direct_only, char *why, size_t len,
			 char *where, size_t wlen)
{
	size_t all = 0, bad = 0;

	where[0] = 0;
	if (incomplete(log, why, len))
		return false;
	for (size_t i = 0; i < log->n_conns; ++i) {
		all += !nvs_nccl_is_net(log->conns[i].t);
		bad += not_p2p(&log->conns[i], direct_only);
	}
	if (!all) {
		snprintf(why, len, "no intra-node connection lines in the log (one GPU per node, or the P2P and SHM lines are filtered out)");
		return false;
	}
	if (bad) {
		snprintf(why, len, direct_only ?
			 "%zu of %zu intra-node connections use P2P/IPC, P2P/CUMEM, SHM or other, not P2P/direct pointer" :
			 "%zu of %zu intra-node connections do not use P2P (SHM or other)", bad, all);
		describe(log, not_p2p, direct_only, where, wlen);
		return false;
	}
	snprintf(why, len, "all %zu intra-node connections use %s", all, direct_only ? "P2P/direct pointer" : "P2P");
	return true;
}

static bool not_gdr(const struct nvs_nccl_conn *c, bool unused)
{
	(void)unused;
	return c->t == NVS_NCCL_NET;
}

bool nvs_nccl_expect_gdr(const struct nvs_nccl_log *log, char *why, size_t len, char *where, size_t wlen)
{
	size_t net = 0, bad = 0;
	char nets[128] = "", hosts[160];

	where[0] = 0;
	if (incomplete(log, why, len))
		return false;
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];

		if (!nvs_nccl_is_net(c->t))
			continue;
		net++;
		bad += c->t == NVS_NCCL_NET;
		if (!strstr(nets, c->net) && strlen(nets) + strlen(c->net) + 3 < sizeof(nets))
			snprintf(nets + strlen(nets), sizeof(nets) - strlen(nets), "%sNET/%s", nets[0] ? ", " : "",
				 c->net);
	}
	if (!net) {
		host_list(log, hosts, sizeof(hosts));
		if (nvs_nccl_nodes(log) == 1)
			snprintf(why, len, "a single-node run (%s): no network connection to judge", hosts);
		else
			snprintf(why, len, "no network connection lines in the log (single node, or the NET lines are filtered out)");
		return false;
	}
	if (bad) {
		snprintf(why, len, "%zu of %zu network connections (%s) do not use GPUDirect RDMA (no GDRDMA flag)", bad,
			 net, nets);
		describe(log, not_gdr, false, where, wlen);
		return false;
	}
	snprintf(why, len, "all %zu network connections use GPUDirect RDMA over %s", net, nets);
	return true;
}

bool nvs_nccl_expect_dmabuf(const struct nvs_nccl_log *log, char *why, size_t len, char *where, size_t wlen)
{
	struct nvs_nccl_gpus net = { 0 };
	size_t used = 0, failed = 0, o = 0;
	bool ok = false;

	where[0] = 0;
	if (incomplete(log, why, len))
		return false;
	/* every GPU that talks to the network must show a dma-buf registration */
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];

		if (nvs_nccl_is_net(c->t) && gpu_add(&net, c->host, c->dev)) {
			snprintf(why, len, "Unable to allocate memory");
			goto out;
		}
	}
	if (!net.n) {
		snprintf(why, len, "no network connection lines in the log: dma-buf registration is for network transfers");
		goto out;
	}
	for (size_t i = 0; i < net.n; ++i) {
		const struct nvs_nccl_gpu *g = &net.v[i];
		bool u = gpu_in(&log->dmabuf_used, g->host, g->dev), f = gpu_in(&log->dmabuf_failed, g->host, g->dev);

		used += u;
		failed += f;
		if (!u && o + 48 < wlen)
			o += snprintf(where + o, wlen - o, "%s%s%sGPU %d%s", o ? ", " : "", g->host, g->host[0] ? " " : "",
				      g->dev, f ? " (registration failed)" : "");
	}
	ok = used == net.n;
	if (ok)
		snprintf(why, len, "a dma-buf registration is shown for all %zu GPU(s) that use the network", net.n);
	else if (failed)
		snprintf(why, len, "ibv_reg_dmabuf_mr failed on %zu of %zu GPU(s) that use the network", failed, net.n);
	else if (!used)
		snprintf(why, len, "not shown by this log: NCCL prints `DMA-BUF is available' at init whatever the transport later uses, and shows a dma-buf registration only at NCCL_DEBUG=TRACE (`regAddr ... fd N')");
	else
		snprintf(why, len, "not shown by this log for %zu of %zu GPU(s) that use the network", net.n - used, net.n);
out:
	free(net.v);
	return ok;
}
