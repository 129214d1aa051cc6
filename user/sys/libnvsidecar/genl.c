// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libnvsidecar over libnl-genl-3: requests, dumps with retry on
 * NLM_F_DUMP_INTR, extended-ack messages, and the "events" group.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/family.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "libnvsidecar.h"

#ifndef NVS_TOOL_VERSION
#define NVS_TOOL_VERSION "unknown"
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

/* A hotplug storm could interrupt every dump; give up after this many. */
#define DUMP_RETRIES 8
#define EVENT_BUF (64 * 1024)

struct nvs_handle {
	struct nl_sock *sk;
	int family;
	uint32_t version;
	int mcgrp;
	int evfd;		/* raw socket, so ENOBUFS is seen as such */
	unsigned char *evbuf;
	size_t evlen, evoff;	/* unread messages left in evbuf */
	char err[256];
};

static __thread char open_err[256];

static void copy_str(char *dst, size_t len, struct nlattr *a);

static int set_err(struct nvs_handle *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(struct nvs_handle *h, int err, const char *fmt, ...)
{
	char *buf = h ? h->err : open_err;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(h->err), fmt, ap);
	va_end(ap);
	errno = err;
	return -err;
}

const char *nvs_last_error(const struct nvs_handle *h)
{
	return h ? h->err : open_err;
}

uint32_t nvs_family_version(const struct nvs_handle *h)
{
	return h->version;
}

/* libnl reports its own codes; callers of this library get errno values. */
static int nlerr_to_errno(int nlerr)
{
	switch (-nlerr) {
	case NLE_INTR: return EINTR;
	case NLE_AGAIN: return EAGAIN;
	case NLE_NOMEM: return ENOMEM;
	case NLE_PERM: return EPERM;
	case NLE_INVAL: return EINVAL;
	case NLE_RANGE: return ERANGE;
	case NLE_OBJ_NOTFOUND: return ENOENT;
	case NLE_NODEV: return ENODEV;
	case NLE_DUMP_INTR: return EINTR;
	case NLE_MSGSIZE: return EMSGSIZE;
	case NLE_OPNOTSUPP: return EOPNOTSUPP;
	case NLE_BUSY: return EBUSY;
	case NLE_SEQ_MISMATCH: return EPROTO;
	case NLE_PARSE_ERR: return EBADMSG;
	default: return EIO;
	}
}

static const char *family_missing =
	"The nvsidecar generic netlink family is not registered: load the module with "
	"`modprobe nvsidecar' and check that it is built for this kernel with "
	"`dkms status nvsidecar'";

static int resolve_family(struct nvs_handle *h)
{
	struct nl_cache *cache = NULL;
	struct genl_family *fam;
	int r;

	r = genl_ctrl_resolve(h->sk, NVS_GENL_NAME);
	if (r < 0) {
		if (r == -NLE_OBJ_NOTFOUND)
			return set_err(h, ENOENT, "%s", family_missing);
		return set_err(h, nlerr_to_errno(r), "Unable to query generic netlink: %s",
			       nl_geterror(r));
	}
	h->family = r;
	h->version = 0;
	if (!genl_ctrl_alloc_cache(h->sk, &cache)) {
		fam = genl_ctrl_search(cache, h->family);
		if (fam) {
			h->version = genl_family_get_version(fam);
			genl_family_put(fam);
		}
		nl_cache_free(cache);
	}
	return 0;
}

