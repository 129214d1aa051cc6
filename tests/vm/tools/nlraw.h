/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Raw generic netlink for the test tools (nlfuzz, bench/netlink-bench):
 * they are built without libnl (tests/vm/vmlib.sh vm_tools), and the fuzzer
 * needs to write bytes that no library would produce anyway.
 */
#ifndef NLRAW_H
#define NLRAW_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "nvsidecar.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define NLRAW_BUF (256 * 1024)

struct nlraw {
	int fd;
	uint32_t seq;
	uint16_t family;
	unsigned char buf[NLRAW_BUF];
};

static inline struct nlattr *nlraw_put(struct nlmsghdr *nlh, uint16_t type,
				       const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len && data)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	else if (len)
		memset((char *)a + NLA_HDRLEN, 0, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static inline struct nlmsghdr *nlraw_msg(void *buf, uint16_t type, uint16_t flags,
					 uint32_t seq, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = buf;
	struct genlmsghdr *g = NLMSG_DATA(nlh);

	memset(nlh, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	nlh->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

static inline int nlraw_send(struct nlraw *nl, const void *msg, size_t len)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	return sendto(nl->fd, msg, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
}

/* Receives one datagram; 0 on timeout, -errno on error. */
static inline ssize_t nlraw_recv(struct nlraw *nl, int timeout_ms)
{
	struct pollfd p = { .fd = nl->fd, .events = POLLIN };
	ssize_t r;

	r = poll(&p, 1, timeout_ms);
	if (r <= 0)
		return r < 0 ? -errno : 0;
	r = recv(nl->fd, nl->buf, sizeof(nl->buf), MSG_DONTWAIT);
	return r < 0 ? -errno : r;
}

static inline int nlraw_open(struct nlraw *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, rcv = 8 << 20;

	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0 || bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	setsockopt(nl->fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	nl->seq = 1;
	return 0;
}

/* Family id of NVS_GENL_NAME through the controller; -ENOENT if absent. */
static inline int nlraw_resolve(struct nlraw *nl)
{
	unsigned char msg[128] __attribute__((aligned(4)));
	struct nlmsghdr *nlh = nlraw_msg(msg, GENL_ID_CTRL, NLM_F_REQUEST, ++nl->seq,
					 CTRL_CMD_GETFAMILY, 1);
	ssize_t r;
	int ret;

	nlraw_put(nlh, CTRL_ATTR_FAMILY_NAME, NVS_GENL_NAME, sizeof(NVS_GENL_NAME));
	ret = nlraw_send(nl, msg, nlh->nlmsg_len);
	if (ret)
		return ret;
	r = nlraw_recv(nl, 2000);
	if (r <= 0)
		return r ? (int)r : -ETIMEDOUT;
	for (nlh = (struct nlmsghdr *)nl->buf; NLMSG_OK(nlh, r); nlh = NLMSG_NEXT(nlh, r)) {
		struct nlattr *a;
		int len;

		if (nlh->nlmsg_type == NLMSG_ERROR)
			return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
		a = (struct nlattr *)((char *)NLMSG_DATA(nlh) + GENL_HDRLEN);
		len = nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
		while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len) {
			if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID) {
				nl->family = *(uint16_t *)((char *)a + NLA_HDRLEN);
				return 0;
			}
			len -= NLA_ALIGN(a->nla_len);
			a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
		}
	}
	return -ENOENT;
}

/* Walks the attributes in [a, a + len). */
#define nlraw_for_each(a, start, len, rem)					\
	for ((a) = (struct nlattr *)(start), (rem) = (int)(len);		\
	     (rem) >= NLA_HDRLEN && (a)->nla_len >= NLA_HDRLEN &&		\
	     (a)->nla_len <= (rem);						\
	     (rem) -= NLA_ALIGN((a)->nla_len),					\
	     (a) = (struct nlattr *)((char *)(a) + NLA_ALIGN((a)->nla_len)))

struct nlraw_snapshot {
	unsigned int gpus;
	unsigned int sensors;	/* valid ones */
	int64_t sum_mc;		/* of the valid ones, to compare with hwmon */
};

/*
 * One GPU_GET dump, every sensor decoded: what a monitoring agent does per
 * scrape. Retries an interrupted dump (hotplug) like libnvsidecar.
 */
static inline int nlraw_snapshot(struct nlraw *nl, struct nlraw_snapshot *snap)
{
	unsigned char msg[64] __attribute__((aligned(4)));
	struct nlmsghdr *nlh;
	uint32_t seq;
	bool intr;
	int ret;

	for (int attempt = 0; attempt < 8; ++attempt) {
		seq = ++nl->seq;
		nlh = nlraw_msg(msg, nl->family, NLM_F_REQUEST | NLM_F_DUMP, seq, NVS_CMD_GPU_GET,
				NVS_GENL_VERSION);
		memset(snap, 0, sizeof(*snap));
		intr = false;
		ret = nlraw_send(nl, msg, nlh->nlmsg_len);
		if (ret)
			return ret;
		for (;;) {
			ssize_t r = nlraw_recv(nl, 5000);

			if (r <= 0)
				return r ? (int)r : -ETIMEDOUT;
			for (nlh = (struct nlmsghdr *)nl->buf; NLMSG_OK(nlh, r); nlh = NLMSG_NEXT(nlh, r)) {
				struct nlattr *a, *s, *f;
				int rem, srem, frem;

				if (nlh->nlmsg_seq != seq)
					continue;
				if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
					intr = true;
				if (nlh->nlmsg_type == NLMSG_ERROR)
					return ((struct nlmsgerr *)NLMSG_DATA(nlh))->error;
				if (nlh->nlmsg_type == NLMSG_DONE)
					goto done;
				snap->gpus++;
				nlraw_for_each(a, (char *)NLMSG_DATA(nlh) + GENL_HDRLEN,
					       nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, rem) {
					if ((a->nla_type & NLA_TYPE_MASK) != NVS_A_GPU_SENSORS)
						continue;
					nlraw_for_each(s, (char *)a + NLA_HDRLEN, a->nla_len - NLA_HDRLEN, srem) {
						int valid = 0;
						int32_t mc = 0;

						nlraw_for_each(f, (char *)s + NLA_HDRLEN,
							       s->nla_len - NLA_HDRLEN, frem) {
							void *d = (char *)f + NLA_HDRLEN;

							if (f->nla_type == NVS_SENSOR_A_VALID)
								valid = *(uint8_t *)d;
							else if (f->nla_type == NVS_SENSOR_A_MC)
								memcpy(&mc, d, 4);
						}
						if (valid) {
							snap->sensors++;
							snap->sum_mc += mc;
						}
					}
				}
			}
		}
done:
		if (!intr)
			return 0;
	}
	return -EINTR;
}

#endif /* NLRAW_H */
