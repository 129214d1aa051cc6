// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Topology findings: what in the PCIe layout, the BIOS or the kernel
 * settings gets in the way of peer-to-peer and GPUDirect RDMA, why, and
 * what to change. A library: `topo' prints the findings, `p2p' and
 * `doctor' judge with them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/topo.h"
#include "sys/pci.h"

static struct nvs_finding *add(struct nvs_findings *f, enum nvs_severity sev, const char *id,
			       const char *where)
{
	struct nvs_finding *n;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		struct nvs_finding *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		f->v = v;
		f->cap = cap;
	}
	n = &f->v[f->n++];
	memset(n, 0, sizeof(*n));
	n->sev = sev;
	snprintf(n->id, sizeof(n->id), "%s", id);
	snprintf(n->where, sizeof(n->where), "%s", where);
	return n;
}

static __attribute__((format(printf, 3, 4))) void setf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}
#define SET(field, ...) setf(field, sizeof(field), __VA_ARGS__)

int nvs_topo_aperture_bar(const struct nvs_pci_dev *d)
{
	int best = -1;

	if (d->vendor == 0x10de)
		return 1;
	for (int i = 0; i < 6; ++i)
		if (d->rebar[i].present)
			return i;
	for (int i = 0; i < 6; ++i)
		if (d->bar_size[i] && (best < 0 || d->bar_size[i] > d->bar_size[best]))
			best = i;
	return best;
}

uint64_t nvs_topo_rebar_max(const struct nvs_pci_rebar *r)
{
	for (int bit = 63; bit >= 0; --bit)
		if (r->supported >> bit & 1)
			return bit >= 44 ? 0 : (1ULL << bit) << 20;
	return 0;
}

uint64_t nvs_topo_aperture_size(const struct nvs_pci_dev *d, int bar)
{
	if (bar < 0)
		return 0;
	if (d->bar_size[bar])
		return d->bar_size[bar];
	return d->rebar[bar].present ? d->rebar[bar].cur : 0;
}

static void check_bar(const struct nvs_pci_dev *d, struct nvs_findings *f)
{
	int bar = nvs_topo_aperture_bar(d);
	uint64_t cur = nvs_topo_aperture_size(d, bar), max, vram = nvs_gpu_vram(d->vendor, d->device);
	char a[32], b[32], c[32];
	struct nvs_finding *n;

	if (bar < 0)
		return;
	if (d->rebar[bar].present) {
		max = nvs_topo_rebar_max(&d->rebar[bar]);
		if (max && cur < max) {
			n = add(f, NVS_SEV_WARN, "rebar-small", d->bdf);
			if (!n)
				return;
			SET(n->what, "BAR%d is %s of %s supported", bar, nvs_fmt_size(cur, a, sizeof(a)),
			    nvs_fmt_size(max, b, sizeof(b)));
			SET(n->why,
			    "Peer-to-peer on GeForce maps all of VRAM into BAR1, and dma-buf exports for GPUDirect RDMA are limited by free BAR1 space; a small window makes them fail or fall back to copies through host memory");
			SET(n->fix,
			    "Enable Resizable BAR and Above 4G decoding in the BIOS (cold boot afterwards), then check `lspci -vv -s %s' shows the current size at %s",
			    d->bdf, b);
			return;
		}
	}
	if (vram && cur && cur < vram) {
		n = add(f, d->rebar[bar].present ? NVS_SEV_INFO : NVS_SEV_WARN, "bar1-lt-vram", d->bdf);
		if (!n)
			return;
		SET(n->what, "BAR%d is %s for %s of VRAM", bar, nvs_fmt_size(cur, a, sizeof(a)),
		    nvs_fmt_size(vram, c, sizeof(c)));
		SET(n->why,
		    "A static BAR1 mapping cannot cover all of VRAM, so P2P drivers that need one (and large dma-buf exports) cannot map every buffer");
		SET(n->fix, d->rebar[bar].present ?
			    "The card supports no larger window: use a driver with dynamic BAR1 mapping, or keep peer buffers within %s" :
			    "The card has no Resizable BAR capability here (%s window): check the BIOS for Resizable BAR and Above 4G decoding, or update the GPU firmware",
		    a);
	}
}

