// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nlfuzz: sends malformed and random generic netlink messages to the
 * nvsidecar family (raw sockets, no library in the way) and checks that
 * every request that asks for an answer gets one, that the module still
 * answers a valid GPU_GET dump afterwards, and prints a histogram of the
 * answers. The kernel log is checked by the caller (tests/vm/t-netlink.sh).
 *
 * Usage: nlfuzz [-n COUNT] [-s SEED] [-q]
 * Exit status: 0 the module survived and answered, 1 it did not, 2 usage.
 *
 * Kinds of messages (chosen at random per message):
 *   - valid commands with random attributes: unknown types, wrong lengths,
 *     type and flag bits (NLA_F_NESTED, NLA_F_NET_BYTEORDER), empty ones
 *   - the family's nests (sensors, samples, threshold, dma-buf) filled with
 *     garbage, nested too deep, with lengths past their parent
 *   - unknown and reserved commands, the multicast-only EVENT command,
 *     random versions, a non-zero reserved field
 *   - random nlmsg flags (DUMP on doit commands, no REQUEST, ...)
 *   - truncated generic netlink headers and attribute headers, nlmsg_len
 *     past the end of the datagram, several messages in one datagram
 *   - plausible requests with random values (GPU indexes, sample rates,
 *     thresholds, labels, sequence numbers, file descriptors)
 * Plausible GPU_SET requests can change settings: the caller restores them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nlraw.h"

#define MSG_MAX 4096

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible from -s SEED */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ULL) >> 32);
}

static uint32_t below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static void fill_random(void *p, size_t len)
{
	for (size_t i = 0; i < len; ++i)
		((unsigned char *)p)[i] = (unsigned char)rnd();
}

/* A value that parsers tend to get wrong. */
static uint32_t edgy_u32(void)
{
	static const uint32_t v[] = { 0, 1, 2, 7, 8, 31, 32, 33, 49, 50, 1000, 1001, 4096,
				      0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
				      (uint32_t)-40000, (uint32_t)-40001, 200000, 200001 };
	return below(3) ? v[below(sizeof(v) / sizeof(v[0]))] : rnd();
}

static const char *const labels[] = { "hotspot", "average", "ch0", "ch3", "mem0", "mem15",
				      "mem", "", "ch", "hotspot\n", "mem16" };

/* Appends an attribute of random type/length/content, room permitting. */
static void put_random_attr(struct nlmsghdr *nlh, int max_type, int depth)
{
	unsigned char data[96];
	uint16_t type, len;
	struct nlattr *a;

	if (nlh->nlmsg_len + NLA_HDRLEN + sizeof(data) + 64 > MSG_MAX)
		return;
	type = below(4) ? (uint16_t)below(max_type + 3) : (uint16_t)rnd();
	if (!below(8))
		type |= NLA_F_NESTED;
	switch (below(6)) {
	case 0: len = 0; break;
	case 1: len = 1 + below(3); break;
	case 2: len = 4; break;
	case 3: len = 8; break;
	case 4: len = 12 + below(20); break;
	default: len = below(sizeof(data)); break;
	}
	if (len >= 4 && below(2)) {
		uint32_t v = edgy_u32();

		fill_random(data, len);
		memcpy(data, &v, 4);
	} else if (below(4) == 0 && len) {
		const char *l = labels[below(sizeof(labels) / sizeof(labels[0]))];

		memset(data, 0, len);
		memcpy(data, l, strlen(l) < len ? strlen(l) : len);	/* maybe unterminated */
	} else {
		fill_random(data, len);
	}
	if (depth < 4 && below(3) == 0) {
		/* A nest: children first, then fix up the length. */
		a = nlraw_put(nlh, type | (below(2) ? NLA_F_NESTED : 0), NULL, 0);
		for (unsigned int i = below(4); i; --i)
			put_random_attr(nlh, max_type, depth + 1);
		a->nla_len = (uint16_t)((char *)nlh + nlh->nlmsg_len - (char *)a);
		if (!below(6))
			a->nla_len += (uint16_t)(1 + below(64));	/* past its end */
		return;
	}
	a = nlraw_put(nlh, type, data, len);
	if (!below(16))
		a->nla_len = (uint16_t)below(NLA_HDRLEN);		/* shorter than a header */
}

