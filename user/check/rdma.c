// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The RDMA test protocol behind `nvsidecar rdma' (check/rdma.h): can this
 * NIC register this memory (host, or GPU memory through dma-buf or
 * peermem), does data written and read over RDMA arrive intact, and how
 * fast? Every transfer carries a sequence-stamped pattern and is compared
 * byte for byte and by checksum at its destination (GPU memory is copied
 * back to check). An engine: it judges and never prints.
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/rdma.h"
#include "lib/env.h"
#include "lib/exit.h"

static int fail(struct nvs_rdma_run *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct nvs_rdma_run *r, int code, const char *fmt, ...)
{
	va_list ap;

	if (!r->exit) {
		r->exit = code;
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static uint64_t deadline(const struct nvs_rdma_run *r)
{
	return nvs_now_ns() + (uint64_t)r->o.timeout_s * 1000000000ULL;
}

static uint64_t csum_mix(uint64_t acc, uint64_t c)
{
	acc = (acc ^ c) * 0x100000001b3ULL;
	return acc ^ (acc >> 31);
}

static size_t stride_of(size_t size)
{
	return (size + 63) & ~(size_t)63;
}

/* --- the receiving side's half of a batch: fill or verify n slots --- */

static void serve(struct nvs_rdma_run *r, struct nvs_rside *s, const struct nvs_rctl *q, struct nvs_rctl *a)
{
	char err[256] = "";
	uint64_t acc = 0, c;
	uint8_t got = 0, want = 0;
	size_t bad = 0;

	memset(a, 0, sizeof(*a));
	a->type = NVS_RCTL_REPLY;
	if ((q->n && (q->stride < q->size || q->n > s->mem.len / q->stride)) || !q->size) {
		a->status = EINVAL;
		snprintf(a->text, sizeof(a->text), "batch of %u x %llu bytes does not fit the %zu byte buffer",
			 q->n, (unsigned long long)q->size, s->mem.len);
		return;
	}
	for (uint32_t i = 0; i < q->n; i++) {
		size_t off = i * q->stride;
		int ret;

		if (q->type == NVS_RCTL_PREP) {
			ret = nvs_rmem_fill(&s->mem, off, q->size, q->seq0 + i, &c, err, sizeof(err));
		} else {
			if (r->corrupt && nvs_rmem_corrupt(&s->mem, off, q->size, err, sizeof(err)) == 0)
				r->corrupt = false;
			ret = nvs_rmem_check(&s->mem, off, q->size, q->seq0 + i, &c, &bad, &got, &want,
					     err, sizeof(err));
			if (ret == -EILSEQ && !a->status) {
				a->status = EILSEQ;
				a->bad_seq = q->seq0 + i;
				a->bad_off = bad;
				a->bad_got = got;
				a->bad_want = want;
			}
		}
		if (ret && ret != -EILSEQ) {
			a->status = (uint32_t)-ret;
			snprintf(a->text, sizeof(a->text), "%s", err);
			return;
		}
		acc = csum_mix(acc, c);
	}
	a->csum = acc;
	a->n = q->n;
	if (q->type == NVS_RCTL_CHECK && !a->status && acc != q->csum) {
		a->status = EILSEQ;
		snprintf(a->text, sizeof(a->text), "checksum mismatch: sent %016llx, received %016llx",
			 (unsigned long long)q->csum, (unsigned long long)acc);
	}
}

static const char *wc_fail(struct nvs_rdma_run *r, const struct ibv_wc *wc, const char *what)
{
	fail(r, NVS_EX_TRANSFER, "%s failed: %s (status %d): %s", what, ibv_wc_status_str(wc->status),
	     wc->status, nvs_wc_status_hint(wc->status));
	return NULL;
}

/* Sends q to the peer and waits for its reply (two nodes), or serves it. */
static int ask(struct nvs_rdma_run *r, const struct nvs_rctl *q, struct nvs_rctl *a)
{
	struct ibv_wc wc;
	uint64_t dl = deadline(r);
	bool sent = false, got = false;

	if (r->o.loopback) {
		serve(r, &r->b, q, a);
		return 0;
	}
	r->a.ctl[1] = *q;
	if (nvs_post_ctl_send(&r->a))
		return fail(r, NVS_EX_TRANSFER, "Unable to post a control message: %s", strerror(errno));
	while (!sent || !got) {
		int ret = nvs_wait_wc(&r->a, dl, true, r->ch->fd, &wc);

		if (ret == 0)
			return fail(r, NVS_EX_TRANSFER, "No answer from the server within %d s: it hung, died, or the link is down",
				    r->o.timeout_s);
		if (ret == -ENOTCONN)
			return fail(r, NVS_EX_TRANSFER, "The server disconnected in the middle of the test");
		if (ret < 0)
			return fail(r, NVS_EX_TRANSFER, "Unable to poll the completion queue: %s", strerror(-ret));
		if (wc.status != IBV_WC_SUCCESS) {
			wc_fail(r, &wc, wc.opcode & IBV_WC_RECV ? "Receiving the server's answer" :
				"Sending a control message");
			return -1;
		}
		if (wc.opcode & IBV_WC_RECV)
			got = true;
		else if (wc.opcode == IBV_WC_SEND)
			sent = true;
	}
	*a = r->a.ctl[0];
	if (nvs_post_ctl_recv(&r->a))
		return fail(r, NVS_EX_TRANSFER, "Unable to post a receive buffer: %s", strerror(errno));
	if (a->magic != NVS_RCTL_MAGIC || a->type != NVS_RCTL_REPLY)
		return fail(r, NVS_EX_TRANSFER, "The server sent a malformed control message");
	return 0;
}

static void report_bad(struct nvs_rdma_run *r, bool write, size_t size, uint64_t seq, uint64_t off,
		       uint8_t got, uint8_t want, const char *text)
{
	if (text && *text && !off && !got && !want)
		fail(r, NVS_EX_FAIL, "RDMA %s of %zu bytes (transfer %llu): %s", write ? "WRITE" : "READ",
		     size, (unsigned long long)seq, text);
	else
		fail(r, NVS_EX_FAIL,
		     "RDMA %s of %zu bytes (transfer %llu) arrived corrupted: byte %llu is 0x%02x, expected 0x%02x",
		     write ? "WRITE" : "READ", size, (unsigned long long)seq, (unsigned long long)off, got, want);
}

/* n transfers of size into n distinct slots; serial: one in flight (latency). */
static int batch(struct nvs_rdma_run *r, struct nvs_rdma_result *res, size_t size, uint32_t n, bool serial)
{
	struct nvs_rside *s = &r->a;
	size_t stride = stride_of(size);
	struct nvs_rctl q = { .magic = NVS_RCTL_MAGIC }, a;
	uint64_t seq0 = r->seq, acc = 0, c, t0, t, dl;
	uint32_t posted = 0, done = 0, inflight = 0, limit;
	char err[256];
	struct ibv_wc wc;

	r->seq += n;
	q.n = n;
	q.size = size;
	q.stride = stride;
	q.seq0 = seq0;
	if (res->write) {
		for (uint32_t i = 0; i < n; i++) {
			if (nvs_rmem_fill(&s->mem, i * stride, size, seq0 + i, &c, err, sizeof(err)))
				return fail(r, NVS_EX_FAIL, "%s", err);
			acc = csum_mix(acc, c);
		}
	} else {
		q.type = NVS_RCTL_PREP;
		if (ask(r, &q, &a))
			return -1;
		if (a.status)
			return fail(r, NVS_EX_TRANSFER, "The peer could not prepare the READ source: %s", a.text);
	}
	limit = serial ? 1 : (res->write ? s->depth : s->max_rd);
	t0 = nvs_now_ns();
	dl = t0 + (uint64_t)r->o.timeout_s * 1000000000ULL;
	while (done < n) {
		while (posted < n && inflight < limit) {
			int ret = nvs_post_rdma(s, res->write, posted * stride, r->raddr + posted * stride,
						r->rkey, (uint32_t)size, posted);

			if (ret)
				return fail(r, NVS_EX_TRANSFER, "Unable to post an RDMA %s: %s",
					    res->write ? "WRITE" : "READ", strerror(-ret));
			posted++;
			inflight++;
		}
		int ret = nvs_wait_wc(s, dl, false, -1, &wc);

		if (ret == 0)
			return fail(r, NVS_EX_TRANSFER,
				    "RDMA %s of %zu bytes: no completion within %d s (%u of %u done): the peer or the link stopped answering",
				    res->write ? "WRITE" : "READ", size, r->o.timeout_s, done, n);
		if (ret < 0)
			return fail(r, NVS_EX_TRANSFER, "Unable to poll the completion queue: %s", strerror(-ret));
		if (wc.status != IBV_WC_SUCCESS) {
			char what[64];

			snprintf(what, sizeof(what), "RDMA %s of %zu bytes", res->write ? "WRITE" : "READ", size);
			wc_fail(r, &wc, what);
			return -1;
		}
		if (wc.wr_id >= (1ULL << 60))
			continue;	/* a late control completion */
		done++;
		inflight--;
		dl = nvs_now_ns() + (uint64_t)r->o.timeout_s * 1000000000ULL;
	}
	t = nvs_now_ns() - t0;
	if (serial) {
		res->lat_ns += t;
		res->lat_n += n;
	} else {
		res->bw_ns += t;
		res->bytes += (uint64_t)size * n;
	}
	res->done += n;

	if (res->write) {
		q.type = NVS_RCTL_CHECK;
		q.csum = acc;
		if (ask(r, &q, &a))
			return -1;
		if (a.status == EILSEQ) {
			report_bad(r, true, size, a.bad_seq, a.bad_off, a.bad_got, a.bad_want, a.text);
			return -1;
		}
		if (a.status)
			return fail(r, NVS_EX_TRANSFER, "The peer could not verify the data: %s", a.text);
		res->verified += n;
		return 0;
	}
	acc = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t bad = 0;
		uint8_t got = 0, want = 0;
		int ret;

		if (r->corrupt && !nvs_rmem_corrupt(&s->mem, i * stride, size, err, sizeof(err)))
			r->corrupt = false;
		ret = nvs_rmem_check(&s->mem, i * stride, size, seq0 + i, &c, &bad, &got, &want, err, sizeof(err));
		if (ret == -EILSEQ) {
			report_bad(r, false, size, seq0 + i, bad, got, want, NULL);
			return -1;
		}
		if (ret)
			return fail(r, NVS_EX_FAIL, "%s", err);
		acc = csum_mix(acc, c);
	}
	if (acc != a.csum)
		return fail(r, NVS_EX_FAIL, "RDMA READ of %zu bytes: checksum mismatch: sent %016llx, received %016llx",
			    size, (unsigned long long)a.csum, (unsigned long long)acc);
	res->verified += n;
	return 0;
}

static int sweep(struct nvs_rdma_run *r)
{
	size_t cap = r->a.mem.len < r->rlen ? r->a.mem.len : r->rlen;

	for (int op = 0; op < 2; op++) {
		if ((op == 0 && !r->o.do_write) || (op == 1 && !r->o.do_read))
			continue;
		for (size_t i = 0; i < r->o.nsizes; i++) {
			struct nvs_rdma_result *res = &r->res[r->nres++];
			size_t size = r->o.sizes[i], slots = cap / stride_of(size);
			unsigned long left = (unsigned long)r->o.iters;

			res->write = op == 0;
			res->size = size;
			if (!slots)
				return fail(r, NVS_EX_USAGE, "Size %zu does not fit the %zu byte buffer (raise --buffer on both sides)",
					    size, cap);
			while (left) {
				uint32_t n = (uint32_t)(left < slots ? left : slots);

				if (batch(r, res, size, n, false))
					return -1;
				left -= n;
			}
			if (batch(r, res, size, (uint32_t)(slots < NVS_RDMA_LAT_ITERS ? slots : NVS_RDMA_LAT_ITERS), true))
				return -1;
		}
	}
	return 0;
}

/* --- setup --- */

static int cuda_setup(struct nvs_rdma_run *r)
{
	char err[256], busid[32];
	CUresult cr;

	if (r->o.mem == NVS_RMEM_HOST && r->o.peer_mem == NVS_RMEM_HOST)
		return 0;
	if ((r->o.mem == NVS_RMEM_HOST || r->o.src == NVS_RMEM_SRC_UDMABUF) &&
	    (!r->o.loopback || r->o.peer_mem == NVS_RMEM_HOST || r->o.src == NVS_RMEM_SRC_UDMABUF))
		return 0;
	if (nvs_cuda_load(&r->cu, r->o.cuda_lib, err, sizeof(err)))	/* a --cuda-lib named: a bad argument */
		return fail(r, r->o.cuda_lib ? NVS_EX_USAGE : NVS_EX_MISSING, "%s", err);
	r->cu_loaded = true;
	cr = r->cu.cuInit(0);
	if (!cr)
		cr = r->cu.cuDeviceGet(&r->cudev, r->o.gpu);
	if (cr)
		return fail(r, NVS_EX_MISSING, "Unable to open GPU %d: %s", r->o.gpu,
			    nvs_cuda_strerror(&r->cu, cr, err, sizeof(err)));
	if (!r->cu.cuDevicePrimaryCtxRetain || !r->cu.cuCtxSetCurrent)
		return fail(r, NVS_EX_MISSING, "This libcuda lacks cuDevicePrimaryCtxRetain or cuCtxSetCurrent");
	cr = r->cu.cuDevicePrimaryCtxRetain(&r->cuctx, r->cudev);
	if (!cr)
		cr = r->cu.cuCtxSetCurrent(r->cuctx);
	if (cr) {
		r->cuctx = NULL;
		/* a job holds it: its own code, so that doctor --full never reads the text */
		return fail(r, nvs_cuda_held(&r->cu, cr, r->cudev) ? NVS_EX_BUSY : NVS_EX_FAIL,
			    "Unable to create a CUDA context on GPU %d: %s", r->o.gpu,
			    nvs_cuda_strerror(&r->cu, cr, err, sizeof(err)));
	}
	if (r->cu.cuDeviceGetPCIBusId && !r->cu.cuDeviceGetPCIBusId(busid, sizeof(busid), r->cudev)) {
		for (char *p = busid; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		snprintf(r->gpu_bdf, sizeof(r->gpu_bdf), "%s", busid);
	}
	return 0;
}

static int mem_setup(struct nvs_rdma_run *r, struct nvs_rside *s, enum nvs_rmem_kind k)
{
	char err[512];

	int ret = nvs_rmem_alloc(&s->mem, k, r->o.src, r->o.buffer, r->cu_loaded ? &r->cu : NULL, err, sizeof(err));

	/* -EOPNOTSUPP: libcuda refused the export (the GeForce gate) */
	if (ret)
		return fail(r, ret == -EOPNOTSUPP ? NVS_EX_GATE : ret == -ENOENT ? NVS_EX_MISSING : NVS_EX_FAIL,
			    "%s", err);
	if (nvs_rmem_register(&s->mem, s->pd, err, sizeof(err)))
		return fail(r, NVS_EX_REFUSED, "Memory registration refused: %s", err);
	return 0;
}

static int run_loopback(struct nvs_rdma_run *r)
{
	char name[64], name2[64], err[512];

	if (nvs_rdev_choose(r->o.dev, r->gpu_bdf[0] ? r->gpu_bdf : NULL, name, sizeof(name), r->why,
			    sizeof(r->why), err, sizeof(err)))
		return fail(r, NVS_EX_MISSING, "%s", err);
	snprintf(name2, sizeof(name2), "%s", r->o.peer_dev ? r->o.peer_dev : name);
	snprintf(r->peer_why, sizeof(r->peer_why), "%s", r->o.peer_dev ? "chosen with --peer-dev" : "same device (two queue pairs)");
	if (nvs_rside_open(&r->a, name, 0, err, sizeof(err)) ||
	    nvs_rside_open(&r->b, name2, 0, err, sizeof(err)))
		return fail(r, NVS_EX_FAIL, "%s", err);
	if (nvs_rside_setup(&r->a, err, sizeof(err)) || nvs_rside_setup(&r->b, err, sizeof(err)))
		return fail(r, NVS_EX_FAIL, "%s", err);
	if (mem_setup(r, &r->a, r->o.mem) || mem_setup(r, &r->b, r->o.peer_mem))
		return -1;
	if (nvs_rside_pair(&r->a, &r->b, err, sizeof(err)))
		return fail(r, NVS_EX_CONNECT, "%s", err);
	r->raddr = r->b.mem.addr;
	r->rkey = r->b.mem.mr->rkey;
	r->rlen = r->b.mem.len;
	return sweep(r);
}

/* Waits for one rdma_cm event of type want on the run's channel. */
static int cm_wait(struct nvs_rdma_run *r, enum rdma_cm_event_type want, int secs, struct rdma_cm_event **out,
		   const char *what)
{
	uint64_t dl = nvs_now_ns() + (uint64_t)secs * 1000000000ULL;
	struct rdma_cm_event *ev;

	for (;;) {
		struct pollfd p = { .fd = r->ch->fd, .events = POLLIN };
		uint64_t now = nvs_now_ns();
		int ret;

		if (now >= dl)
			return fail(r, NVS_EX_CONNECT, "%s: nothing happened within %d s", what, secs);
		ret = poll(&p, 1, (int)((dl - now) / 1000000 + 1));
		if (ret < 0 && errno != EINTR)
			return fail(r, NVS_EX_CONNECT, "%s: poll: %s", what, strerror(errno));
		if (ret <= 0)
			continue;
		if (rdma_get_cm_event(r->ch, &ev))
			return fail(r, NVS_EX_CONNECT, "%s: %s", what, strerror(errno));
		if (ev->event == want) {
			*out = ev;
			return 0;
		}
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			/* status is the InfiniBand CM reject reason, not an errno */
			fail(r, NVS_EX_CONNECT, "%s: refused (%s, CM reason %d): %s", what,
			     rdma_event_str(ev->event), ev->status,
			     ev->status == 8 ? "nobody listens on that port: is `nvsidecar rdma --server' running there with the same --port?" :
			     "the server or its kernel refused the connection (a server busy with another client, or a route check failing on its side)");
		else
			fail(r, NVS_EX_CONNECT, "%s: %s%s%s", what, rdma_event_str(ev->event),
			     ev->status ? ": " : "",
			     ev->status ? strerror(ev->status < 0 ? -ev->status : ev->status) : "");
		rdma_ack_cm_event(ev);
		return -1;
	}
}

static int resolve(struct nvs_rdma_run *r, const char *host, const char *port, struct addrinfo **ai)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = host ? 0 : AI_PASSIVE };
	int ret = getaddrinfo(host, port, &hints, ai);

	if (ret)
		return fail(r, NVS_EX_CONNECT, "Unable to resolve `%s': %s", host ? host : "(any)", gai_strerror(ret));
	return 0;
}