static void check_link(const struct nvs_pci *p, const struct nvs_pci_dev *d, struct nvs_findings *f)
{
	const struct nvs_pci_dev *up = d->parent >= 0 ? &p->devs[d->parent] : NULL;
	int max_speed = d->link.max_speed, max_width = d->link.max_width;
	struct nvs_finding *n;

	if (!d->link.present || !d->link.cur_speed || !d->link.max_speed)
		return;
	/* a downstream-facing port's link is judged from the device below it */
	if (d->link.port_type == NVS_PCIE_ROOT_PORT || d->link.port_type == NVS_PCIE_DOWNSTREAM)
		return;
	/* A link trains to what both ends support. */
	if (up && up->link.present && up->link.max_speed) {
		if (up->link.max_speed < max_speed)
			max_speed = up->link.max_speed;
		if (up->link.max_width < max_width)
			max_width = up->link.max_width;
	}
	if (d->link.cur_width >= max_width && d->link.cur_speed >= max_speed)
		return;
	for (size_t i = 0; i < f->n; ++i)
		if (!strcmp(f->v[i].id, "link-degraded") && !strcmp(f->v[i].where, d->bdf))
			return;
	n = add(f, NVS_SEV_WARN, "link-degraded", d->bdf);
	if (!n)
		return;
	SET(n->what, "Link runs at %s x%d (Gen%d) of %s x%d (Gen%d) possible: %.1f of %.1f GB/s per direction",
	    nvs_pcie_speed_str(d->link.cur_speed), d->link.cur_width, nvs_pcie_gen(d->link.cur_speed),
	    nvs_pcie_speed_str(max_speed), max_width, nvs_pcie_gen(max_speed),
	    nvs_pcie_gbps(d->link.cur_speed, d->link.cur_width), nvs_pcie_gbps(max_speed, max_width));
	SET(n->why, "Every peer copy and RDMA transfer through this link is capped at its current rate%s",
	    d->link.cur_width >= max_width ?
		    "; GPUs lower the link speed when idle, so a speed-only drop can be power saving" : "");
	SET(n->fix,
	    "Check again under load (`nvsidecar p2p' running); if it stays degraded, reseat the card or riser, use a x%d slot, check the BIOS slot speed and bifurcation settings, and look for AER errors in the kernel log",
	    max_width);
}

static void check_iommu(const struct nvs_pci_dev *d, struct nvs_findings *f)
{
	struct nvs_finding *n;

	if (strcmp(d->iommu_type, "DMA") && strcmp(d->iommu_type, "DMA-FQ"))
		return;
	n = add(f, NVS_SEV_WARN, "iommu-translated", d->bdf);
	if (!n)
		return;
	SET(n->what, "IOMMU group %d uses a translated DMA domain (%s)", d->iommu_group, d->iommu_type);
	SET(n->why,
	    "Peer traffic and GPUDirect RDMA must then be mapped through the IOMMU; patched GeForce P2P drivers need identity mapping, and translation adds latency or breaks peer mappings");
	SET(n->fix,
	    "Boot with iommu=pt (plus intel_iommu=on or amd_iommu=on as the platform needs) so DMA domains are identity, only where the PCIe devices are trusted; the kernel log then says `Default domain type: Passthrough'");
}

static bool same_pair_finding(const struct nvs_findings *f, const char *id, const char *where)
{
	for (size_t i = 0; i < f->n; ++i)
		if (!strcmp(f->v[i].id, id) && !strcmp(f->v[i].where, where))
			return true;
	return false;
}

/* Bridges strictly between a device and the pair's common bridge. */
static void check_acs_side(const struct nvs_pci *p, int dev, int lca, int other,
			   struct nvs_findings *f)
{
	int guard = 64;