/* A request that the policies should mostly accept, with random values. */
static void put_plausible(struct nlmsghdr *nlh, uint8_t cmd)
{
	uint32_t idx = below(3) ? below(3) : edgy_u32();
	uint64_t since;

	if (below(8))
		nlraw_put(nlh, NVS_A_GPU_INDEX, &idx, 4);
	switch (cmd) {
	case NVS_CMD_SAMPLES_GET:
		since = below(2) ? below(5000) : ((uint64_t)rnd() << 32 | rnd());
		if (below(8))
			nlraw_put(nlh, NVS_A_SAMPLES_SINCE, &since, 8);
		break;
	case NVS_CMD_GPU_SET: {
		/* Sample rates stay low: a fuzzed 1000 Hz would slow the guest. */
		uint32_t hz = below(4) ? 10 + below(90) : edgy_u32();
		int32_t mc = (int32_t)edgy_u32();

		if (hz <= 100 || hz > NVS_SAMPLE_HZ_MAX)
			if (below(2))
				nlraw_put(nlh, NVS_A_GPU_SAMPLE_HZ, &hz, 4);
		if (below(2)) {
			struct nlattr *t = nlraw_put(nlh, NVS_A_SET_THRESHOLD | NLA_F_NESTED, NULL, 0);
			const char *l = labels[below(sizeof(labels) / sizeof(labels[0]))];

			if (below(6))
				nlraw_put(nlh, NVS_THRESH_A_SENSOR, l, (uint16_t)(strlen(l) + below(2)));
			if (below(2))
				nlraw_put(nlh, NVS_THRESH_A_MAX, &mc, below(6) ? 4 : 2);
			if (!below(3))
				nlraw_put(nlh, NVS_THRESH_A_CLEAR, NULL, 0);
			if (!below(4))
				put_random_attr(nlh, NVS_THRESH_A_MAX_ATTR, 1);
			t->nla_len = (uint16_t)((char *)nlh + nlh->nlmsg_len - (char *)t);
		}
		if (!below(3))
			nlraw_put(nlh, NVS_A_SET_RESET_PEAKS, NULL, below(4) ? 0 : 4);
		break;
	}
	case NVS_CMD_DMABUF_PROBE: {
		/* Our own fds (stdio, the socket) and bogus ones: none is a dma-buf. */
		int32_t fd = below(2) ? (int32_t)below(6) : (int32_t)edgy_u32();
		const char *imp[] = { "0000:00:00.0", "0000:03:00.0", "ff:ff.7", "", "x" };

		if (below(6))
			nlraw_put(nlh, NVS_A_DMABUF_FD, &fd, 4);
		if (below(2)) {
			const char *s = imp[below(5)];

			nlraw_put(nlh, NVS_A_DMABUF_IMPORTER, s, (uint16_t)(strlen(s) + below(2)));
		}
		break;
	}
	default:
		break;
	}
	if (!below(4))
		put_random_attr(nlh, NVS_A_MAX, 0);
}

struct stats {
	unsigned long sent, answered, silent, acks, dumps, bufs, send_err;
	unsigned long err[256];
};

/*
 * Builds one message into buf; returns its length (which may differ from
 * nlmsg_len on purpose) and whether an answer is due (*expect).
 */
static size_t build(unsigned char *buf, uint16_t family, uint32_t seq, bool *expect)
{
	uint16_t flags = NLM_F_REQUEST | NLM_F_ACK;
	uint8_t cmd = (uint8_t)(1 + below(NVS_CMD_MAX));
	uint8_t version = NVS_GENL_VERSION;
	struct nlmsghdr *nlh;
	size_t len;

	switch (below(10)) {
	case 0:
		cmd = (uint8_t)rnd();			/* unknown, 0, EVENT */
		break;
	case 1:
		version = (uint8_t)rnd();
		break;
	case 2:
		flags = (uint16_t)(rnd() | NLM_F_ACK);	/* DUMP on a doit, ROOT|MATCH, ... */
		break;
	default:
		if (below(3) == 0)
			flags |= NLM_F_DUMP;
		break;
	}
	nlh = nlraw_msg(buf, family, flags, seq, cmd, version);
	if (!below(20))
		((struct genlmsghdr *)NLMSG_DATA(nlh))->reserved = (uint16_t)rnd();
	if (below(2)) {
		put_plausible(nlh, cmd);
	} else {
		for (unsigned int i = below(6); i; --i)
			put_random_attr(nlh, NVS_A_MAX, 0);
	}
	len = nlh->nlmsg_len;
	/* The kernel answers whatever carries REQUEST|ACK and a whole header. */
	*expect = (flags & (NLM_F_REQUEST | NLM_F_ACK)) == (NLM_F_REQUEST | NLM_F_ACK);
	switch (below(16)) {
	case 0:
		/* Truncated inside the generic netlink header or an attribute. */
		len = NLMSG_HDRLEN + below((uint32_t)(len - NLMSG_HDRLEN + 1));
		nlh->nlmsg_len = (uint32_t)len;
		break;
	case 1:
		/* Shorter than a netlink header, or longer than the datagram. */
		if (below(2)) {
			len = below(NLMSG_HDRLEN);
		} else {
			nlh->nlmsg_len = (uint32_t)(len + 1 + below(1000));
		}
		*expect = false;
		break;
	default:
		break;
	}
	return len;
}