static void say_cm_dev(struct nvs_rdma_run *r, const char *who)
{
	struct sockaddr *sa = rdma_get_local_addr(r->a.id);
	char ip[64] = "?", ifn[IF_NAMESIZE + 1] = "?";
	struct ifaddrs *ifs, *i;

	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
	if (sa && sa->sa_family == AF_INET && !getifaddrs(&ifs)) {
		for (i = ifs; i; i = i->ifa_next) {
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
			    ((struct sockaddr_in *)sa)->sin_addr.s_addr) {
				snprintf(ifn, sizeof(ifn), "%s", i->ifa_name);
				break;
			}
		}
		freeifaddrs(ifs);
	}
	snprintf(r->why, sizeof(r->why), "chosen by rdma_cm: %s uses local address %s on %s", who, ip, ifn);
}

static int check_dev(struct nvs_rdma_run *r)
{
	const char *got = ibv_get_device_name(r->a.ctx->device);

	if (r->o.dev && strcmp(r->o.dev, got))
		return fail(r, NVS_EX_USAGE, "The address maps to RDMA device %s, not --dev %s: use the IP of a port on %s",
			    got, r->o.dev, r->o.dev);
	return 0;
}

/* Both sides: our hello as private data, as many reads in flight as the device allows. */
static void conn_param(const struct nvs_rdma_run *r, struct rdma_conn_param *cp, const struct nvs_rhello *mine)
{
	*cp = (struct rdma_conn_param){
		.private_data = mine,
		.private_data_len = sizeof(*mine),
		.responder_resources = (uint8_t)r->a.max_rd,
		.initiator_depth = (uint8_t)r->a.max_rd,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
}

static int run_server(struct nvs_rdma_run *r)
{
	struct addrinfo *ai = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { 0 };
	struct nvs_rhello h = { 0 }, mine = { 0 };
	char err[512];
	int ret;

	if (resolve(r, r->o.bind, r->o.port, &ai))
		return -1;
	ret = rdma_create_id(r->ch, &r->listen_id, NULL, RDMA_PS_TCP);
	if (!ret)
		ret = rdma_bind_addr(r->listen_id, ai->ai_addr);
	freeaddrinfo(ai);
	if (ret)
		return fail(r, NVS_EX_CONNECT, "Unable to bind %s port %s: %s%s", r->o.bind ? r->o.bind : "any address",
			    r->o.port, strerror(errno),
			    errno == EADDRINUSE ? " (another server uses this port: pick another --port)" :
			    errno == EADDRNOTAVAIL ? " (no RDMA port has this address)" : "");
	if (rdma_listen(r->listen_id, 1))
		return fail(r, NVS_EX_CONNECT, "Unable to listen: %s", strerror(errno));
	if (r->waiting)
		r->waiting(r);
	if (cm_wait(r, RDMA_CM_EVENT_CONNECT_REQUEST, r->o.wait_s, &ev, "Waiting for a client"))
		return -1;
	r->a.id = ev->id;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(h))
		memcpy(&h, ev->param.conn.private_data, sizeof(h));
	rdma_ack_cm_event(ev);
	if (h.magic != NVS_RCTL_MAGIC || h.version != NVS_RCTL_VERSION) {
		rdma_reject(r->a.id, NULL, 0);
		return fail(r, NVS_EX_CONNECT, "A client connected that is not nvsidecar rdma (or another version)");
	}
	r->a.ctx = r->a.id->verbs;
	if (nvs_rside_setup(&r->a, err, sizeof(err)))
		return fail(r, NVS_EX_FAIL, "%s", err);
	say_cm_dev(r, r->o.bind ? r->o.bind : "the address the client reached");
	if (check_dev(r) || mem_setup(r, &r->a, r->o.mem))
		return rdma_reject(r->a.id, NULL, 0), -1;
	if (nvs_post_ctl_recv(&r->a))
		return fail(r, NVS_EX_FAIL, "Unable to post a receive buffer: %s", strerror(errno));
	mine = (struct nvs_rhello){ NVS_RCTL_MAGIC, NVS_RCTL_VERSION, r->a.mem.addr, r->a.mem.len,
				    r->a.mem.mr->rkey, (uint32_t)r->o.mem };
	conn_param(r, &cp, &mine);
	if (rdma_accept(r->a.id, &cp))
		return fail(r, NVS_EX_CONNECT, "Unable to accept the client: %s", strerror(errno));
	if (cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, r->o.timeout_s, &ev, "Accepting the client"))
		return -1;
	rdma_ack_cm_event(ev);
	for (;;) {
		struct ibv_wc wc;
		struct nvs_rctl q;
		bool got = false;
		/* the client may verify a large READ batch between messages */
		uint64_t dl = nvs_now_ns() + (uint64_t)r->o.timeout_s * 3 * 1000000000ULL;

		while (!got) {
			ret = nvs_wait_wc(&r->a, dl, true, r->ch->fd, &wc);
			if (ret == 0)
				return fail(r, NVS_EX_TRANSFER, "The client went silent for %d s: it hung, died, or the link is down",
					    r->o.timeout_s * 3);
			if (ret == -ENOTCONN)
				return fail(r, NVS_EX_TRANSFER, "The client disconnected in the middle of the test");
			if (ret < 0)
				return fail(r, NVS_EX_TRANSFER, "Unable to poll the completion queue: %s", strerror(-ret));
			if (wc.status != IBV_WC_SUCCESS) {
				wc_fail(r, &wc, "Talking to the client");
				return -1;
			}
			got = wc.opcode & IBV_WC_RECV;
		}
		q = r->a.ctl[0];
		if (nvs_post_ctl_recv(&r->a))
			return fail(r, NVS_EX_TRANSFER, "Unable to post a receive buffer: %s", strerror(errno));
		if (q.magic != NVS_RCTL_MAGIC)
			return fail(r, NVS_EX_TRANSFER, "The client sent a malformed control message");
		if (q.type == NVS_RCTL_BYE)
			break;
		serve(r, &r->a, &q, &r->a.ctl[1]);
		if (q.type == NVS_RCTL_CHECK) {
			struct nvs_rdma_result *res = r->nres && r->res[r->nres - 1].size == q.size ?
					     &r->res[r->nres - 1] : r->nres < 2 * NVS_RDMA_MAX_SIZES ? &r->res[r->nres++] : NULL;

			if (res) {
				res->write = true;
				res->size = q.size;
				res->done += q.n;
				if (!r->a.ctl[1].status)
					res->verified += q.n;
			}
			if (r->a.ctl[1].status == EILSEQ) {
				struct nvs_rctl *a = &r->a.ctl[1];

				report_bad(r, true, q.size, a->bad_seq, a->bad_off, a->bad_got, a->bad_want, a->text);
			}
		}
		if (nvs_post_ctl_send(&r->a))
			return fail(r, NVS_EX_TRANSFER, "Unable to answer the client: %s", strerror(errno));
	}
	return r->exit ? -1 : 0;
}

