// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Verbs backend for `nvsidecar rdma': devices, queue pairs, completions
 * with deadlines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/env.h"
#include "sys/pci.h"
#include "sys/rdma_ib.h"

#define WR_CTL_RECV (1ULL << 62)
#define WR_CTL_SEND (1ULL << 61)

uint64_t nvs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void nvs_rdev_bdf(const char *name, char *bdf, size_t len)
{
	char path[256], real[PATH_MAX];
	const char *b;

	bdf[0] = 0;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", name);
	if (!realpath(path, real))
		return;
	b = strrchr(real, '/');
	/* A PCI function's directory is its address: dddd:bb:dd.f */
	if (b && strlen(b + 1) == 12 && b[5] == ':' && b[8] == ':' && b[11] == '.')
		snprintf(bdf, len, "%s", b + 1);
}

static bool port_active(struct ibv_context *ctx, int *port)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	if (ibv_query_device(ctx, &da))
		return false;
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		if (!ibv_query_port(ctx, (uint8_t)p, &pa) && pa.state == IBV_PORT_ACTIVE) {
			*port = p;
			return true;
		}
	}
	return false;
}

int nvs_rdev_choose(const char *want, const char *gpu_bdf, char *name, size_t namelen,
		    char *why, size_t whylen, char *err, size_t errlen)
{
	struct ibv_device **list;
	struct nvs_pci pci = { 0 };
	bool have_pci = false;
	int n, best = -1, best_rank = INT_MAX, gi = -1, port;
	char best_why[256] = "";

	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		if (list)
			ibv_free_device_list(list);
		snprintf(err, errlen, "No RDMA device found (load the NIC driver, or for a test: rdma link add rxe0 type rxe netdev ETH)");
		return -ENODEV;
	}
	if (want) {
		for (int i = 0; i < n; i++) {
			if (!strcmp(ibv_get_device_name(list[i]), want)) {
				snprintf(name, namelen, "%s", want);
				snprintf(why, whylen, "chosen with --dev");
				ibv_free_device_list(list);
				return 0;
			}
		}
		snprintf(err, errlen, "No RDMA device named `%s' (see `rdma link' or ibv_devices)", want);
		ibv_free_device_list(list);
		return -ENODEV;
	}
	if (gpu_bdf) {
		char perr[256];

		have_pci = !nvs_pci_scan(&pci, NULL, NULL, 0, perr, sizeof(perr));
		if (have_pci) {
			const struct nvs_pci_dev *g = nvs_pci_find(&pci, gpu_bdf);

			gi = g ? (int)(g - pci.devs) : -1;
		}
	}
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		const char *dn = ibv_get_device_name(list[i]);
		char bdf[32];
		int rank = 100 + i, lca;

		if (!ctx)
			continue;
		if (!port_active(ctx, &port)) {
			ibv_close_device(ctx);
			continue;
		}
		ibv_close_device(ctx);
		nvs_rdev_bdf(dn, bdf, sizeof(bdf));
		if (gi >= 0 && bdf[0]) {
			const struct nvs_pci_dev *d = nvs_pci_find(&pci, bdf);

			if (d) {
				enum nvs_pci_pair c = nvs_pci_classify(&pci, gi, (int)(d - pci.devs), &lca);

				rank = (int)c * 10 + (i < 10 ? i : 9);
				if (rank < best_rank)
					snprintf(best_why, sizeof(best_why),
						 "nearest the GPU %s by PCI topology: %s (%s), %s",
						 gpu_bdf, nvs_pci_pair_str(c), nvs_pci_pair_desc(c), bdf);
			}
		}
		if (rank < best_rank) {
			if (rank >= 100)
				snprintf(best_why, sizeof(best_why), "%s",
					 gpu_bdf ? "no active RDMA port shares a PCI path with the GPU: first active port" :
					 "no GPU in use: first device with an active port");
			best_rank = rank;
			best = i;
		}
	}
	if (best < 0) {
		snprintf(err, errlen, "No RDMA device has an active port (check the cable and `rdma link')");
		ibv_free_device_list(list);
		if (have_pci)
			nvs_pci_free(&pci);
		return -ENETDOWN;
	}
	snprintf(name, namelen, "%s", ibv_get_device_name(list[best]));
	snprintf(why, whylen, "%s", best_why);
	ibv_free_device_list(list);
	if (have_pci)
		nvs_pci_free(&pci);
	return 0;
}