int nvs_open(struct nvs_handle **out)
{
	struct nvs_handle *h;
	int one = 1, r, ret;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return set_err(NULL, ENOMEM, "Unable to allocate a netlink handle");
	h->evfd = -1;
	h->mcgrp = -1;
	h->sk = nl_socket_alloc();
	if (!h->sk) {
		ret = set_err(NULL, ENOMEM, "Unable to allocate a netlink socket");
		goto err_free;
	}
	r = genl_connect(h->sk);
	if (r < 0) {
		ret = set_err(NULL, nlerr_to_errno(r), "Unable to open a generic netlink socket: %s",
			      nl_geterror(r));
		goto err_sock;
	}
	/* Flags are set by hand: REQUEST plus ACK for doits, DUMP for dumps. */
	nl_socket_disable_auto_ack(h->sk);
	setsockopt(nl_socket_get_fd(h->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(h->sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	/* A dump of 8 GPUs with 1024 samples each is a few MB; avoid ENOBUFS. */
	nl_socket_set_buffer_size(h->sk, 4 << 20, 0);
	nl_socket_set_msg_buf_size(h->sk, 64 * 1024);
	ret = resolve_family(h);
	if (ret) {
		memcpy(open_err, h->err, sizeof(open_err));
		errno = -ret;
		goto err_sock;
	}
	*out = h;
	return 0;

err_sock:
	nl_socket_free(h->sk);
err_free:
	free(h);
	errno = -ret;
	return ret;
}

void nvs_close(struct nvs_handle *h)
{
	if (!h)
		return;
	if (h->evfd >= 0)
		close(h->evfd);
	free(h->evbuf);
	nl_socket_free(h->sk);
	free(h);
}

/* One request in flight: what the callbacks fill and how it ended. */
struct req {
	struct nvs_handle *h;
	int (*parse)(struct req *rq, struct nlmsghdr *nlh);
	void *arg;
	int err;		/* -errno from the kernel or a parser */
	bool done;
	bool have_reply;
};

/* Extended-ack TLVs follow the (capped) copy of the request. */
static void take_extack(struct nvs_handle *h, struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	struct nlattr *attr;
	int rem;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += NLMSG_ALIGN(e->msg.nlmsg_len) - sizeof(e->msg);
	if (off >= nlh->nlmsg_len)
		return;
	nla_for_each_attr(attr, (struct nlattr *)((char *)nlh + off), (int)(nlh->nlmsg_len - off), rem) {
		if (nla_type(attr) == NLMSGERR_ATTR_MSG && nla_len(attr) > 0)
			copy_str(h->err, sizeof(h->err), attr);
	}
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct req *rq = arg;
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);

	(void)nla;
	rq->err = e->error < 0 ? e->error : -EPROTO;
	rq->h->err[0] = '\0';
	take_extack(rq->h, nlh);
	rq->done = true;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct req *rq = arg;

	(void)msg;
	rq->done = true;
	return NL_STOP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct req *rq = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int ret;

	if (nlh->nlmsg_type != rq->h->family || rq->err)
		return NL_SKIP;
	rq->have_reply = true;
	ret = rq->parse ? rq->parse(rq, nlh) : 0;
	if (ret < 0)
		rq->err = ret;	/* keep reading to the end of the dump */
	return NL_OK;
}

/*
 * Sends a request built by fill() and reads to its end. A doit is sent with
 * NLM_F_ACK and ends at the ACK (or error); a dump ends at NLMSG_DONE.
 * Returns 0, -EINTR for an interrupted dump, or -errno.
 */
static int transact(struct nvs_handle *h, uint8_t cmd, bool dump,
		    int (*fill)(struct nl_msg *msg, const void *arg), const void *fill_arg,
		    int (*parse)(struct req *rq, struct nlmsghdr *nlh), void *parse_arg)
{
	struct req rq = { .h = h, .parse = parse, .arg = parse_arg };
	struct nl_msg *msg = NULL;
	struct nl_cb *cb = NULL;
	int ret, r;

	h->err[0] = '\0';
	msg = nlmsg_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb) {
		ret = set_err(h, ENOMEM, "Unable to allocate a netlink message");
		goto out;
	}
	/* genlmsg_put zeroes genlmsghdr.reserved; REQUEST is added on send. */
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, h->family, 0,
			 dump ? NLM_F_DUMP : NLM_F_ACK, cmd, NVS_GENL_VERSION)) {
		ret = set_err(h, ENOMEM, "Unable to build a netlink message");
		goto out;
	}
	if (fill) {
		ret = fill(msg, fill_arg);
		if (ret < 0) {
			ret = set_err(h, EMSGSIZE, "Request does not fit in a netlink message");
			goto out;
		}
	}
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &rq);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &rq);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, &rq);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &rq);

	r = nl_send_auto(h->sk, msg);
	if (r < 0) {
		ret = set_err(h, nlerr_to_errno(r), "Unable to send a netlink request: %s",
			      nl_geterror(r));
		goto out;
	}
	while (!rq.done) {
		r = nl_recvmsgs(h->sk, cb);
		if (r == -NLE_DUMP_INTR) {
			ret = -EINTR;
			errno = EINTR;
			goto out;
		}
		if (r < 0 && !rq.err) {
			ret = set_err(h, nlerr_to_errno(r), "Unable to read the netlink reply: %s",
				      nl_geterror(r));
			goto out;
		}
		if (r < 0)
			break;
	}
	ret = rq.err;
	if (ret) {
		errno = -ret;
		if (!h->err[0])
			snprintf(h->err, sizeof(h->err), "%s", strerror(-ret));
		if (ret == -ENOENT && cmd != NVS_CMD_GPU_SET && !rq.have_reply &&
		    genl_ctrl_resolve(h->sk, NVS_GENL_NAME) < 0)
			ret = set_err(h, ENOENT, "%s", family_missing);
	}
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	return ret;
}

static int put_index(struct nl_msg *msg, const void *arg)
{
	return nla_put_u32(msg, NVS_A_GPU_INDEX, *(const uint32_t *)arg);
}