static int run_client(struct nvs_rdma_run *r)
{
	struct addrinfo *dst = NULL, *src = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { 0 };
	struct nvs_rhello h = { 0 }, mine = { NVS_RCTL_MAGIC, NVS_RCTL_VERSION, 0, 0, 0, 0 };
	struct nvs_rctl bye = { .magic = NVS_RCTL_MAGIC, .type = NVS_RCTL_BYE };
	char err[512];
	int ret, ms = r->o.timeout_s * 1000;

	if (resolve(r, r->o.client, r->o.port, &dst) || (r->o.bind && resolve(r, r->o.bind, NULL, &src)))
		goto out;
	if (rdma_create_id(r->ch, &r->a.id, NULL, RDMA_PS_TCP)) {
		fail(r, NVS_EX_FAIL, "Unable to create an rdma_cm id: %s", strerror(errno));
		goto out;
	}
	ret = rdma_resolve_addr(r->a.id, src ? src->ai_addr : NULL, dst->ai_addr, ms);
	if (ret) {
		fail(r, NVS_EX_CONNECT, "Unable to resolve the RDMA address of %s: %s (no RDMA port can reach it)",
		     r->o.client, strerror(errno));
		goto out;
	}
	if (cm_wait(r, RDMA_CM_EVENT_ADDR_RESOLVED, r->o.timeout_s, &ev, "Resolving the server address"))
		goto out;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(r->a.id, ms)) {
		fail(r, NVS_EX_CONNECT, "Unable to resolve a route to %s: %s", r->o.client, strerror(errno));
		goto out;
	}
	if (cm_wait(r, RDMA_CM_EVENT_ROUTE_RESOLVED, r->o.timeout_s, &ev, "Resolving the route to the server"))
		goto out;
	rdma_ack_cm_event(ev);
	r->a.ctx = r->a.id->verbs;
	if (nvs_rside_setup(&r->a, err, sizeof(err))) {
		fail(r, NVS_EX_FAIL, "%s", err);
		goto out;
	}
	say_cm_dev(r, "the route to the server");
	if (check_dev(r) || mem_setup(r, &r->a, r->o.mem))
		goto out;
	if (nvs_post_ctl_recv(&r->a)) {
		fail(r, NVS_EX_FAIL, "Unable to post a receive buffer: %s", strerror(errno));
		goto out;
	}
	conn_param(r, &cp, &mine);
	if (rdma_connect(r->a.id, &cp)) {
		fail(r, NVS_EX_CONNECT, "Unable to connect to %s: %s", r->o.client, strerror(errno));
		goto out;
	}
	if (cm_wait(r, RDMA_CM_EVENT_ESTABLISHED, r->o.timeout_s, &ev, "Connecting to the server"))
		goto out;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(h))
		memcpy(&h, ev->param.conn.private_data, sizeof(h));
	rdma_ack_cm_event(ev);
	if (h.magic != NVS_RCTL_MAGIC || h.version != NVS_RCTL_VERSION) {
		fail(r, NVS_EX_CONNECT, "The server at %s is not nvsidecar rdma (or another version)", r->o.client);
		goto out;
	}
	r->raddr = h.addr;
	r->rlen = h.len;
	r->rkey = h.rkey;
	r->o.peer_mem = h.kind <= NVS_RMEM_CUDA_PEERMEM ? (enum nvs_rmem_kind)h.kind : NVS_RMEM_HOST;
	if (!sweep(r)) {
		struct ibv_wc wc;

		r->a.ctl[1] = bye;
		/* Let the BYE leave before the disconnect tears the QP down. */
		if (!nvs_post_ctl_send(&r->a))
			nvs_wait_wc(&r->a, deadline(r), true, -1, &wc);
	}
