// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pci/pci.h>

#include "lib/busid.h"
#include "lib/io.h"
#include "sys/pci.h"

#define CFG_MAX 4096

/*
 * libpci reports fatal errors through a callback that must not return. A
 * jump back into nvs_pci_scan() turns them into an error message instead of
 * an exit() in the middle of a subcommand.
 */
static jmp_buf scan_jmp;
static char scan_err[512];

static void PCI_NONRET PCI_PRINTF(1, 2) lib_error(char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vsnprintf(scan_err, sizeof(scan_err), msg, ap);
	va_end(ap);
	longjmp(scan_jmp, 1);
}

static void PCI_PRINTF(1, 2) lib_quiet(char *msg, ...)
{
	(void)msg;
}

static uint16_t rd16(const uint8_t *c, size_t len, size_t pos)
{
	if (pos + 2 > len)
		return 0xffff;
	return c[pos] | c[pos + 1] << 8;
}

static uint32_t rd32(const uint8_t *c, size_t len, size_t pos)
{
	if (pos + 4 > len)
		return 0xffffffff;
	return c[pos] | c[pos + 1] << 8 | c[pos + 2] << 16 | (uint32_t)c[pos + 3] << 24;
}

/* Standard capability list; bounded so that a looping list in a dump ends. */
static size_t find_cap(const uint8_t *c, size_t len, uint8_t id)
{
	size_t pos;
	int guard = 48;

	if (len < 64 || !(rd16(c, len, 0x06) & 0x10))
		return 0;
	pos = c[0x34] & 0xfc;
	while (pos >= 0x40 && pos + 2 <= len && pos < 256 && guard--) {
		if (c[pos] == id)
			return pos;
		pos = c[pos + 1] & 0xfc;
	}
	return 0;
}

static size_t find_ext_cap(const uint8_t *c, size_t len, uint16_t id)
{
	size_t pos = 0x100;
	int guard = (CFG_MAX - 0x100) / 4;

	if (len < 0x104)
		return 0;
	while (pos >= 0x100 && pos + 4 <= len && guard--) {
		uint32_t h = rd32(c, len, pos);

		if (h == 0 || h == 0xffffffff)
			return 0;
		if ((h & 0xffff) == id)
			return pos;
		pos = (h >> 20) & 0xffc;
	}
	return 0;
}

static void parse_config(struct nvs_pci_dev *d, const uint8_t *c, size_t len)
{
	size_t pos;

	d->hdr_type = len >= 64 ? c[0x0e] & 0x7f : -1;
	d->sec_bus = d->sub_bus = -1;
	if (d->hdr_type == 1) {
		d->sec_bus = c[0x19];
		d->sub_bus = c[0x1a];
	}

	d->link.port_type = len <= 64 && d->hdr_type == 1 ? -2 : -1;
	pos = find_cap(c, len, 0x10);
	if (pos) {
		uint16_t flags = rd16(c, len, pos + 2);
		uint32_t lcap = rd32(c, len, pos + 0x0c);
		uint16_t lsta = rd16(c, len, pos + 0x12);

		d->link.present = true;
		d->link.port_type = (flags >> 4) & 0xf;
		/* Root complex integrated endpoints have no link registers. */
		if (d->link.port_type != NVS_PCIE_RC_END && pos + 0x14 <= len) {
			d->link.max_speed = lcap & 0xf;
			d->link.max_width = (lcap >> 4) & 0x3f;
			d->link.cur_speed = lsta & 0xf;
			d->link.cur_width = (lsta >> 4) & 0x3f;
		}
	}

	pos = find_ext_cap(c, len, 0x0d);
	if (pos && pos + 8 <= len) {
		d->acs_present = true;
		d->acs_cap = rd16(c, len, pos + 4);
		d->acs_ctrl = rd16(c, len, pos + 6);
	}

	pos = find_ext_cap(c, len, 0x15);
	if (pos) {
		uint32_t ctrl0 = rd32(c, len, pos + 8);
		int nbars = (ctrl0 >> 5) & 7;

		if (nbars < 1 || nbars > 6)
			nbars = 1;
		for (int i = 0; i < nbars && pos + 8 * i + 12 <= len; ++i) {
			uint32_t cap = rd32(c, len, pos + 4 + 8 * i);
			uint32_t ctrl = rd32(c, len, pos + 8 + 8 * i);
			int bar = ctrl & 7;
			int sz = (ctrl >> 8) & 0x3f;

			if (bar > 5 || sz > 43)
				continue;
			d->rebar[bar].present = true;
			/* bits 31:4 of the capability: 1 MiB .. 128 TiB */
			d->rebar[bar].supported = (uint64_t)(cap >> 4) & 0x0fffffff;
			/* bits 31:16 of the control: 256 TiB and up */
			d->rebar[bar].supported |= (uint64_t)(ctrl >> 16) << 28;
			d->rebar[bar].cur = (1ULL << sz) << 20;
		}
	}
}