static struct nla_policy sensor_policy[NVS_SENSOR_A_MAX_ATTR + 1] = {
	[NVS_SENSOR_A_ID] = { .type = NLA_U32 },
	[NVS_SENSOR_A_LABEL] = { .type = NLA_STRING },
	[NVS_SENSOR_A_VALID] = { .type = NLA_U8 },
	[NVS_SENSOR_A_MC] = { .type = NLA_U32 },
	[NVS_SENSOR_A_PEAK] = { .type = NLA_U32 },
	[NVS_SENSOR_A_LOW] = { .type = NLA_U32 },
	[NVS_SENSOR_A_MAX] = { .type = NLA_U32 },
	[NVS_SENSOR_A_ALARM] = { .type = NLA_U8 },
};

static struct nla_policy gpu_policy[NVS_A_MAX + 1] = {
	[NVS_A_GPU_INDEX] = { .type = NLA_U32 },
	[NVS_A_GPU_BUSID] = { .type = NLA_STRING },
	[NVS_A_GPU_VENDOR] = { .type = NLA_U16 },
	[NVS_A_GPU_DEVICE] = { .type = NLA_U16 },
	[NVS_A_GPU_CHIP] = { .type = NLA_STRING },
	[NVS_A_GPU_NAME] = { .type = NLA_STRING },
	[NVS_A_GPU_STATUS] = { .type = NLA_U32 },
	[NVS_A_GPU_STATUS_REASON] = { .type = NLA_STRING },
	[NVS_A_GPU_SAMPLE_HZ] = { .type = NLA_U32 },
	[NVS_A_GPU_FLAGS] = { .type = NLA_U32 },
	[NVS_A_GPU_SAMPLES] = { .type = NLA_U64 },
	[NVS_A_GPU_UNAVAILABLE] = { .type = NLA_U64 },
	[NVS_A_GPU_CROSSINGS] = { .type = NLA_U64 },
	[NVS_A_GPU_LAST_SAMPLE_NS] = { .type = NLA_U64 },
	[NVS_A_GPU_SEQ] = { .type = NLA_U64 },
	[NVS_A_GPU_SENSORS] = { .type = NLA_NESTED },
	[NVS_A_GPU_SENSOR] = { .type = NLA_NESTED },
	[NVS_A_SAMPLES_NSENSORS] = { .type = NLA_U32 },
	[NVS_A_SAMPLES_LOST] = { .type = NLA_U64 },
	[NVS_A_SAMPLES_NEXT] = { .type = NLA_U64 },
	[NVS_A_SAMPLES] = { .type = NLA_NESTED },
	[NVS_A_DMABUF] = { .type = NLA_NESTED },
	[NVS_A_EVENT_TYPE] = { .type = NLA_U32 },
	[NVS_A_EVENT_TS_NS] = { .type = NLA_U64 },
	[NVS_A_GPU_MMIO_READS] = { .type = NLA_U64 },
	[NVS_A_GPU_MEM_HZ] = { .type = NLA_U32 },
};