	for (int i = p->devs[dev].parent; i >= 0 && i != lca && guard--; i = p->devs[i].parent) {
		const struct nvs_pci_dev *b = &p->devs[i];
		struct nvs_finding *n;
		uint16_t on = b->acs_ctrl & NVS_ACS_P2P_BLOCKING;

		if (!b->acs_present || !on || same_pair_finding(f, "acs-redirect", b->bdf))
			continue;
		n = add(f, NVS_SEV_WARN, "acs-redirect", b->bdf);
		if (!n)
			return;
		SET(n->what, "ACS%s%s%s enabled on %s %s, on the path between %s and %s",
		    on & NVS_ACS_RR ? " RequestRedirect" : "", on & NVS_ACS_CR ? " CompletionRedirect" : "",
		    on & NVS_ACS_EC ? " EgressControl" : "", nvs_pcie_port_str(b->link.port_type), b->bdf,
		    p->devs[dev].bdf, p->devs[other].bdf);
		SET(n->why,
		    "ACS redirect forces peer-to-peer traffic up through the root complex instead of across the switch: lower bandwidth, higher latency, and with an IOMMU in translated mode peer access can fail outright");
		SET(n->fix,
		    "Disable ACS on this port in the BIOS, or clear it at boot with `setpci -s %s ECAP_ACS+0x6.w=0000' (a udev rule or systemd unit; it is reset on every boot); pcie_acs_override only regroups IOMMU groups and does not change this",
		    b->bdf);
	}
}

static void check_pair(const struct nvs_pci *p, int a, int b, struct nvs_findings *f)
{
	int lca;
	enum nvs_pci_pair c = nvs_pci_classify(p, a, b, &lca);
	const struct nvs_pci_dev *da = &p->devs[a], *db = &p->devs[b];
	bool nic = da->role == NVS_ROLE_NIC || db->role == NVS_ROLE_NIC;
	struct nvs_finding *n;
	char where[64];

	if (lca >= 0) {
		check_acs_side(p, a, lca, b, f);
		check_acs_side(p, b, lca, a, f);
	}
	snprintf(where, sizeof(where), "%s,%s", da->bdf, db->bdf);
	if (c == NVS_PAIR_SYS) {
		n = add(f, NVS_SEV_INFO, nic ? "nic-far" : "pair-sys", where);
		if (!n)
			return;
		SET(n->what, "%s and %s are on different NUMA nodes (%d, %d)", da->bdf, db->bdf,
		    da->numa_node, db->numa_node);
		SET(n->why, nic ?
			    "GPUDirect RDMA across the socket interconnect is slow, and NCCL does not use GDR beyond its NCCL_NET_GDR_LEVEL (PHB by default)" :
			    "Peer traffic crosses the socket interconnect; NCCL does not use P2P beyond PHB by default, and forcing NCCL_P2P_LEVEL=SYS can make collectives slower");
		SET(n->fix, nic ?
			    "Use the NIC on the GPU's own socket (NCCL_IB_HCA), or move the cards" :
			    "Keep peer-heavy ranks within one socket; check the BIOS NUMA-per-socket (NPS) setting, which changes how GPUs group");
	} else if (nic && c == NVS_PAIR_NODE) {
		n = add(f, NVS_SEV_INFO, "nic-far", where);
		if (!n)
			return;
		SET(n->what, "%s and %s are on different host bridges", da->bdf, db->bdf);
		SET(n->why, "NCCL uses GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL (PHB by default), so this GPU will stage network traffic through host memory");
		SET(n->fix, "Prefer a NIC under the same host bridge or switch, or raise NCCL_NET_GDR_LEVEL after measuring");
	}
}

/*
 * AMD chipsets show up as a PCIe switch below a CPU root port; these are
 * their upstream ports (pci.ids names; 43f4 from `lspci -nn' of AM5 boards,
 * newer than the pci.ids Debian 12 ships). The 600 series part is also the
 * X870/B850 chipset.
 */