static bool is_nvidia_gpu(const struct nvs_pci_dev *d)
{
	/* VGA and 3D controllers; the HD audio function is not a GPU. */
	return d->vendor == 0x10de && (d->class == 0x0300 || d->class == 0x0302);
}

static void assign_role(struct nvs_pci_dev *d, const struct nvs_pci_id *extra, size_t n_extra,
			bool from_dump)
{
	d->role = NVS_ROLE_OTHER;
	if (d->hdr_type == 1 || (d->class >> 8) == 0x06)
		d->role = d->hdr_type == 1 ? NVS_ROLE_BRIDGE : NVS_ROLE_OTHER;
	if (is_nvidia_gpu(d))
		d->role = NVS_ROLE_GPU;
	for (size_t i = 0; i < n_extra; ++i)
		if (extra[i].vendor == d->vendor && extra[i].device == d->device)
			d->role = NVS_ROLE_GPU;
	if (d->role == NVS_ROLE_GPU)
		return;
	if (d->class == 0x0207 || (d->class == 0x0200 && d->has_ib_dir))
		d->role = NVS_ROLE_NIC;
	/* A dump has no sysfs: Mellanox/NVIDIA Ethernet adapters all do RoCE. */
	if (from_dump && d->class == 0x0200 && d->vendor == 0x15b3)
		d->role = NVS_ROLE_NIC;
}

static int read_sysfs_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = 0;
	return 0;
}

/* The last component of the link /sys/bus/pci/devices/BDF/what points to ("" if none). */
static const char *link_base(const char *bdf, const char *what, char *link, size_t len)
{
	char path[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, what);
	n = readlink(path, link, len - 1);
	if (n <= 0)
		return "";
	link[n] = 0;
	base = strrchr(link, '/');
	return base ? base + 1 : link;
}

static void fill_sysfs(struct nvs_pci_dev *d)
{
	char path[PATH_MAX], link[PATH_MAX], buf[64];
	const char *base;

	base = link_base(d->bdf, "iommu_group", link, sizeof(link));
	if (*base) {
		d->iommu_group = atoi(base);
		snprintf(path, sizeof(path), "/sys/kernel/iommu_groups/%d/type", d->iommu_group);
		if (!read_sysfs_str(path, buf, sizeof(buf)))
			snprintf(d->iommu_type, sizeof(d->iommu_type), "%.15s", buf);
	}
	base = link_base(d->bdf, "driver", link, sizeof(link));
	if (*base)
		snprintf(d->driver, sizeof(d->driver), "%.31s", base);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/infiniband", d->bdf);
	d->has_ib_dir = access(path, F_OK) == 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", d->bdf);
	if (!read_sysfs_str(path, buf, sizeof(buf)))
		d->numa_node = atoi(buf);
}

/*
 * sysfs: the device's canonical path lists every upstream bridge, and its
 * first component names the host bridge (pci0000:00).
 */