/* RoCE needs a GID: prefer RoCE v2 with an IPv4 address, as rdma_cm would. */
static void pick_gid(struct nvs_rside *s, int tbl_len)
{
	struct ibv_gid_entry e;
	int best = -1, score = -1;

	for (int i = 0; i < tbl_len; i++) {
		int sc;

		if (ibv_query_gid_ex(s->ctx, (uint32_t)s->port, (uint32_t)i, &e, 0))
			continue;
		sc = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : 1;
		if (!memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			sc += 2;
		if (sc > score) {
			score = sc;
			best = i;
		}
	}
	s->gid_index = best < 0 ? 0 : best;
	ibv_query_gid(s->ctx, (uint8_t)s->port, s->gid_index, &s->gid);
	inet_ntop(AF_INET6, s->gid.raw, s->gid_str, sizeof(s->gid_str));
}

static int query_port(struct nvs_rside *s, char *err, size_t errlen)
{
	struct ibv_port_attr pa;
	struct ibv_device_attr da;

	if (ibv_query_device(s->ctx, &da) || ibv_query_port(s->ctx, (uint8_t)s->port, &pa)) {
		snprintf(err, errlen, "Unable to query %s port %d: %s", s->dev, s->port, strerror(errno));
		return -EIO;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		snprintf(err, errlen, "%s port %d is not active (state %s): check the link and `rdma link'",
			 s->dev, s->port, ibv_port_state_str(pa.state));
		return -ENETDOWN;
	}
	s->lid = pa.lid;
	s->link_layer = pa.link_layer;
	s->mtu = pa.active_mtu;
	s->max_rd = (uint32_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	if (!s->max_rd)
		s->max_rd = 1;
	s->depth = (uint32_t)(da.max_qp_wr < 128 ? da.max_qp_wr : 128);
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET)
		pick_gid(s, pa.gid_tbl_len);
	else
		snprintf(s->gid_str, sizeof(s->gid_str), "lid %u", pa.lid);
	return 0;
}

int nvs_rside_open(struct nvs_rside *s, const char *dev, int port, char *err, size_t errlen)
{
	struct ibv_device **list;
	int n, ret = -ENODEV;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), dev))
			continue;
		s->ctx = ibv_open_device(list[i]);
		ret = s->ctx ? 0 : -errno;
		break;
	}
	if (list)
		ibv_free_device_list(list);
	if (ret) {
		snprintf(err, errlen, "Unable to open RDMA device `%s': %s", dev, strerror(-ret));
		return ret;
	}
	s->own_ctx = true;
	snprintf(s->dev, sizeof(s->dev), "%s", dev);
	if (port <= 0 && !port_active(s->ctx, &port))
		port = 1;
	s->port = port;
	return query_port(s, err, errlen);
}

int nvs_rside_setup(struct nvs_rside *s, char *err, size_t errlen)
{
	struct ibv_qp_init_attr qa = { 0 };
	const char *what;

	if (!s->own_ctx) {
		int ret;

		snprintf(s->dev, sizeof(s->dev), "%s", ibv_get_device_name(s->ctx->device));
		s->port = s->id && s->id->port_num ? s->id->port_num : 1;
		ret = query_port(s, err, errlen);
		if (ret)
			return ret;
	}
	what = "ibv_alloc_pd";
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		goto fail;
	what = "ibv_create_comp_channel";
	s->ch = ibv_create_comp_channel(s->ctx);
	if (!s->ch)
		goto fail;
	what = "ibv_create_cq";
	s->cq = ibv_create_cq(s->ctx, (int)s->depth * 2 + 8, NULL, s->ch, 0);
	if (!s->cq)
		goto fail;
	what = "registering the control buffers";
	if (posix_memalign((void **)&s->ctl, 64, 2 * sizeof(*s->ctl))) {
		s->ctl = NULL;
		errno = ENOMEM;
		goto fail;
	}
	memset(s->ctl, 0, 2 * sizeof(*s->ctl));
	s->ctl_mr = ibv_reg_mr(s->pd, s->ctl, 2 * sizeof(*s->ctl), IBV_ACCESS_LOCAL_WRITE);
	if (!s->ctl_mr)
		goto fail;
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = s->depth + 2;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	what = "creating the queue pair";
	if (s->id) {
		if (rdma_create_qp(s->id, s->pd, &qa))
			goto fail;
		s->qp = s->id->qp;
	} else {
		s->qp = ibv_create_qp(s->pd, &qa);
		if (!s->qp)
			goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "Unable to set up %s: %s failed: %s", s->dev, what, strerror(errno));
	return errno ? -errno : -EIO;
}

void nvs_rside_close(struct nvs_rside *s)
{
	if (s->id && s->qp)
		rdma_destroy_qp(s->id);
	else if (s->qp)
		ibv_destroy_qp(s->qp);
	s->qp = NULL;
	nvs_rmem_free(&s->mem);
	if (s->ctl_mr)
		ibv_dereg_mr(s->ctl_mr);
	free(s->ctl);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->ch)
		ibv_destroy_comp_channel(s->ch);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->own_ctx && s->ctx)
		ibv_close_device(s->ctx);
	s->ctl_mr = NULL;
	s->ctl = NULL;
	s->cq = NULL;
	s->ch = NULL;
	s->pd = NULL;
	s->ctx = NULL;
}