static const uint16_t amd_chipset_up[] = {
	0x43b0,	/* X370 Series Chipset PCIe Upstream Port */
	0x43b1,	/* X399 Series Chipset PCIe Bridge */
	0x43c6,	/* 400 Series Chipset PCIe Bridge */
	0x43e9,	/* 500 Series Chipset Switch Upstream Port */
	0x57ad,	/* Matisse Switch Upstream: the X570 chipset */
	0x43f4,	/* 600 Series Chipset PCIe Switch Upstream Port */
};

static bool is_chipset_bridge(const struct nvs_pci_dev *b)
{
	if (b->vendor == 0x1022) {
		for (size_t k = 0; k < sizeof(amd_chipset_up) / sizeof(amd_chipset_up[0]); ++k)
			if (b->device == amd_chipset_up[k])
				return true;
		return false;
	}
	/*
	 * Intel's PCH sits behind DMI, which software cannot see: its root
	 * ports appear on bus 0 beside the CPU's, at the device numbers the
	 * PCH datasheets fix for them (0x1a-0x1d: Raptor Lake's #25 at 1a.0,
	 * #17 at 1b.0, #1 at 1c.0). The CPU's own root ports are 01.x and
	 * 06.0 on clients, and other buses on Xeons.
	 */
	return b->vendor == 0x8086 && b->parent < 0 && b->bus == 0 && b->dev >= 0x1a && b->dev <= 0x1d &&
	       b->link.port_type == NVS_PCIE_ROOT_PORT;
}

enum nvs_slot nvs_topo_slot(const struct nvs_pci *p, int i, int *via)
{
	bool root = false;
	int guard = 64;

	*via = -1;
	for (int j = p->devs[i].parent; j >= 0 && guard--; j = p->devs[j].parent) {
		if (is_chipset_bridge(&p->devs[j])) {
			*via = j;
			return NVS_SLOT_CHIPSET;
		}
		root |= p->devs[j].parent < 0;
	}
	return root ? NVS_SLOT_CPU : NVS_SLOT_UNKNOWN;
}

const char *nvs_topo_slot_str(enum nvs_slot s)
{
	return s == NVS_SLOT_CPU ? "cpu" : s == NVS_SLOT_CHIPSET ? "chipset" : "unknown";
}

static void check_slot(const struct nvs_pci *p, int i, bool peers, struct nvs_findings *f)
{
	const struct nvs_pci_dev *d = &p->devs[i], *b;
	bool nic = d->role == NVS_ROLE_NIC;
	struct nvs_finding *n;
	char up[96] = "";
	int via;

	if (nvs_topo_slot(p, i, &via) != NVS_SLOT_CHIPSET)
		return;
	b = &p->devs[via];
	/* an AMD chipset's uplink is a PCIe link we can read; Intel's DMI is not */
	if (b->link.present && b->link.port_type == NVS_PCIE_UPSTREAM && b->link.cur_speed)
		snprintf(up, sizeof(up), "; the chipset's uplink runs at %s x%d, %.1f GB/s per direction",
			 nvs_pcie_speed_str(b->link.cur_speed), b->link.cur_width,
			 nvs_pcie_gbps(b->link.cur_speed, b->link.cur_width));
	/* alone, a chipset slot only slows host copies: a note; with a peer it halves P2P */
	n = add(f, peers ? NVS_SEV_WARN : NVS_SEV_INFO, "slot-chipset", d->bdf);
	if (!n)
		return;
	SET(n->what, "%s sits behind the chipset (%s %s), not on CPU lanes%s", nic ? "NIC" : "GPU", b->bdf,
	    b->vendor == 0x8086 ? "PCH root port" : "chipset switch", up);
	SET(n->why,
	    "Peer copies and RDMA to it cross the chipset's one uplink, shared with its NVMe, USB and network; nvidia-smi topo -m still says PHB. club-3090 measured 13.17 GB/s between 3090s on CPU lanes and about 6.5 GB/s to one behind the chipset (docs/PCIE_P2P.md), and a collective runs at its slowest link");
	SET(n->fix, nic ?
		    "Move the NIC to a slot wired to CPU lanes (the board manual's block diagram), or expect GPUDirect RDMA at the chipset uplink's rate" :
		    "Move the card to a slot wired to CPU lanes (the board manual's block diagram says which), or leave it out of peer-heavy ranks; `nvsidecar p2p' measures the pair");
}