static void link_sysfs(struct nvs_pci *p, struct nvs_pci_dev *d)
{
	char path[PATH_MAX], real[PATH_MAX];
	char *comp, *save = NULL, *prev = NULL;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", d->bdf);
	if (!realpath(path, real))
		return;
	for (comp = strtok_r(real, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (!strncmp(comp, "pci", 3) && strchr(comp, ':') && !d->host_bridge[0])
			snprintf(d->host_bridge, sizeof(d->host_bridge), "%s", comp);
		if (!strcmp(comp, d->bdf))
			break;
		if (strlen(comp) == 12 && comp[4] == ':' && comp[7] == ':' && comp[10] == '.')
			prev = comp;
	}
	if (prev) {
		const struct nvs_pci_dev *up = nvs_pci_find(p, prev);

		if (up)
			d->parent = (int)(up - p->devs);
	}
}

/*
 * Dumps: a device on bus B hangs below the bridge whose secondary bus is B
 * (or, failing that, the narrowest bus range that contains B).
 */
static void link_config(struct nvs_pci *p, struct nvs_pci_dev *d)
{
	int best = -1, best_span = INT_MAX;

	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *b = &p->devs[i];

		if (b == d || b->hdr_type != 1 || b->domain != d->domain || b->sec_bus <= 0)
			continue;
		if (d->bus < b->sec_bus || d->bus > b->sub_bus)
			continue;
		if (b->sub_bus - b->sec_bus < best_span ||
		    (b->sub_bus - b->sec_bus == best_span && b->sec_bus == d->bus)) {
			best = (int)i;
			best_span = b->sub_bus - b->sec_bus;
		}
	}
	d->parent = best;
}

static void set_host_bridges(struct nvs_pci *p)
{
	for (size_t i = 0; i < p->n; ++i) {
		struct nvs_pci_dev *d = &p->devs[i];
		const struct nvs_pci_dev *top = d;
		int guard = 64;

		if (d->host_bridge[0])
			continue;
		while (top->parent >= 0 && guard--)
			top = &p->devs[top->parent];
		snprintf(d->host_bridge, sizeof(d->host_bridge), "pci%04x:%02x", top->domain, top->bus);
	}
}

/* '#' is a hex digit, anything else itself, as libpci's dump reader matches. */
static bool shape(const char *s, const char *fmt)
{
	for (; *fmt; ++fmt, ++s)
		if (*fmt == '#' ? !isxdigit((unsigned char)*s) : *fmt != *s)
			return false;
	return true;
}

/*
 * libpci silently returns no devices for a file that is not a dump, and
 * exits on an over-long line. Looking first gives the admin a reason.
 */
static int check_dump(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
	int headers = 0, rows = 0, lineno = 0;

	for (const char *l = buf, *end = buf + len; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t n = nl ? (size_t)(nl - l) + 1 : (size_t)(end - l);

		lineno++;
		if (n > 250 || memchr(l, 0, n)) {
			snprintf(err, errlen,
				 "PCI dump `%s' line %d is not lspci output (binary or over-long line); create one with `lspci -xxxx > FILE'",
				 path, lineno);
			return -EINVAL;
		}
		if (shape(l, "##:##.# ") || shape(l, "####:##:##.# "))
			headers++;
		else if (shape(l, "##: ") || shape(l, "###: "))
			rows++;
		l += n;
	}
	if (!headers || !rows) {
		snprintf(err, errlen,
			 "PCI dump `%s' has no devices with config space (expected `lspci -x', `-xxx' or `-xxxx' output)",
			 path);
		return -EINVAL;
	}
	return 0;
}

/*
 * The dump is read once (a pipe or <(ssh node lspci -xxxx) has no second
 * reading), checked, and handed to libpci as a memfd it can open by name.
 */
int nvs_pci_dump_load(const char *path, char *name, size_t namelen, char *err, size_t errlen)
{
	char *buf;
	size_t len, done = 0;
	int fd, ret;

	ret = nvs_read_all(path, NVS_PCI_DUMP_MAX, &buf, &len, err, errlen);
	if (ret == -EFBIG) {
		snprintf(err, errlen, "PCI dump `%s' is larger than %d MiB: not lspci output", path,
			 NVS_PCI_DUMP_MAX >> 20);
	} else if (ret) {
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "PCI dump: %s", why);
	}
	if (ret)
		return ret;
	if (!len && nvs_named_fifo(path)) {
		/* as nccl-check says of its logs, a link to a FIFO included (admin review L5) */
		snprintf(err, errlen,
			 "PCI dump `%s' is a named FIFO that read as empty (no writer when it was opened, or one that wrote nothing): nvsidecar does not wait for one; start the writer first, or pipe the dump in: lspci -xxxx | nvsidecar ... --pci-dump -",
			 path);
		ret = -EINVAL;
		goto out;
	}
	ret = check_dump(path, buf, len, err, errlen);
	if (ret)
		goto out;
	fd = memfd_create("nvsidecar-pci-dump", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to keep the PCI dump in memory: %s", strerror(errno));
		goto out;
	}
	while (done < len) {
		ssize_t w = write(fd, buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			snprintf(err, errlen, "Unable to keep the PCI dump in memory: %s", strerror(-ret));
			close(fd);
			goto out;
		}
		done += (size_t)w;
	}
	snprintf(name, namelen, "/proc/self/fd/%d", fd);
	ret = fd;