/* Reads answers until seq is answered (ACK, error or DONE) or time is up. */
static void collect(struct nlraw *nl, uint32_t seq, bool expect, struct stats *st)
{
	int timeout = expect ? 3000 : 5;

	for (;;) {
		ssize_t r = nlraw_recv(nl, timeout);
		struct nlmsghdr *nlh;

		if (r == -ENOBUFS) {
			st->bufs++;		/* a dump flooded us: fine, keep going */
			continue;
		}
		if (r <= 0) {
			if (expect)
				st->silent++;
			return;
		}
		for (nlh = (struct nlmsghdr *)nl->buf; NLMSG_OK(nlh, r); nlh = NLMSG_NEXT(nlh, r)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				int e = -((struct nlmsgerr *)NLMSG_DATA(nlh))->error;

				if (e)
					st->err[e > 0 && e < 255 ? e : 255]++;
				else
					st->acks++;
				st->answered++;
				return;
			}
			if (nlh->nlmsg_type == NLMSG_DONE) {
				st->dumps++;
				st->answered++;
				return;
			}
		}
	}
}

int main(int argc, char *argv[])
{
	static unsigned char buf[2 * MSG_MAX] __attribute__((aligned(4)));
	static struct nlraw nl;
	struct nlraw_snapshot snap;
	struct stats st = { 0 };
	unsigned long count = 50000;
	bool quiet = false;
	uint64_t seed = (uint64_t)time(NULL);
	int c, ret;

	while ((c = getopt(argc, argv, "n:s:qh")) != -1) {
		switch (c) {
		case 'n': count = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'q': quiet = true; break;
		default:
			fprintf(c == 'h' ? stdout : stderr, "Usage: nlfuzz [-n COUNT] [-s SEED] [-q]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	rng_state = seed ? seed : 1;
	ret = nlraw_open(&nl);
	if (!ret)
		ret = nlraw_resolve(&nl);
	if (ret) {
		fprintf(stderr, "nlfuzz: cannot reach the nvsidecar family: %s\n", strerror(-ret));
		return 1;
	}
	printf("nlfuzz: seed %llu, %lu messages to family %u\n", (unsigned long long)seed, count,
	       nl.family);
	for (unsigned long i = 0; i < count; ++i) {
		uint32_t seq = ++nl.seq;
		bool expect;
		size_t len = build(buf, nl.family, seq, &expect);

		/* Now and then a second message rides in the same datagram. */
		if (!below(32) && len == NLMSG_ALIGN(len) && len >= NLMSG_HDRLEN &&
		    ((struct nlmsghdr *)buf)->nlmsg_len == len) {
			bool e2;
			size_t l2 = build(buf + len, nl.family, seq, &e2);

			len += l2;
			expect = expect || e2;
		}
		ret = nlraw_send(&nl, buf, len);
		st.sent++;
		/* A refused datagram is an answer too; only a broken socket is fatal. */
		if (ret == -EBADF || ret == -ENOTSOCK) {
			fprintf(stderr, "nlfuzz: send failed after %lu messages: %s\n", i, strerror(-ret));
			return 1;
		}
		if (ret) {
			st.send_err++;
			st.err[-ret < 255 ? -ret : 255]++;
		}
		collect(&nl, seq, expect && !ret, &st);
		if (!quiet && (i + 1) % 10000 == 0)
			printf("nlfuzz: %lu sent, %lu answered\n", i + 1, st.answered);
	}
	printf("nlfuzz: %lu sent, %lu answered (%lu acks, %lu dumps), %lu refused by sendto, "
	       "%lu unanswered, %lu receive overflows\n", st.sent, st.answered, st.acks, st.dumps,
	       st.send_err, st.silent, st.bufs);
	for (int e = 1; e < 256; ++e)
		if (st.err[e])
			printf("nlfuzz:   %-16s %lu\n", e < 255 ? strerror(e) : "other", st.err[e]);

	/* The module must still work: a fresh socket, a valid dump. */
	close(nl.fd);
	ret = nlraw_open(&nl);
	if (!ret)
		ret = nlraw_resolve(&nl);
	if (!ret)
		ret = nlraw_snapshot(&nl, &snap);
	if (ret) {
		fprintf(stderr, "nlfuzz: GPU_GET after fuzzing failed: %s\n", strerror(-ret));
		return 1;
	}
	printf("nlfuzz: GPU_GET afterwards: %u GPUs, %u valid sensors\n", snap.gpus, snap.sensors);
	if (st.silent) {
		fprintf(stderr, "nlfuzz: %lu requests with NLM_F_ACK got no answer\n", st.silent);
		return 1;
	}
	return snap.gpus ? 0 : 1;
}