/* Strings from the kernel end up on terminals: no control characters. */
static void copy_str(char *dst, size_t len, struct nlattr *a)
{
	if (!a) {
		dst[0] = '\0';
		return;
	}
	nla_strlcpy(dst, a, len);
	for (unsigned char *p = (unsigned char *)dst; *p; ++p)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static int parse_sensor(struct nlattr *nest, struct nvs_sensor_info *s)
{
	struct nlattr *tb[NVS_SENSOR_A_MAX_ATTR + 1];

	if (nla_parse_nested(tb, NVS_SENSOR_A_MAX_ATTR, nest, sensor_policy) < 0 ||
	    !tb[NVS_SENSOR_A_ID] || !tb[NVS_SENSOR_A_LABEL])
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->id = nla_get_u32(tb[NVS_SENSOR_A_ID]);
	copy_str(s->label, sizeof(s->label), tb[NVS_SENSOR_A_LABEL]);
	s->valid = tb[NVS_SENSOR_A_VALID] && nla_get_u8(tb[NVS_SENSOR_A_VALID]) &&
		   tb[NVS_SENSOR_A_MC];
	if (tb[NVS_SENSOR_A_MC])
		s->mc = (int32_t)nla_get_u32(tb[NVS_SENSOR_A_MC]);
	s->has_peak = tb[NVS_SENSOR_A_PEAK];
	if (s->has_peak)
		s->peak = (int32_t)nla_get_u32(tb[NVS_SENSOR_A_PEAK]);
	s->has_low = tb[NVS_SENSOR_A_LOW];
	if (s->has_low)
		s->low = (int32_t)nla_get_u32(tb[NVS_SENSOR_A_LOW]);
	s->has_max = tb[NVS_SENSOR_A_MAX];
	if (s->has_max)
		s->max = (int32_t)nla_get_u32(tb[NVS_SENSOR_A_MAX]);
	s->alarm = tb[NVS_SENSOR_A_ALARM] && nla_get_u8(tb[NVS_SENSOR_A_ALARM]);
	return 0;
}

static int parse_gpu_attrs(struct nlattr **tb, struct nvs_gpu_info *g)
{
	struct nlattr *a;
	int rem, ret;

	if (!tb[NVS_A_GPU_INDEX])
		return -EBADMSG;
	memset(g, 0, sizeof(*g));
	g->index = nla_get_u32(tb[NVS_A_GPU_INDEX]);
	copy_str(g->busid, sizeof(g->busid), tb[NVS_A_GPU_BUSID]);
	copy_str(g->chip, sizeof(g->chip), tb[NVS_A_GPU_CHIP]);
	copy_str(g->name, sizeof(g->name), tb[NVS_A_GPU_NAME]);
	copy_str(g->reason, sizeof(g->reason), tb[NVS_A_GPU_STATUS_REASON]);
	if (tb[NVS_A_GPU_VENDOR])
		g->vendor = nla_get_u16(tb[NVS_A_GPU_VENDOR]);
	if (tb[NVS_A_GPU_DEVICE])
		g->device = nla_get_u16(tb[NVS_A_GPU_DEVICE]);
	if (tb[NVS_A_GPU_STATUS])
		g->status = nla_get_u32(tb[NVS_A_GPU_STATUS]);
	if (tb[NVS_A_GPU_SAMPLE_HZ])
		g->sample_hz = nla_get_u32(tb[NVS_A_GPU_SAMPLE_HZ]);
	if (tb[NVS_A_GPU_FLAGS])
		g->flags = nla_get_u32(tb[NVS_A_GPU_FLAGS]);
	if (tb[NVS_A_GPU_SAMPLES])
		g->samples = nla_get_u64(tb[NVS_A_GPU_SAMPLES]);
	if (tb[NVS_A_GPU_UNAVAILABLE])
		g->unavailable = nla_get_u64(tb[NVS_A_GPU_UNAVAILABLE]);
	if (tb[NVS_A_GPU_CROSSINGS])
		g->crossings = nla_get_u64(tb[NVS_A_GPU_CROSSINGS]);
	if (tb[NVS_A_GPU_LAST_SAMPLE_NS])
		g->last_sample_ns = nla_get_u64(tb[NVS_A_GPU_LAST_SAMPLE_NS]);
	if (tb[NVS_A_GPU_SEQ])
		g->seq = nla_get_u64(tb[NVS_A_GPU_SEQ]);
	if (!tb[NVS_A_GPU_SENSORS])
		return 0;
	nla_for_each_nested(a, tb[NVS_A_GPU_SENSORS], rem) {
		if (nla_type(a) != NVS_A_GPU_SENSOR)
			continue;
		if (g->nsensors >= NVS_MAX_SENSORS)
			return -EBADMSG;
		ret = parse_sensor(a, &g->sensors[g->nsensors]);
		if (ret)
			return ret;
		g->nsensors++;
	}
	return 0;
}

struct gpu_list {
	struct nvs_gpu_info *v;
	size_t n, cap;
};

static int parse_gpu(struct req *rq, struct nlmsghdr *nlh)
{
	struct nlattr *tb[NVS_A_MAX + 1];
	struct gpu_list *l = rq->arg;

	if (genlmsg_parse(nlh, 0, tb, NVS_A_MAX, gpu_policy) < 0)
		return -EBADMSG;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct nvs_gpu_info *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (parse_gpu_attrs(tb, &l->v[l->n]))
		return -EBADMSG;
	l->n++;
	return 0;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct nvs_gpu_info *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int bad_reply(struct nvs_handle *h, int ret)
{
	if (ret == -EBADMSG)
		return set_err(h, EBADMSG, "Malformed reply from the kernel: check that the "
			       "module (`modinfo nvsidecar') and this tool (%s) come from "
			       "the same release", NVS_TOOL_VERSION);
	return ret;
}

int nvs_gpu_list(struct nvs_handle *h, struct nvs_gpu_info **gpus, size_t *n)
{
	struct gpu_list l = { 0 };
	int ret = -EINTR;

	*gpus = NULL;
	*n = 0;
	for (int i = 0; i < DUMP_RETRIES && ret == -EINTR; ++i) {
		l.n = 0;
		ret = transact(h, NVS_CMD_GPU_GET, true, NULL, NULL, parse_gpu, &l);
	}
	if (ret == -EINTR)
		ret = set_err(h, EAGAIN, "The GPU list kept changing while it was read (hotplug?): try again");
	if (ret) {
		free(l.v);
		return bad_reply(h, ret);
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_gpu);
	*gpus = l.v;
	*n = l.n;
	return 0;
}

int nvs_gpu_get(struct nvs_handle *h, uint32_t index, struct nvs_gpu_info *gpu)
{
	struct gpu_list l = { 0 };
	int ret;

	ret = transact(h, NVS_CMD_GPU_GET, false, put_index, &index, parse_gpu, &l);
	if (!ret && l.n != 1)
		ret = set_err(h, EBADMSG, "Expected one GPU in the reply, got %zu", l.n);
	if (!ret)
		*gpu = l.v[0];
	else if (ret == -ENODEV && !h->err[0])
		set_err(h, ENODEV, "No GPU with index %u", index);
	free(l.v);
	return bad_reply(h, ret);
}

struct budget_reply {
	struct nvs_gpu_budget b;
	unsigned int n;
};

static int parse_budget(struct req *rq, struct nlmsghdr *nlh)
{
	struct nlattr *tb[NVS_A_MAX + 1];
	struct budget_reply *br = rq->arg;
	struct nvs_gpu_budget *b = &br->b;

	if (br->n++)
		return -EBADMSG;	/* a do gets one reply */
	if (genlmsg_parse(nlh, 0, tb, NVS_A_MAX, gpu_policy) < 0 ||
	    !tb[NVS_A_GPU_INDEX] || !tb[NVS_A_GPU_SAMPLE_HZ])
		return -EBADMSG;
	memset(b, 0, sizeof(*b));
	b->index = nla_get_u32(tb[NVS_A_GPU_INDEX]);
	b->sample_hz = nla_get_u32(tb[NVS_A_GPU_SAMPLE_HZ]);
	b->has_mem_hz = tb[NVS_A_GPU_MEM_HZ];
	if (b->has_mem_hz)
		b->mem_hz = nla_get_u32(tb[NVS_A_GPU_MEM_HZ]);
	b->has_mmio_reads = tb[NVS_A_GPU_MMIO_READS];
	if (b->has_mmio_reads)
		b->mmio_reads = nla_get_u64(tb[NVS_A_GPU_MMIO_READS]);
	return 0;
}

int nvs_gpu_budget_get(struct nvs_handle *h, uint32_t index, struct nvs_gpu_budget *b)
{
	struct budget_reply br = { 0 };
	int ret;

	ret = transact(h, NVS_CMD_GPU_GET, false, put_index, &index, parse_budget, &br);
	if (!ret && (br.n != 1 || br.b.index != index))
		ret = set_err(h, EBADMSG, "Expected gpu%u alone in the reply", index);
	else if (ret == -ENODEV && !h->err[0])
		set_err(h, ENODEV, "No GPU with index %u", index);
	if (!ret)
		*b = br.b;
	return bad_reply(h, ret);
}

struct samples_req {
	uint32_t gpu;
	uint64_t since;
};

static int put_samples_req(struct nl_msg *msg, const void *arg)
{
	const struct samples_req *r = arg;

	if (nla_put_u32(msg, NVS_A_GPU_INDEX, r->gpu) < 0)
		return -1;
	return nla_put_u64(msg, NVS_A_SAMPLES_SINCE, r->since);
}

static struct nla_policy sample_policy[NVS_SAMPLE_A_MAX + 1] = {
	[NVS_SAMPLE_A_SEQ] = { .type = NLA_U64 },
	[NVS_SAMPLE_A_TS_NS] = { .type = NLA_U64 },
	[NVS_SAMPLE_A_VALID] = { .type = NLA_U32 },
	[NVS_SAMPLE_A_VALUES] = { .type = NLA_UNSPEC },
};

struct samples_ctx {
	struct nvs_samples *s;
	bool got_lost;
	bool got_next;
};

static int parse_samples(struct req *rq, struct nlmsghdr *nlh)
{
	struct nlattr *tb[NVS_A_MAX + 1], *st[NVS_SAMPLE_A_MAX + 1], *a;
	struct samples_ctx *c = rq->arg;
	struct nvs_samples *s = c->s;
	int rem;

	if (genlmsg_parse(nlh, 0, tb, NVS_A_MAX, gpu_policy) < 0)
		return -EBADMSG;
	if (tb[NVS_A_SAMPLES_NSENSORS]) {
		s->nsensors = nla_get_u32(tb[NVS_A_SAMPLES_NSENSORS]);
		if (s->nsensors > NVS_MAX_SENSORS)
			return -EBADMSG;
	}
	/*
	 * LOST comes with the first message and again with any later one
	 * whose read found more overwritten; NEXT ends the last message.
	 */
	if (tb[NVS_A_SAMPLES_LOST]) {
		s->lost += nla_get_u64(tb[NVS_A_SAMPLES_LOST]);
		c->got_lost = true;
	}
	if (tb[NVS_A_SAMPLES_NEXT]) {
		s->next = nla_get_u64(tb[NVS_A_SAMPLES_NEXT]);
		c->got_next = true;
	}
	if (!tb[NVS_A_SAMPLES])
		return 0;
	nla_for_each_nested(a, tb[NVS_A_SAMPLES], rem) {
		struct nvs_sample_entry *e;
		int vlen;

		if (nla_type(a) != NVS_A_SAMPLE)
			continue;
		if (nla_parse_nested(st, NVS_SAMPLE_A_MAX, a, sample_policy) < 0 ||
		    !st[NVS_SAMPLE_A_SEQ] || !st[NVS_SAMPLE_A_VALUES])
			return -EBADMSG;
		if (s->count == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 256;
			struct nvs_sample_entry *v = realloc(s->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->v = v;
			s->cap = cap;
		}
		e = &s->v[s->count];
		memset(e, 0, sizeof(*e));
		e->seq = nla_get_u64(st[NVS_SAMPLE_A_SEQ]);
		if (st[NVS_SAMPLE_A_TS_NS])
			e->ts_ns = nla_get_u64(st[NVS_SAMPLE_A_TS_NS]);
		if (st[NVS_SAMPLE_A_VALID])
			e->valid = nla_get_u32(st[NVS_SAMPLE_A_VALID]);
		vlen = nla_len(st[NVS_SAMPLE_A_VALUES]);
		if (vlen % 4 || vlen / 4 > NVS_MAX_SENSORS)
			return -EBADMSG;
		memcpy(e->mc, nla_data(st[NVS_SAMPLE_A_VALUES]), vlen);
		/* Only values that were sent can be valid. */
		if (vlen / 4 < 32)
			e->valid &= (1U << (vlen / 4)) - 1;
		if (s->count && e->seq <= s->v[s->count - 1].seq)
			return -EBADMSG;
		s->count++;
	}
	return 0;
}

int nvs_samples_get(struct nvs_handle *h, uint32_t gpu, uint64_t since,
		    struct nvs_samples *s)
{
	struct samples_req r = { .gpu = gpu, .since = since };
	struct samples_ctx c = { .s = s };
	int ret = -EINTR;

	/* Samples are not hotplug-sensitive, but a retry is harmless. */
	for (int i = 0; i < DUMP_RETRIES && ret == -EINTR; ++i) {
		s->gpu = gpu;
		s->count = 0;
		s->lost = 0;
		s->next = since;
		c.got_lost = c.got_next = false;
		ret = transact(h, NVS_CMD_SAMPLES_GET, true, put_samples_req, &r,
			       parse_samples, &c);
	}
	if (ret == -EINTR)
		ret = set_err(h, EAGAIN, "The sample dump of gpu%u kept being interrupted", gpu);
	if (ret == -ENODEV && !h->err[0])
		set_err(h, ENODEV, "No GPU with index %u", gpu);
	if (!ret && !c.got_next && s->count)
		s->next = s->v[s->count - 1].seq + 1;
	return bad_reply(h, ret);
}

void nvs_samples_free(struct nvs_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

struct set_args {
	const struct nvs_set_req *req;
	const struct nvs_set_ext *ext;
};

static int put_set(struct nl_msg *msg, const void *arg)
{
	const struct set_args *sa = arg;
	const struct nvs_set_req *r = sa->req;
	struct nlattr *nest;

	if (nla_put_u32(msg, NVS_A_GPU_INDEX, r->gpu) < 0)
		return -1;
	if (r->set_sample_hz && nla_put_u32(msg, NVS_A_GPU_SAMPLE_HZ, r->sample_hz) < 0)
		return -1;
	if (r->thresh_sensor) {
		nest = nla_nest_start(msg, NVS_A_SET_THRESHOLD);
		if (!nest || nla_put_string(msg, NVS_THRESH_A_SENSOR, r->thresh_sensor) < 0)
			return -1;
		if (r->thresh_clear ? nla_put_flag(msg, NVS_THRESH_A_CLEAR) < 0 :
		    nla_put_u32(msg, NVS_THRESH_A_MAX, (uint32_t)r->thresh_mc) < 0)
			return -1;
		nla_nest_end(msg, nest);
	}
	if (r->reset_peaks && nla_put_flag(msg, NVS_A_SET_RESET_PEAKS) < 0)
		return -1;
	if (sa->ext && sa->ext->set_mem_hz &&
	    nla_put_u32(msg, NVS_A_GPU_MEM_HZ, sa->ext->mem_hz) < 0)
		return -1;
	return 0;
}

int nvs_gpu_set_ext(struct nvs_handle *h, const struct nvs_set_req *req,
		    const struct nvs_set_ext *ext)
{
	struct set_args sa = { .req = req, .ext = ext };
	int ret = transact(h, NVS_CMD_GPU_SET, false, put_set, &sa, NULL, NULL);

	/*
	 * The genetlink core refuses a caller without CAP_NET_ADMIN with a
	 * bare EPERM; the module refuses a raised rate without CAP_SYS_ADMIN
	 * with an extack that names it. h->err holds that text, so it is
	 * copied out before being formatted into h->err again.
	 */
	if (ret == -EPERM) {
		char why[sizeof(h->err)];

		snprintf(why, sizeof(why), "%s", h->err);
		if (why[0] && strcmp(why, strerror(EPERM)))
			set_err(h, EPERM, "%s: run it as root", why);
		else
			set_err(h, EPERM, "Changing settings needs root (CAP_NET_ADMIN)");
	}
	return ret;
}

int nvs_gpu_set(struct nvs_handle *h, const struct nvs_set_req *req)
{
	return nvs_gpu_set_ext(h, req, NULL);
}

static struct nla_policy dmabuf_policy[NVS_DMABUF_A_MAX + 1] = {
	[NVS_DMABUF_A_STEP] = { .type = NLA_U32 },
	[NVS_DMABUF_A_ERRNO] = { .type = NLA_U32 },
	[NVS_DMABUF_A_EXPORTER] = { .type = NLA_STRING },
	[NVS_DMABUF_A_IMPORTER] = { .type = NLA_STRING },
	[NVS_DMABUF_A_SIZE] = { .type = NLA_U64 },
	[NVS_DMABUF_A_NENTS] = { .type = NLA_U32 },
	[NVS_DMABUF_A_MAPPED] = { .type = NLA_U64 },
	[NVS_DMABUF_A_SEG_MIN] = { .type = NLA_U64 },
	[NVS_DMABUF_A_SEG_MAX] = { .type = NLA_U64 },
	[NVS_DMABUF_A_VERDICT] = { .type = NLA_U32 },
	[NVS_DMABUF_A_BAR1_START] = { .type = NLA_U64 },
	[NVS_DMABUF_A_BAR1_LEN] = { .type = NLA_U64 },
	[NVS_DMABUF_A_P2P] = { .type = NLA_U32 },
	[NVS_DMABUF_A_P2P_DISTANCE] = { .type = NLA_U32 },
};

struct dmabuf_req {
	int fd;
	const char *importer;
	int gpu;
};

static int put_dmabuf(struct nl_msg *msg, const void *arg)
{
	const struct dmabuf_req *r = arg;

	if (nla_put_u32(msg, NVS_A_DMABUF_FD, (uint32_t)r->fd) < 0)
		return -1;
	if (r->importer && nla_put_string(msg, NVS_A_DMABUF_IMPORTER, r->importer) < 0)
		return -1;
	if (r->gpu >= 0 && nla_put_u32(msg, NVS_A_GPU_INDEX, (uint32_t)r->gpu) < 0)
		return -1;
	return 0;
}

static int parse_dmabuf(struct req *rq, struct nlmsghdr *nlh)
{
	struct nlattr *tb[NVS_A_MAX + 1], *d[NVS_DMABUF_A_MAX + 1];
	struct nvs_dmabuf_result *r = rq->arg;

	if (genlmsg_parse(nlh, 0, tb, NVS_A_MAX, gpu_policy) < 0 || !tb[NVS_A_DMABUF] ||
	    nla_parse_nested(d, NVS_DMABUF_A_MAX, tb[NVS_A_DMABUF], dmabuf_policy) < 0)
		return -EBADMSG;
	memset(r, 0, sizeof(*r));
	for (int i = 1; i <= NVS_DMABUF_A_MAX; ++i)
		if (d[i])
			r->present |= 1U << i;
#define U32(A, F) do { if (d[A]) r->F = nla_get_u32(d[A]); } while (0)
#define U64(A, F) do { if (d[A]) r->F = nla_get_u64(d[A]); } while (0)
	U32(NVS_DMABUF_A_STEP, step);
	U32(NVS_DMABUF_A_ERRNO, err);
	U64(NVS_DMABUF_A_SIZE, size);
	U32(NVS_DMABUF_A_NENTS, nents);
	U64(NVS_DMABUF_A_MAPPED, mapped);
	U64(NVS_DMABUF_A_SEG_MIN, seg_min);
	U64(NVS_DMABUF_A_SEG_MAX, seg_max);
	U32(NVS_DMABUF_A_VERDICT, verdict);
	U64(NVS_DMABUF_A_BAR1_START, bar1_start);
	U64(NVS_DMABUF_A_BAR1_LEN, bar1_len);
	U32(NVS_DMABUF_A_P2P, p2p);
	U32(NVS_DMABUF_A_P2P_DISTANCE, p2p_distance);
#undef U32
#undef U64
	copy_str(r->exporter, sizeof(r->exporter), d[NVS_DMABUF_A_EXPORTER]);
	copy_str(r->importer, sizeof(r->importer), d[NVS_DMABUF_A_IMPORTER]);
	return 0;
}

int nvs_dmabuf_probe(struct nvs_handle *h, int fd, const char *importer,
		     int gpu, struct nvs_dmabuf_result *res)
{
	struct dmabuf_req r = { .fd = fd, .importer = importer, .gpu = gpu };
	int ret;

	memset(res, 0, sizeof(*res));
	ret = transact(h, NVS_CMD_DMABUF_PROBE, false, put_dmabuf, &r, parse_dmabuf, res);
	if (!ret && !res->present)
		ret = set_err(h, EBADMSG, "The kernel acknowledged the probe but sent no result");
	if (ret == -EPERM)
		set_err(h, EPERM, "Probing a dma-buf needs root (CAP_NET_ADMIN)");
	return bad_reply(h, ret);
}

/* Events: a raw netlink socket joined to the group. */
int nvs_events_subscribe(struct nvs_handle *h)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int grp, fd, rcvbuf = 1 << 20;

	if (h->evfd >= 0)
		return 0;
	grp = genl_ctrl_resolve_grp(h->sk, NVS_GENL_NAME, NVS_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return set_err(h, ENOENT, "The nvsidecar family has no `%s' multicast group: "
			       "is the loaded module older than this tool?", NVS_GENL_MCGRP_EVENTS);
	h->evbuf = malloc(EVENT_BUF);
	if (!h->evbuf)
		return set_err(h, ENOMEM, "Unable to allocate the event buffer");
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return set_err(h, errno, "Unable to open a netlink socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp, sizeof(grp)) < 0) {
		int err = errno;

		close(fd);
		return set_err(h, err, "Unable to join the nvsidecar events group: %s",
			       strerror(err));
	}
	h->evfd = fd;
	h->mcgrp = grp;
	h->evlen = h->evoff = 0;
	return 0;
}

int nvs_event_fd(const struct nvs_handle *h)
{
	return h->evfd;
}

static int parse_event(struct nvs_handle *h, struct nlmsghdr *nlh, struct nvs_event_info *ev)
{
	struct nlattr *tb[NVS_A_MAX + 1];

	if (nlh->nlmsg_type != h->family || genlmsg_parse(nlh, 0, tb, NVS_A_MAX, gpu_policy) < 0)
		return -EBADMSG;
	if (((struct genlmsghdr *)NLMSG_DATA(nlh))->cmd != NVS_CMD_EVENT || !tb[NVS_A_EVENT_TYPE])
		return -EBADMSG;
	memset(ev, 0, sizeof(*ev));
	ev->type = nla_get_u32(tb[NVS_A_EVENT_TYPE]);
	if (tb[NVS_A_EVENT_TS_NS])
		ev->ts_ns = nla_get_u64(tb[NVS_A_EVENT_TS_NS]);
	ev->has_gpu = tb[NVS_A_GPU_INDEX];
	if (ev->has_gpu)
		ev->gpu = nla_get_u32(tb[NVS_A_GPU_INDEX]);
	copy_str(ev->busid, sizeof(ev->busid), tb[NVS_A_GPU_BUSID]);
	ev->has_status = tb[NVS_A_GPU_STATUS];
	if (ev->has_status)
		ev->status = nla_get_u32(tb[NVS_A_GPU_STATUS]);
	copy_str(ev->reason, sizeof(ev->reason), tb[NVS_A_GPU_STATUS_REASON]);
	if (tb[NVS_A_GPU_SENSOR]) {
		if (parse_sensor(tb[NVS_A_GPU_SENSOR], &ev->sensor))
			return -EBADMSG;
		ev->has_sensor = true;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nvs_event_recv(struct nvs_handle *h, struct nvs_event_info *ev, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	if (h->evfd < 0)
		return set_err(h, EBADF, "Not subscribed to events: call nvs_events_subscribe() first");
	for (;;) {
		struct pollfd pfd = { .fd = h->evfd, .events = POLLIN };
		ssize_t r;
		int wait;

		/* Drain what an earlier read left, skipping other traffic. */
		while (h->evoff < h->evlen) {
			struct nlmsghdr *nlh = (struct nlmsghdr *)(h->evbuf + h->evoff);
			int left = (int)(h->evlen - h->evoff);

			if (!NLMSG_OK(nlh, left)) {
				h->evoff = h->evlen;
				break;
			}
			h->evoff += NLMSG_ALIGN(nlh->nlmsg_len);
			if (!parse_event(h, nlh, ev))
				return 0;
		}
		wait = deadline < 0 ? -1 : (int)(deadline - now_ms());
		if (deadline >= 0 && wait < 0)
			wait = 0;
		r = poll(&pfd, 1, wait);
		if (r < 0)
			return set_err(h, errno, "Unable to wait for events: %s", strerror(errno));
		if (!r)
			return set_err(h, ETIMEDOUT, "No event within %d ms", timeout_ms);
		r = recv(h->evfd, h->evbuf, EVENT_BUF, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				if (errno == EINTR)
					return set_err(h, EINTR, "Interrupted");
				continue;
			}
			if (errno == ENOBUFS)
				return set_err(h, ENOBUFS, "Events were lost: the reader fell behind "
					       "and the socket buffer overflowed");
			return set_err(h, errno, "Unable to read events: %s", strerror(errno));
		}
		h->evlen = (size_t)r;
		h->evoff = 0;
	}
}