out:
	free(buf);
	return ret;
}

static void read_cmdline(struct nvs_pci *p)
{
	if (!read_sysfs_str("/proc/cmdline", p->cmdline, sizeof(p->cmdline)))
		p->have_cmdline = true;
}

static int cmp_bdf(const void *a, const void *b)
{
	const struct nvs_pci_dev *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus - y->bus;
	if (x->dev != y->dev)
		return x->dev - y->dev;
	return x->func - y->func;
}

int nvs_pci_scan(struct nvs_pci *p, const char *dump, const struct nvs_pci_id *extra_gpus,
		 size_t n_extra, char *err, size_t errlen)
{
	struct pci_access *volatile a = NULL;
	struct pci_dev *dev;
	uint8_t *cfg = NULL;
	volatile size_t count = 0;
	volatile int dump_fd = -1;
	char dump_name[64] = "";
	int ret;

	memset(p, 0, sizeof(*p));
	if (dump) {
		dump_fd = nvs_pci_dump_load(dump, dump_name, sizeof(dump_name), err, errlen);
		if (dump_fd < 0)
			return dump_fd;
	}
	cfg = malloc(CFG_MAX);
	a = cfg ? pci_alloc() : NULL;
	if (!a) {
		free(cfg);
		if (dump_fd >= 0)
			close(dump_fd);
		snprintf(err, errlen, cfg ? "Unable to initialise libpci" : "Unable to allocate memory");
		return -ENOMEM;
	}
	a->error = lib_error;
	a->warning = lib_quiet;
	a->debug = lib_quiet;
	if (setjmp(scan_jmp)) {
		snprintf(err, errlen, "Unable to read PCI devices from %s: %s",
			 dump ? dump : "sysfs", scan_err);
		ret = -EIO;
		goto fail;
	}
	if (dump) {
		a->method = PCI_ACCESS_DUMP;
		if (pci_set_param(a, "dump.name", dump_name)) {
			snprintf(err, errlen, "This libpci has no dump access method");
			ret = -ENOTSUP;
			goto fail;
		}
		p->from_dump = true;
		snprintf(p->source, sizeof(p->source), "%s", dump);
	} else {
		snprintf(p->source, sizeof(p->source), "sysfs");
		read_cmdline(p);
	}
	pci_init(a);
	pci_scan_bus(a);

	for (dev = a->devices; dev; dev = dev->next)
		count++;
	p->devs = calloc(count ? count : 1, sizeof(*p->devs));
	if (!p->devs) {
		snprintf(err, errlen, "Unable to allocate memory");
		ret = -ENOMEM;
		goto fail;
	}
	for (dev = a->devices; dev; dev = dev->next) {
		struct nvs_pci_dev *d = &p->devs[p->n++];
		char namebuf[128];
		unsigned int fill = PCI_FILL_IDENT | PCI_FILL_CLASS;

		if (!dump)
			fill |= PCI_FILL_BASES | PCI_FILL_SIZES;
		pci_fill_info(dev, fill);
		d->domain = dev->domain;
		d->bus = dev->bus;
		d->dev = dev->dev;
		d->func = dev->func;
		snprintf(d->bdf, sizeof(d->bdf), "%04x:%02x:%02x.%x", dev->domain & 0xffff,
			 dev->bus, dev->dev, dev->func);
		d->vendor = dev->vendor_id;
		d->device = dev->device_id;
		d->class = dev->device_class;
		d->numa_node = -1;
		d->iommu_group = -1;
		d->parent = -1;
		if (!dump)
			for (int i = 0; i < 6; ++i)
				d->bar_size[i] = dev->size[i];

		/* Unprivileged sysfs reads stop at 64 bytes: take what there is. */
		memset(cfg, 0xff, CFG_MAX);
		if (pci_read_block(dev, 0, cfg, CFG_MAX))
			d->cfg_len = CFG_MAX;
		else if (pci_read_block(dev, 0, cfg, 256))
			d->cfg_len = 256;
		else if (pci_read_block(dev, 0, cfg, 64))
			d->cfg_len = 64;
		parse_config(d, cfg, d->cfg_len);
		if (!dump)
			fill_sysfs(d);
		if (!pci_lookup_name(a, namebuf, sizeof(namebuf), PCI_LOOKUP_VENDOR | PCI_LOOKUP_DEVICE,
				     d->vendor, d->device))
			snprintf(namebuf, sizeof(namebuf), "%04x:%04x", d->vendor, d->device);
		snprintf(d->name, sizeof(d->name), "%.95s", namebuf);
		assign_role(d, extra_gpus, n_extra, p->from_dump);
	}
	qsort(p->devs, p->n, sizeof(*p->devs), cmp_bdf);
	for (size_t i = 0; i < p->n; ++i) {
		if (dump)
			link_config(p, &p->devs[i]);
		else
			link_sysfs(p, &p->devs[i]);
	}
	set_host_bridges(p);
	pci_cleanup(a);
	free(cfg);
	if (dump_fd >= 0)
		close(dump_fd);
	return 0;

fail:
	pci_cleanup(a);
	free(cfg);
	if (dump_fd >= 0)
		close(dump_fd);
	nvs_pci_free(p);
	return ret;
}