static void check_cmdline(const struct nvs_pci *p, struct nvs_findings *f)
{
	struct nvs_finding *n;
	const char *s;

	if (!p->have_cmdline)
		return;
	s = strstr(p->cmdline, "pcie_acs_override=");
	if (s && (s == p->cmdline || s[-1] == ' ')) {
		n = add(f, NVS_SEV_INFO, "acs-override", "kernel");
		if (!n)
			return;
		SET(n->what, "The kernel command line sets pcie_acs_override (a patched kernel's option)");
		SET(n->why,
		    "It makes the kernel pretend devices are isolated so IOMMU groups split; it does not change the PCIe path or the ACS bits that route peer traffic");
		SET(n->fix,
		    "Leave it out unless you pass devices to VMs; clear ACS redirect on the switch ports instead (see acs-redirect)");
	}
}

int nvs_topo_findings(const struct nvs_pci *p, struct nvs_findings *f)
{
	size_t gpus = 0, nics = 0;

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < p->n; ++i) {
		gpus += p->devs[i].role == NVS_ROLE_GPU;
		nics += p->devs[i].role == NVS_ROLE_NIC;
	}
	/* a GPU's peers are the other GPUs and the NICs; a NIC's are the GPUs */
	for (size_t i = 0; i < p->n; ++i)
		if (p->devs[i].role == NVS_ROLE_GPU || p->devs[i].role == NVS_ROLE_NIC)
			check_slot(p, (int)i, p->devs[i].role == NVS_ROLE_GPU ? gpus + nics > 1 : gpus > 0, f);
	gpus = 0;
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];
		int guard = 64;

		if (d->role != NVS_ROLE_GPU && d->role != NVS_ROLE_NIC)
			continue;
		gpus += d->role == NVS_ROLE_GPU;
		if (d->role == NVS_ROLE_GPU)
			check_bar(d, f);
		check_link(p, d, f);
		for (int j = d->parent; j >= 0 && guard--; j = p->devs[j].parent)
			check_link(p, &p->devs[j], f);
		if (!same_pair_finding(f, "iommu-translated", d->bdf))
			check_iommu(d, f);
	}
	for (size_t i = 0; i < p->n; ++i) {
		if (p->devs[i].role != NVS_ROLE_GPU)
			continue;
		for (size_t j = 0; j < p->n; ++j)
			if (j != i && (p->devs[j].role == NVS_ROLE_NIC ||
				       (p->devs[j].role == NVS_ROLE_GPU && j > i)))
				check_pair(p, (int)i, (int)j, f);
	}
	check_cmdline(p, f);
	if (!gpus) {
		struct nvs_finding *n = add(f, NVS_SEV_INFO, "no-gpu", p->source);

		if (n) {
			SET(n->what, "No NVIDIA GPU found in %s", p->source);
			SET(n->why, "Nothing to check for peer-to-peer");
			SET(n->fix, "Check `lspci -d 10de:' lists the cards; for tests, name other ids with --gpu-ids");
		}
	}
	return f->n && !f->v ? -ENOMEM : 0;
}

size_t nvs_topo_count(const struct nvs_findings *f, enum nvs_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; ++i)
		n += f->v[i].sev == sev;
	return n;
}

void nvs_findings_free(struct nvs_findings *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}

/* Unprivileged sysfs reads end at 64 bytes: no capabilities, no ACS. */
bool nvs_topo_config_limited(const struct nvs_pci *p)
{
	for (size_t i = 0; i < p->n; ++i)
		if (p->devs[i].cfg_len <= 64 && (p->devs[i].role != NVS_ROLE_OTHER))
			return true;
	return false;
}