out:
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	return r->exit ? -1 : 0;
}

void nvs_rdma_init(struct nvs_rdma_run *r)
{
	r->a.mem.dmabuf_fd = r->b.mem.dmabuf_fd = -1;
	r->corrupt = nvs_env_rdma_test_corrupt();
}

int nvs_rdma_do(struct nvs_rdma_run *r)
{
	if (!cuda_setup(r)) {
		if (r->o.loopback) {
			run_loopback(r);
		} else {
			r->ch = rdma_create_event_channel();
			if (!r->ch)
				fail(r, NVS_EX_MISSING, "Unable to open the rdma_cm event channel: %s (is rdma_ucm loaded?)",
				     strerror(errno));
			else if (r->o.server)
				run_server(r);
			else
				run_client(r);
		}
	}
	return r->exit;
}

void nvs_rdma_release(struct nvs_rdma_run *r)
{
	if (r->a.id && !r->o.loopback)
		rdma_disconnect(r->a.id);
	nvs_rside_close(&r->a);
	nvs_rside_close(&r->b);
	if (r->a.id)
		rdma_destroy_id(r->a.id);
	if (r->listen_id)
		rdma_destroy_id(r->listen_id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	if (r->cuctx)
		r->cu.cuDevicePrimaryCtxRelease_v2(r->cudev);
	if (r->cu_loaded)
		nvs_cuda_unload(&r->cu);
}