void nvs_pci_free(struct nvs_pci *p)
{
	free(p->devs);
	p->devs = NULL;
	p->n = 0;
}

const struct nvs_pci_dev *nvs_pci_find(const struct nvs_pci *p, const char *bdf)
{
	struct nvs_busid b;

	if (nvs_busid_parse(bdf, &b))
		return NULL;
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];

		if ((uint32_t)d->domain == b.domain && d->bus == b.bus && d->dev == b.dev && d->func == b.fn)
			return d;
	}
	return NULL;
}

int nvs_pci_parse_ids(const char *s, struct nvs_pci_id *ids, size_t max)
{
	size_t n = 0;

	while (*s) {
		unsigned int v, d;
		int used = 0;

		if (n >= max || sscanf(s, "%4x:%4x%n", &v, &d, &used) != 2 || !used)
			return -EINVAL;
		ids[n].vendor = v;
		ids[n].device = d;
		n++;
		s += used;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return n ? (int)n : -EINVAL;
}

double nvs_pcie_gbps(int speed, int width)
{
	/* GT/s per lane times encoding efficiency, in bytes */
	static const double lane[] = {
		0, 2.5 * 8 / 10 / 8, 5.0 * 8 / 10 / 8, 8.0 * 128 / 130 / 8,
		16.0 * 128 / 130 / 8, 32.0 * 128 / 130 / 8, 64.0 * 242 / 256 / 8,
	};

	if (speed < 1 || speed > 6 || width < 1)
		return 0;
	return lane[speed] * width;
}

const char *nvs_pcie_speed_str(int speed)
{
	static const char *const s[] = { "unknown", "2.5 GT/s", "5 GT/s", "8 GT/s",
					 "16 GT/s", "32 GT/s", "64 GT/s" };

	return speed >= 1 && speed <= 6 ? s[speed] : s[0];
}

int nvs_pcie_gen(int speed)
{
	return speed >= 1 && speed <= 6 ? speed : 0;
}

const char *nvs_pcie_port_str(int t)
{
	switch (t) {
	case NVS_PCIE_ENDPOINT: return "endpoint";
	case NVS_PCIE_LEG_END: return "legacy endpoint";
	case NVS_PCIE_ROOT_PORT: return "root port";
	case NVS_PCIE_UPSTREAM: return "switch upstream port";
	case NVS_PCIE_DOWNSTREAM: return "switch downstream port";
	case NVS_PCIE_PCIE_BRIDGE: return "PCIe-to-PCI bridge";
	case NVS_PCIE_RC_END: return "root complex integrated endpoint";
	case -1: return "no PCIe capability";
	case -2: return "bridge (its capabilities need root to read)";
	default: return "other";
	}
}

const char *nvs_pci_pair_str(enum nvs_pci_pair c)
{
	static const char *const s[] = { "X", "PIX", "PXB", "PHB", "NODE", "SYS" };

	return s[c];
}

const char *nvs_pci_pair_desc(enum nvs_pci_pair c)
{
	switch (c) {
	case NVS_PAIR_SELF: return "same device";
	case NVS_PAIR_PIX: return "same PCIe switch";
	case NVS_PAIR_PXB: return "several PCIe bridges below one root port";
	case NVS_PAIR_PHB: return "same host bridge (root complex)";
	case NVS_PAIR_NODE: return "different host bridges in one NUMA node";
	case NVS_PAIR_SYS: return "different NUMA nodes (across sockets)";
	}
	return "unknown";
}

static bool is_ancestor(const struct nvs_pci *p, int anc, int d)
{
	int guard = 64;

	for (int i = p->devs[d].parent; i >= 0 && guard--; i = p->devs[i].parent)
		if (i == anc)
			return true;
	return false;
}

enum nvs_pci_pair nvs_pci_classify(const struct nvs_pci *p, int a, int b, int *lca)
{
	const struct nvs_pci_dev *da = &p->devs[a], *db = &p->devs[b];
	int guard = 64;

	*lca = -1;
	if (a == b)
		return NVS_PAIR_SELF;
	for (int i = da->parent; i >= 0 && guard--; i = p->devs[i].parent) {
		if (is_ancestor(p, i, b)) {
			*lca = i;
			break;
		}
	}
	if (*lca >= 0) {
		const struct nvs_pci_dev *l = &p->devs[*lca];
		int pa = da->parent, pb = db->parent;

		/*
		 * One switch: each device sits on its own downstream port of
		 * the common upstream port (or both on the same port).
		 */
		if (l->link.port_type == NVS_PCIE_DOWNSTREAM)
			return NVS_PAIR_PIX;
		/*
		 * Without the PCIe capability (unprivileged reads stop at 64
		 * bytes) the shape tells: a bridge below another bridge whose
		 * children are bridges is a switch's upstream port.
		 */
		bool usp = l->link.port_type == NVS_PCIE_UPSTREAM ||
			   (l->link.port_type == -2 && l->parent >= 0);

		if (usp && pa >= 0 && pb >= 0 && p->devs[pa].parent == *lca && p->devs[pb].parent == *lca)
			return NVS_PAIR_PIX;
		return NVS_PAIR_PXB;
	}
	if (!strcmp(da->host_bridge, db->host_bridge))
		return NVS_PAIR_PHB;
	if (da->numa_node == db->numa_node)
		return NVS_PAIR_NODE;
	return NVS_PAIR_SYS;
}

const char *nvs_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;
	uint64_t v = bytes;

	while (v >= 1024 && !(v % 1024) && u < 5) {
		v /= 1024;
		u++;
	}
	if (v >= 1024 && u < 5)
		snprintf(buf, len, "%.1f %s", (double)v / 1024, unit[u + 1]);
	else
		snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
	return buf;
}