static int to_rts(struct nvs_rside *s, struct nvs_rside *peer, char *err, size_t errlen)
{
	struct ibv_qp_attr a = { 0 };
	const char *st = "INIT";

	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)s->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		goto fail;
	memset(&a, 0, sizeof(a));
	st = "RTR";
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s->mtu < peer->mtu ? s->mtu : peer->mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = peer->qp->qp_num & 0xffffff;
	a.max_dest_rd_atomic = (uint8_t)s->max_rd;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = (uint8_t)s->port;
	a.ah_attr.dlid = peer->lid;
	if (s->link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		goto fail;
	memset(&a, 0, sizeof(a));
	st = "RTS";
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = s->qp->qp_num & 0xffffff;
	a.max_rd_atomic = (uint8_t)peer->max_rd;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "Unable to move the %s queue pair to %s: %s", s->dev, st, strerror(errno));
	return -errno;
}

int nvs_rside_pair(struct nvs_rside *a, struct nvs_rside *b, char *err, size_t errlen)
{
	int ret = to_rts(a, b, err, errlen);

	return ret ? ret : to_rts(b, a, err, errlen);
}

int nvs_post_rdma(struct nvs_rside *s, bool write, uint64_t loff, uint64_t raddr, uint32_t rkey,
		  uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = s->mem.addr + loff, .length = len, .lkey = s->mem.mr->lkey,
	};
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return -ibv_post_send(s->qp, &wr, &bad);
}

int nvs_post_ctl_recv(struct nvs_rside *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&s->ctl[0], .length = sizeof(s->ctl[0]), .lkey = s->ctl_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_CTL_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	return -ibv_post_recv(s->qp, &wr, &bad);
}

int nvs_post_ctl_send(struct nvs_rside *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&s->ctl[1], .length = sizeof(s->ctl[1]), .lkey = s->ctl_mr->lkey,
	};
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = WR_CTL_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	s->ctl[1].magic = NVS_RCTL_MAGIC;
	return -ibv_post_send(s->qp, &wr, &bad);
}

/* Returns true when the rdma_cm connection has gone. */
static bool cm_gone(int cm_fd, struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = cm_fd, .events = POLLIN };
	bool gone = false;

	if (cm_fd < 0 || !id || poll(&p, 1, 0) <= 0)
		return false;
	if (rdma_get_cm_event(id->channel, &ev))
		return false;
	gone = ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
	       ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT;
	rdma_ack_cm_event(ev);
	return gone;
}

/*
 * Test hook (tests/vm/t-rdma.sh): NVS_RDMA_WAKE_DELAY_MS=N sleeps N ms
 * before each wait, so that a completion and the peer's disconnect are both
 * pending when the wait starts, the order a slow or busy host produces.
 */
static void wake_delay(void)
{
	static long ms = -1;

	if (ms < 0)
		ms = nvs_env_rdma_wake_delay_ms();
	if (ms)
		nanosleep(&(struct timespec){ ms / 1000, ms % 1000 * 1000000L }, NULL);
}

int nvs_wait_wc(struct nvs_rside *s, uint64_t deadline, bool block, int cm_fd, struct ibv_wc *wc)
{
	unsigned int spins = 0;

	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n < 0)
			return -EIO;
		if (n)
			return 1;
		/*
		 * Only once the CQ is empty: a peer sends its last message
		 * (the client's BYE) and disconnects at once, and both can be
		 * pending when we wake. The message came first; reap it.
		 */
		if (s->cm_gone)
			return -ENOTCONN;
		if (!block) {
			if (++spins % 256 == 0 && nvs_now_ns() > deadline)
				return 0;
			continue;
		}
		if (ibv_req_notify_cq(s->cq, 0))
			return -EIO;
		n = ibv_poll_cq(s->cq, 1, wc);
		if (n)
			return n < 0 ? -EIO : 1;
		for (;;) {
			struct pollfd p[2] = {
				{ .fd = s->ch->fd, .events = POLLIN },
				{ .fd = cm_fd, .events = POLLIN },
			};
			uint64_t now;
			int ms, r;

			wake_delay();
			now = nvs_now_ns();
			if (now >= deadline)
				return 0;
			ms = (int)((deadline - now) / 1000000 + 1);
			r = poll(p, cm_fd >= 0 ? 2 : 1, ms > 1000 ? 1000 : ms);
			if (r < 0 && errno != EINTR)
				return -errno;
			if (r <= 0)
				continue;
			if ((p[1].revents & POLLIN) && cm_gone(cm_fd, s->id))
				s->cm_gone = true;
			if (p[0].revents & POLLIN) {
				struct ibv_cq *cq;
				void *ctx;

				if (!ibv_get_cq_event(s->ch, &cq, &ctx))
					ibv_ack_cq_events(cq, 1);
			}
			/* Back to the CQ: reap what arrived before a disconnect. */
			if (s->cm_gone || (p[0].revents & POLLIN))
				break;
		}
	}
}

const char *nvs_wc_status_hint(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
		return "the peer stopped answering: it died, or the link is down";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "the peer posted no receive buffer in time";
	case IBV_WC_REM_ACCESS_ERR:
		return "the peer refused the access: a bad rkey or address, or the peer process exited and its memory registration went with it";
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		return "the local memory registration does not cover the buffer";
	case IBV_WC_WR_FLUSH_ERR:
		return "the queue pair had already failed";
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return "the peer could not carry out the request";
	default:
		return "the transfer failed";
	}
}
