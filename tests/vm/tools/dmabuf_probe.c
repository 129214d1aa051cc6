// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Guest-side helper for tests/vm/t-dmabuf.sh: makes one kind of file
 * descriptor (a real dma-buf or something that is not one) and sends
 * NVS_CMD_DMABUF_PROBE for it over a raw generic netlink socket, so that the
 * test controls exactly which fd number and which privileges the kernel
 * sees, and can repeat the probe thousands of times in one process.
 *
 * Usage: dmabuf_probe [--user] [--gpu N] [--importer BDF] [--count N]
 *                     KIND [SIZE]
 *   KIND: udmabuf | heap | nvsexp-iommu | nvsexp-pcie | pipe | eventfd |
 *         memfd | closed | huge
 *   nvsexp-*  a range of SIZE bytes at the start of a BAR of --from BDF
 *             (--bar N, default 2: the simulated GPU's), exported by the
 *             test module nvsexp (tools/nvsexp/) in one of nv-dmabuf.c's
 *             two ways: dma_map_resource(), or raw BAR addresses;
 *             nvsexp-dynamic: mapped, from a dynamic exporter (pins)
 *   --hold MS  a child holds the buffer's reservation lock for MS ms
 *             (nvsexp's NVSEXP_HOLD) while the one probe runs; prints
 *             "elapsed_ms=N" for the probe, then ends the hold
 *   --user    drop to nobody before opening the netlink socket
 *   --count   probe N times (one fd); prints the last result and a tally
 *             "probes=N done=N enodev=N eperm=N einval=N other=N"
 *   --seconds S  with --count: stop after S seconds even if N is not reached
 *   --bufinfo PATH  afterwards, while the fd is still open, counts the
 *             devices /sys/kernel/debug/dma_buf/bufinfo lists as attached
 *             to this buffer: "attached=N" (-1: buffer not listed)
 * Prints one line per result:
 *   ret=R step=S err=E exporter=X importer=I size=N nents=N mapped=N
 *   seg_min=N seg_max=N verdict=V p2p=P dist=D addr=A moved=M msg=EXTACK
 * (addr=absent and moved=-1 when the kernel's reply lacks the attribute)
 * R is 0 or the negative errno of the whole request. Exit status 0 when
 * every request got an answer (whatever it said), 1 on a local failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/dma-heap.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/udmabuf.h>

#include "nvsidecar.h"
#include "nvsexp/nvsexp.h"

#define BUFSZ 16384

struct result {
	int ret;
	uint32_t step, verdict, p2p, addr;
	int32_t err, dist;
	int64_t moved;
	char exporter[64], importer[32], msg[256];
	uint64_t size, mapped, seg_min, seg_max;
	uint32_t nents;
};

static int sock = -1;
static uint32_t seq;

static void die(const char *what)
{
	fprintf(stderr, "dmabuf_probe: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct nlattr *put(struct nlmsghdr *n, int type, const void *data, int len)
{
	struct nlattr *a = (struct nlattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	a->nla_type = (uint16_t)type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, (size_t)len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static int transact(char *buf, void (*cb)(struct nlmsghdr *, void *), void *arg,
		    char *msg, size_t msglen)
{
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	int len, ret = 1;

	if (send(sock, buf, n->nlmsg_len, 0) < 0)
		die("send");
	while (ret > 0) {
		len = (int)recv(sock, buf, BUFSZ, 0);
		if (len < 0)
			die("recv");
		for (n = (struct nlmsghdr *)buf; NLMSG_OK(n, (unsigned int)len); n = NLMSG_NEXT(n, len)) {
			if (n->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(n);

				ret = e->error;
				if (msg && (n->nlmsg_flags & NLM_F_ACK_TLVS)) {
					int off = (n->nlmsg_flags & NLM_F_CAPPED) ?
						  (int)sizeof(*e) : (int)(sizeof(*e) + e->msg.nlmsg_len - sizeof(e->msg));
					struct nlattr *a = (struct nlattr *)((char *)e + NLMSG_ALIGN(off));
					int rem = (int)n->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(off);

					for (; rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem;
					     rem -= NLA_ALIGN(a->nla_len),
					     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
						if (a->nla_type == NLMSGERR_ATTR_MSG)
							snprintf(msg, msglen, "%s", (char *)a + NLA_HDRLEN);
				}
				break;
			}
			if (cb)
				cb(n, arg);
		}
	}
	return ret;
}

static void family_cb(struct nlmsghdr *n, void *arg)
{
	struct genlmsghdr *g = NLMSG_DATA(n);
	struct nlattr *a = (struct nlattr *)((char *)g + GENL_HDRLEN);
	int rem = (int)n->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	for (; rem >= NLA_HDRLEN; rem -= NLA_ALIGN(a->nla_len),
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			*(uint16_t *)arg = *(uint16_t *)((char *)a + NLA_HDRLEN);
}

static uint16_t resolve(void)
{
	char buf[BUFSZ] = { 0 };
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(n);
	uint16_t id = 0;

	n->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	n->nlmsg_type = GENL_ID_CTRL;
	n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	n->nlmsg_seq = ++seq;
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	put(n, CTRL_ATTR_FAMILY_NAME, NVS_GENL_NAME, (int)sizeof(NVS_GENL_NAME));
	if (transact(buf, family_cb, &id, NULL, 0) || !id) {
		fprintf(stderr, "dmabuf_probe: the %s family is not registered\n", NVS_GENL_NAME);
		exit(1);
	}
	return id;
}

static void reply_cb(struct nlmsghdr *n, void *arg)
{
	struct result *r = arg;
	struct genlmsghdr *g = NLMSG_DATA(n);
	struct nlattr *a = (struct nlattr *)((char *)g + GENL_HDRLEN), *d;
	int rem = (int)n->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, drem;

	for (; rem >= NLA_HDRLEN; rem -= NLA_ALIGN(a->nla_len),
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if ((a->nla_type & NLA_TYPE_MASK) != NVS_A_DMABUF)
			continue;
		d = (struct nlattr *)((char *)a + NLA_HDRLEN);
		drem = a->nla_len - NLA_HDRLEN;
		for (; drem >= NLA_HDRLEN; drem -= NLA_ALIGN(d->nla_len),
		     d = (struct nlattr *)((char *)d + NLA_ALIGN(d->nla_len))) {
			void *v = (char *)d + NLA_HDRLEN;
			uint64_t u64;
			uint32_t u32;

			memcpy(&u32, v, 4);
			if (d->nla_len >= NLA_HDRLEN + 8)
				memcpy(&u64, v, 8);
			else
				u64 = u32;
			switch (d->nla_type) {
			case NVS_DMABUF_A_STEP: r->step = u32; break;
			case NVS_DMABUF_A_ERRNO: r->err = (int32_t)u32; break;
			case NVS_DMABUF_A_EXPORTER: snprintf(r->exporter, sizeof(r->exporter), "%s", (char *)v); break;
			case NVS_DMABUF_A_IMPORTER: snprintf(r->importer, sizeof(r->importer), "%s", (char *)v); break;
			case NVS_DMABUF_A_SIZE: r->size = u64; break;
			case NVS_DMABUF_A_NENTS: r->nents = u32; break;
			case NVS_DMABUF_A_MAPPED: r->mapped = u64; break;
			case NVS_DMABUF_A_SEG_MIN: r->seg_min = u64; break;
			case NVS_DMABUF_A_SEG_MAX: r->seg_max = u64; break;
			case NVS_DMABUF_A_VERDICT: r->verdict = u32; break;
			case NVS_DMABUF_A_P2P: r->p2p = u32; break;
			case NVS_DMABUF_A_P2P_DISTANCE: r->dist = (int32_t)u32; break;
			case NVS_DMABUF_A_ADDR: r->addr = u32; break;
			case NVS_DMABUF_A_MOVED: r->moved = u32; break;
			}
		}
	}
}

static void probe(uint16_t fam, int fd, const char *importer, int gpu, struct result *r)
{
	char buf[BUFSZ] = { 0 };
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = NLMSG_DATA(n);
	int32_t fd32 = fd;

	memset(r, 0, sizeof(*r));
	r->addr = UINT32_MAX;	/* absent until the reply says */
	r->moved = -1;
	snprintf(r->exporter, sizeof(r->exporter), "-");
	snprintf(r->importer, sizeof(r->importer), "-");
	n->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	n->nlmsg_type = fam;
	n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	n->nlmsg_seq = ++seq;
	g->cmd = NVS_CMD_DMABUF_PROBE;
	g->version = NVS_GENL_VERSION;
	put(n, NVS_A_DMABUF_FD, &fd32, 4);
	if (importer)
		put(n, NVS_A_DMABUF_IMPORTER, importer, (int)strlen(importer) + 1);
	if (gpu >= 0) {
		uint32_t u = (uint32_t)gpu;

		put(n, NVS_A_GPU_INDEX, &u, 4);
	}
	r->ret = transact(buf, reply_cb, r, r->msg, sizeof(r->msg));
}

static const char *name(const char *const *v, size_t n, uint32_t i)
{
	return i < n && v[i] ? v[i] : "?";
}

static void print(const struct result *r)
{
	static const char *const verdicts[] = { "unknown", "bar1", "system-ram", "elsewhere", "mixed" };
	static const char *const p2ps[] = { "unknown", "allowed", "refused", "not-applicable" };
	static const char *const addrs[] = { "unknown", "direct", "iova", "bus", "untranslated", "mixed" };

	printf("ret=%d step=%u err=%d exporter=%s importer=%s size=%llu nents=%u mapped=%llu "
	       "seg_min=%llu seg_max=%llu verdict=%s p2p=%s dist=%d addr=%s moved=%lld msg=%s\n",
	       r->ret, r->step, r->err, r->exporter, r->importer, (unsigned long long)r->size,
	       r->nents, (unsigned long long)r->mapped, (unsigned long long)r->seg_min,
	       (unsigned long long)r->seg_max, name(verdicts, 5, r->verdict),
	       name(p2ps, 4, r->p2p), r->dist,
	       r->addr == UINT32_MAX ? "absent" : name(addrs, 6, r->addr), (long long)r->moved,
	       r->msg[0] ? r->msg : "-");
}

static const char *from;	/* --from: the device whose BAR nvsexp exports */
static unsigned int from_bar = 2;

static int make_fd(const char *kind, unsigned long long size)
{
	int fd, dev, p[2];

	if (!strncmp(kind, "nvsexp-", 7)) {
		struct nvsexp_export e = { .bar = from_bar, .size = size };

		if (!strcmp(kind + 7, "iommu"))
			e.mode = NVSEXP_MODE_IOMMU;
		else if (!strcmp(kind + 7, "pcie"))
			e.mode = NVSEXP_MODE_PCIE;
		else if (!strcmp(kind + 7, "dynamic"))
			e.mode = NVSEXP_MODE_DYNAMIC;
		else
			die("nvsexp kinds are nvsexp-iommu and nvsexp-pcie");
		if (!from || strlen(from) >= sizeof(e.bdf))
			die("nvsexp-* needs --from BDF");
		memcpy(e.bdf, from, strlen(from) + 1);
		dev = open("/dev/nvsexp", O_RDWR | O_CLOEXEC);
		if (dev < 0)
			die("/dev/nvsexp (load tools/nvsexp/nvsexp.ko)");
		fd = ioctl(dev, NVSEXP_EXPORT, &e);
		if (fd < 0)
			die("NVSEXP_EXPORT");
		close(dev);
		return fd;
	}

	if (!strcmp(kind, "udmabuf")) {
		struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
		int memfd = memfd_create("t-dmabuf", MFD_ALLOW_SEALING);

		if (memfd < 0 || ftruncate(memfd, (off_t)size) < 0 ||
		    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
			die("memfd");
		dev = open("/dev/udmabuf", O_RDWR);
		if (dev < 0)
			die("/dev/udmabuf");
		c.memfd = (uint32_t)memfd;
		fd = ioctl(dev, UDMABUF_CREATE, &c);
		if (fd < 0)
			die("UDMABUF_CREATE");
		close(dev);
		close(memfd);
		return fd;
	}
	if (!strcmp(kind, "heap")) {
		struct dma_heap_allocation_data a = { .len = size, .fd_flags = O_RDWR | O_CLOEXEC };

		dev = open("/dev/dma_heap/system", O_RDONLY);
		if (dev < 0)
			die("/dev/dma_heap/system");
		if (ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &a) < 0)
			die("DMA_HEAP_IOCTL_ALLOC");
		close(dev);
		return (int)a.fd;
	}
	if (!strcmp(kind, "pipe")) {
		if (pipe(p) < 0)
			die("pipe");
		return p[0];
	}
	if (!strcmp(kind, "eventfd")) {
		fd = eventfd(0, 0);
		if (fd < 0)
			die("eventfd");
		return fd;
	}
	if (!strcmp(kind, "memfd")) {
		fd = memfd_create("t-dmabuf-plain", 0);
		if (fd < 0 || ftruncate(fd, 4096) < 0)
			die("memfd");
		return fd;
	}
	if (!strcmp(kind, "closed")) {
		/* High enough that the netlink socket opened later cannot reuse it. */
		p[0] = eventfd(0, 0);
		if (p[0] < 0 || (fd = fcntl(p[0], F_DUPFD, 1000)) < 0)
			die("eventfd");
		close(p[0]);
		close(fd);
		return fd;
	}
	if (!strcmp(kind, "huge"))
		return 0x7fffffff;
	fprintf(stderr, "dmabuf_probe: unknown kind `%s'\n", kind);
	exit(1);
}

/* A child that holds fd's reservation lock for ms; returns once it does. */
static pid_t hold(int fd, unsigned int ms)
{
	struct nvsexp_hold h = { .fd = fd, .ms = ms };
	struct timespec tick = { 0, 1000000 };
	char c = '0';
	pid_t pid;
	int dev, i, p;

	dev = open("/dev/nvsexp", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die("/dev/nvsexp (load tools/nvsexp/nvsexp.ko)");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		_exit(ioctl(dev, NVSEXP_HOLD, &h) ? 1 : 0);
	close(dev);
	for (i = 0; i < 10000 && c != '1'; i++) {
		p = open("/sys/module/nvsexp/parameters/holding", O_RDONLY);
		if (p < 0 || read(p, &c, 1) != 1)
			die("/sys/module/nvsexp/parameters/holding");
		close(p);
		if (c != '1')
			nanosleep(&tick, NULL);
	}
	if (c != '1') {
		fprintf(stderr, "dmabuf_probe: the lock holder never took the lock\n");
		exit(1);
	}
	return pid;
}

/* The "Total N devices attached" of the bufinfo block whose ino is ours. */
static int attached(const char *path, int fd)
{
	char line[512];
	struct stat st;
	int mine = 0, n = -1;
	FILE *f;

	if (fstat(fd, &st) < 0 || !(f = fopen(path, "r")))
		die(path);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long size, ino;
		unsigned int flags, mode;
		long count;
		char exp[64];

		if (sscanf(line, "%llu %x %x %ld %63s %llu", &size, &flags, &mode, &count, exp, &ino) == 6) {
			mine = ino == (unsigned long long)st.st_ino;
			continue;
		}
		if (mine && sscanf(line, "Total %d devices attached", &n) == 1)
			break;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	const char *importer = NULL, *kind = NULL, *bufinfo = NULL;
	unsigned long long size = 4096, count = 1, i, ok = 0, enodev = 0, eperm = 0, einval = 0,
			   fail = 0;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int gpu = -1, user = 0, one = 1, fd, a, hold_ms = 0;
	pid_t holder = 0;
	double seconds = 0;
	struct timespec t0, t1;
	struct result r;
	uint16_t fam;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--user"))
			user = 1;
		else if (!strcmp(argv[a], "--gpu") && a + 1 < argc)
			gpu = atoi(argv[++a]);
		else if (!strcmp(argv[a], "--importer") && a + 1 < argc)
			importer = argv[++a];
		else if (!strcmp(argv[a], "--seconds") && a + 1 < argc)
			seconds = atof(argv[++a]);
		else if (!strcmp(argv[a], "--hold") && a + 1 < argc)
			hold_ms = atoi(argv[++a]);
		else if (!strcmp(argv[a], "--from") && a + 1 < argc)
			from = argv[++a];
		else if (!strcmp(argv[a], "--bar") && a + 1 < argc)
			from_bar = (unsigned int)atoi(argv[++a]);
		else if (!strcmp(argv[a], "--bufinfo") && a + 1 < argc)
			bufinfo = argv[++a];
		else if (!strcmp(argv[a], "--count") && a + 1 < argc)
			count = strtoull(argv[++a], NULL, 0);
		else if (!kind)
			kind = argv[a];
		else
			size = strtoull(argv[a], NULL, 0);
	}
	if (!kind) {
		fprintf(stderr, "usage: dmabuf_probe [--user] [--gpu N] [--importer BDF] [--count N] KIND [SIZE]\n");
		return 1;
	}
	fd = make_fd(kind, size);
	/* The genl permission check looks at who opened the socket. */
	if (user && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		     setresuid(65534, 65534, 65534)))
		die("dropping privileges");
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("netlink socket");
	setsockopt(sock, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(sock, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	fam = resolve();
	if (hold_ms > 0)
		holder = hold(fd, (unsigned int)hold_ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count; i++) {
		if (seconds > 0 && !(i & 15)) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
				break;
		}
		probe(fam, fd, importer, gpu, &r);
		if (r.ret == 0 && r.step == NVS_DMABUF_STEP_DONE && !r.err)
			ok++;
		else if (r.ret == -ENODEV)
			enodev++;
		else if (r.ret == -EPERM)
			eperm++;
		else if (r.ret == -EINVAL)
			einval++;
		else
			fail++;
	}
	print(&r);
	if (holder) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("elapsed_ms=%lld\n", (long long)((t1.tv_sec - t0.tv_sec) * 1000 +
							 (t1.tv_nsec - t0.tv_nsec) / 1000000));
		kill(holder, SIGKILL);	/* ends msleep_interruptible() */
		waitpid(holder, NULL, 0);
	}
	if (count > 1)
		printf("probes=%llu done=%llu enodev=%llu eperm=%llu einval=%llu other=%llu\n", i, ok,
		       enodev, eperm, einval, fail);
	if (bufinfo)
		printf("attached=%d\n", attached(bufinfo, fd));
	return 0;
}