bool nvs_gpu_gb20x(uint16_t vendor, uint16_t device)
{
	/* kmod/chips.c's nvs_chip_ids[] GB20x rows, and the RTX 5090 D above */
	static const uint16_t ids[] = { 0x2b85, 0x2b87, 0x2c02, 0x2c05, 0x2f04 };

	if (vendor != 0x10de)
		return false;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); ++i)
		if (ids[i] == device)
			return true;
	return false;
}

uint64_t nvs_gpu_vram(uint16_t vendor, uint16_t device)
{
	static const struct { uint16_t device; unsigned int gib; } table[] = {
		{ 0x2b85, 32 },	/* RTX 5090 (GB202) */
		{ 0x2b87, 32 },	/* RTX 5090 D */
		{ 0x2684, 24 },	/* RTX 4090 (AD102) */
		{ 0x2685, 24 },	/* RTX 4090 D */
		{ 0x2704, 16 },	/* RTX 4080 */
		{ 0x2702, 16 },	/* RTX 4080 Super */
		{ 0x2204, 24 },	/* RTX 3090 (GA102) */
		{ 0x2203, 24 },	/* RTX 3090 Ti */
	};

	if (vendor != 0x10de)
		return 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i)
		if (table[i].device == device)
			return (uint64_t)table[i].gib << 30;
	return 0;
}
