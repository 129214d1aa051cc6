// SPDX-License-Identifier: GPL-2.0
/*
 * The dma-buf capability shim: imports a dma-buf exactly as an RDMA driver
 * would (drivers/infiniband/core/umem_dmabuf.c order), on a PCI device that
 * stands for the NIC, and reports what the exporter handed out. Nothing
 * outlives one call: attach, map, walk, unmap, detach, put.
 *
 * Why the details matter:
 * - NVIDIA's exporter calls to_pci_dev() on the attaching device and only
 *   accepts a dynamic importer that sets allow_peer2peer, because GPU memory
 *   has no struct pages. So the importer is always a real PCI device.
 * - Its scatterlist entries are BAR1 ranges with no pages behind them: only
 *   sg_dma_address() and sg_dma_len() are meaningful; sg_page(), sg_virt()
 *   and kmap would crash or lie.
 * - It is a static exporter (no pin, no move_notify), so the core maps the
 *   buffer already at attach time: a refusal can surface as an attach error.
 */
#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/dma-map-ops.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/iommu.h>
#include <linux/ioport.h>
#include <linux/jiffies.h>
#include <linux/mem_encrypt.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>	/* fatal_signal_pending() (review K12) */
#include <linux/timekeeping.h>
#include <net/netlink.h>

#include "compat.h"
#include "nvs.h"

COMPAT_IMPORT_DMA_BUF();

/*
 * A static exporter has no fences at all; a dynamic one that is migrating
 * the buffer normally finishes within milliseconds. Five seconds separates
 * "busy" from "stuck" without letting one netlink request hang forever.
 */
#define NVS_DMABUF_FENCE_MS	5000

struct nvs_dmabuf_import {
	atomic_t moved;		/* move_notify calls while attached */
};

/* Both counters and the summary use the uapi verdict order. */
enum {
	NVS_RANGE_BAR1,
	NVS_RANGE_RAM,
	NVS_RANGE_OTHER,
	NVS_RANGE_NR
};

struct nvs_bar_window {
	u64 start;		/* CPU physical */
	u64 bus;		/* PCI bus address (equal to start on x86) */
	u64 len;
};

static const char * const nvs_step_names[] = {
	[NVS_DMABUF_STEP_GET] = "get",
	[NVS_DMABUF_STEP_ATTACH] = "attach",
	[NVS_DMABUF_STEP_MAP] = "map",
	[NVS_DMABUF_STEP_FENCE] = "fence",
	[NVS_DMABUF_STEP_DONE] = "done",
};

static const char * const nvs_verdict_names[] = {
	[NVS_DMABUF_VERDICT_UNKNOWN] = "unknown",
	[NVS_DMABUF_VERDICT_BAR1] = "bar1",
	[NVS_DMABUF_VERDICT_SYSTEM_RAM] = "system-ram",
	[NVS_DMABUF_VERDICT_ELSEWHERE] = "elsewhere",
	[NVS_DMABUF_VERDICT_MIXED] = "mixed",
};

static const char * const nvs_addr_names[] = {
	[NVS_DMABUF_ADDR_UNKNOWN] = "unknown",
	[NVS_DMABUF_ADDR_DIRECT] = "direct",
	[NVS_DMABUF_ADDR_IOVA] = "iova",
	[NVS_DMABUF_ADDR_BUS] = "bus",
	[NVS_DMABUF_ADDR_UNTRANSLATED] = "untranslated",
	[NVS_DMABUF_ADDR_MIXED] = "mixed",
};

static const char * const nvs_p2p_names[] = {
	[NVS_P2P_UNKNOWN] = "unknown",
	[NVS_P2P_ALLOWED] = "allowed",
	[NVS_P2P_REFUSED] = "refused",
	[NVS_P2P_NOT_APPLICABLE] = "not-applicable",
};

/*
 * Nothing to invalidate: the mapping is dropped before the probe returns.
 * The count only tells the summary that the exporter moved the buffer while
 * we looked at it, so the addresses reported may already be stale.
 */
static void nvs_dmabuf_move_notify(struct dma_buf_attachment *at)
{
	struct nvs_dmabuf_import *imp = at->importer_priv;

	atomic_inc(&imp->moved);
}

static const struct dma_buf_attach_ops nvs_dmabuf_attach_ops = {
	.allow_peer2peer = true,
	.COMPAT_DMABUF_NOTIFY = nvs_dmabuf_move_notify,
};

static int nvs_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Exactly n (min..max) hex digits ending at a delimiter; advances *s. */
static int nvs_parse_hex(const char **s, unsigned int min, unsigned int max,
			 char delim, u32 *out)
{
	unsigned int n = 0;
	u32 v = 0;
	int d;

	while ((d = nvs_hex(**s)) >= 0) {
		if (++n > max)
			return -EINVAL;
		v = v << 4 | d;
		(*s)++;
	}
	if (n < min || **s != delim)
		return -EINVAL;
	if (delim)
		(*s)++;
	*out = v;
	return 0;
}

/*
 * "DDDD:BB:DD.F" as pci_name() prints it, or "BB:DD.F" for domain 0.
 * Nothing else: no spaces, signs, prefixes or trailing characters. The
 * domain takes 4 to 7 digits: what fits NVS_BUSID_LEN with its NUL, the
 * length the netlink policy allows, so the two refuse the same strings.
 * Real domains fit (VMD numbers its domains from 0x10000); CUDA's
 * zero-padded "00000000:..." is renamed to pci_name()'s form by the CLI.
 */
static int nvs_parse_busid(const char *id, u32 *domain, u32 *bus, u32 *devfn)
{
	const char *s = id;
	u32 a, b, dev, fn;
	long first;

	if (nvs_parse_hex(&s, 2, NVS_BUSID_LEN - sizeof(":BB:DD.F"), ':', &a))
		return -EINVAL;
	first = s - id - 1;	/* digits before the first colon */
	if (nvs_parse_hex(&s, 2, 2, ':', &b) == 0) {
		if (first < 4)
			return -EINVAL;
		*domain = a;
		*bus = b;
	} else {
		if (first != 2)
			return -EINVAL;
		s = id + 3;
		*domain = 0;
		*bus = a;
	}
	if (nvs_parse_hex(&s, 2, 2, '.', &dev) || dev > 0x1f)
		return -EINVAL;
	if (nvs_parse_hex(&s, 1, 1, '\0', &fn) || fn > 7)
		return -EINVAL;
	*devfn = PCI_DEVFN(dev, fn);
	return 0;
}

/*
 * What stands for "BAR1": on a real GPU, BAR 1, the aperture NVIDIA's
 * exporter hands out. The simulated GPU (ivshmem-plain) has no BAR 1; its
 * big memory window is the BAR that holds the register file (gpu->bar, BAR 2
 * for sim=1af4:1110:2:...), the part of that device that plays BAR1's role.
 */
static void nvs_dmabuf_bar1(struct nvs_gpu *gpu, struct pci_dev *pdev,
			    struct nvs_bar_window *w)
{
	int bar = gpu->simulated ? gpu->bar : 1;

	w->start = pci_resource_start(pdev, bar);
	w->len = pci_resource_len(pdev, bar);
	w->bus = w->len ? pci_bus_address(pdev, bar) : 0;
}

static bool nvs_in_window(u64 addr, u64 len, u64 start, u64 wlen)
{
	return wlen && addr >= start && len <= wlen && addr - start <= wlen - len;
}

static int nvs_classify_phys(u64 phys, u64 len, const struct nvs_bar_window *w)
{
	if (nvs_in_window(phys, len, w->start, w->len) ||
	    nvs_in_window(phys, len, w->bus, w->len))
		return NVS_RANGE_BAR1;
	if (region_intersects(phys, len, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) == REGION_INTERSECTS)
		return NVS_RANGE_RAM;
	return NVS_RANGE_OTHER;
}

/* What the walk saw, as bits; nvs_dmabuf_walk() folds them into the uapi. */
enum {
	NVS_SAW_DIRECT = BIT(0),
	NVS_SAW_IOVA = BIT(1),
	NVS_SAW_BUS = BIT(2),
	NVS_SAW_UNTRANSLATED = BIT(3),
};

/*
 * The walk's state: bytes per range class, address kinds seen, and a run
 * of physically contiguous pages not yet classified, so that a long
 * contiguous range costs one region_intersects() (it takes resource_lock)
 * instead of one per page (review N9). A run never crosses an edge of
 * BAR1 (nvs_walk_add()).
 */
struct nvs_walk {
	const struct nvs_bar_window *w;
	u64 bytes[NVS_RANGE_NR];
	unsigned int saw;
	unsigned long pages;
	u64 run_phys;
	u64 run_len;
};

static void nvs_walk_flush(struct nvs_walk *wk)
{
	if (wk->run_len)
		wk->bytes[nvs_classify_phys(wk->run_phys, wk->run_len, wk->w)] += wk->run_len;
	wk->run_len = 0;
}

/*
 * The first edge of BAR1's CPU or bus window above addr, or 0 if none is.
 * A run is classified as a whole, so it must lie wholly inside or wholly
 * outside each window: one that crossed an edge would not be "in" the
 * window, and its BAR1 bytes would count as elsewhere (review K5: BAR1's
 * last page followed by the next BAR, or by RAM).
 */
static u64 nvs_window_edge(const struct nvs_bar_window *w, u64 addr)
{
	const u64 edge[] = { w->start, w->start + w->len, w->bus, w->bus + w->len };
	u64 next = 0;
	unsigned int i;

	if (!w->len)
		return 0;
	for (i = 0; i < ARRAY_SIZE(edge); i++)
		if (edge[i] > addr && (!next || edge[i] < next))
			next = edge[i];
	return next;
}

static bool nvs_window_edge_at(const struct nvs_bar_window *w, u64 addr)
{
	return w->len && (addr == w->start || addr == w->start + w->len ||
			  addr == w->bus || addr == w->bus + w->len);
}

/*
 * Adds [phys, phys + len) to the run, cut at BAR1's edges: a chunk that
 * crosses one becomes two runs, and a run never grows across one. At most
 * four cuts per chunk, so the walk stays as bounded as before.
 */
static void nvs_walk_add(struct nvs_walk *wk, u64 phys, u64 len)
{
	u64 edge, part;

	while (len) {
		edge = nvs_window_edge(wk->w, phys);
		part = edge && edge - phys < len ? edge - phys : len;
		if (!wk->run_len || wk->run_phys + wk->run_len != phys ||
		    nvs_window_edge_at(wk->w, phys)) {
			nvs_walk_flush(wk);
			wk->run_phys = phys;
		}
		wk->run_len += part;
		phys += part;
		len -= part;
	}
}

/*
 * Classifies one DMA segment.
 *
 * Without IOMMU translation (no IOMMU, iommu=pt, identity domain) a DMA
 * address is the physical or bus address itself, apart from the memory
 * encryption bit, so it is compared with BAR1 and with the System RAM
 * resources directly ("direct").
 *
 * A segment that P2PDMA mapped as a PCI bus address (two devices under one
 * switch, 6.2+: sg_dma_mark_bus_address(), tested by sg_dma_is_bus_address())
 * bypasses the IOMMU even behind a paging domain; the walk compares it with
 * BAR1's bus address ("bus").
 *
 * Behind a translating IOMMU (strict or lazy: the domain is the same kind)
 * an address is normally an IOVA: each page is translated back through the
 * importer's domain ("iova"); bounce buffers (swiotlb) are system RAM and
 * reported so. But an exporter may bypass the IOMMU without marking the
 * segment: NVIDIA's nv-dmabuf.c (open-gpu-kernel-modules,
 * kernel-open/nvidia/nv-dmabuf.c) sets skip_iommu in nv_dma_buf_attach()
 * for NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE, and nv_dma_buf_map_pfns()
 * then stores the raw BAR1 address in sg_dma_address() with no
 * sg_dma_mark_bus_address(). Such a page does not translate (dma-iommu
 * reserves the host bridge's MMIO windows in every DMA domain,
 * iova_reserve_pci_windows() in drivers/iommu/dma-iommu.c, so no IOVA of
 * the importer lies in a BAR behind it). A page that does not translate
 * and lies in BAR1's CPU or bus window is therefore BAR1, reached
 * "untranslated"; one that translates is an IOVA whatever its value. What
 * neither translates nor lies in BAR1 counts as "elsewhere".
 *
 * Returns -EINTR when a fatal signal arrived: one segment can span
 * gigabytes (a BAR1 range, or iommu-dma merging up to the importer's
 * max_segment_size), and the walk holds the importer's device lock.
 */
static int nvs_classify_seg(struct nvs_walk *wk, struct iommu_domain *dom,
			    bool bus, dma_addr_t addr, u64 len)
{
	const struct nvs_bar_window *w = wk->w;
	u64 done = 0, chunk, a;
	phys_addr_t phys;

	if (bus) {
		wk->saw |= NVS_SAW_BUS;
		nvs_walk_add(wk, (u64)addr, len);
		return 0;
	}
	if (!dom) {
		wk->saw |= NVS_SAW_DIRECT;
		nvs_walk_add(wk, __sme_clr((u64)addr), len);
		return 0;
	}
	while (done < len) {
		a = (u64)addr + done;
		chunk = min_t(u64, len - done, PAGE_SIZE - (a & ~PAGE_MASK));
		phys = iommu_iova_to_phys(dom, a);
		if (phys) {
			wk->saw |= NVS_SAW_IOVA;
			nvs_walk_add(wk, phys, chunk);
		} else if (nvs_in_window(a, chunk, w->start, w->len) ||
			   nvs_in_window(a, chunk, w->bus, w->len)) {
			wk->saw |= NVS_SAW_UNTRANSLATED;
			nvs_walk_flush(wk);
			wk->bytes[NVS_RANGE_BAR1] += chunk;
		} else {
			wk->saw |= NVS_SAW_IOVA;	/* an IOVA nothing maps */
			nvs_walk_flush(wk);
			wk->bytes[NVS_RANGE_OTHER] += chunk;
		}
		done += chunk;
		/*
		 * A million pages without a reschedule point would stall the
		 * CPU on a non-preemptible kernel, and a killed caller would
		 * wait for all of them with the importer locked.
		 */
		if ((++wk->pages & 1023) == 0) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	return 0;
}

static u32 nvs_verdict(const u64 *bytes)
{
	unsigned int i, kinds = 0, last = 0;

	for (i = 0; i < NVS_RANGE_NR; i++) {
		if (bytes[i]) {
			kinds++;
			last = i;
		}
	}
	if (kinds == 0)
		return NVS_DMABUF_VERDICT_UNKNOWN;
	if (kinds > 1)
		return NVS_DMABUF_VERDICT_MIXED;
	switch (last) {
	case NVS_RANGE_BAR1:
		return NVS_DMABUF_VERDICT_BAR1;
	case NVS_RANGE_RAM:
		return NVS_DMABUF_VERDICT_SYSTEM_RAM;
	default:
		return NVS_DMABUF_VERDICT_ELSEWHERE;
	}
}

static u32 nvs_addr_kind(unsigned int saw)
{
	switch (saw) {
	case 0:
		return NVS_DMABUF_ADDR_UNKNOWN;
	case NVS_SAW_DIRECT:
		return NVS_DMABUF_ADDR_DIRECT;
	case NVS_SAW_IOVA:
		return NVS_DMABUF_ADDR_IOVA;
	case NVS_SAW_BUS:
		return NVS_DMABUF_ADDR_BUS;
	case NVS_SAW_UNTRANSLATED:
		return NVS_DMABUF_ADDR_UNTRANSLATED;
	default:
		return NVS_DMABUF_ADDR_MIXED;
	}
}

/*
 * 0, or -EINTR when a fatal signal cut the walk short: rep then says
 * nothing of the mapping (verdict and address kind unknown, no entries),
 * as a verdict from part of the buffer would be wrong about the rest
 * (review K7).
 */
static int nvs_dmabuf_walk(struct sg_table *sgt, struct device *dev,
			   const struct nvs_bar_window *w,
			   struct nvs_dmabuf_report *rep)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(dev);
	struct nvs_walk wk = { .w = w };
	struct scatterlist *sg;
	unsigned int i;
	int ret = 0;
	u64 len;

	if (dom && !(dom->type & __IOMMU_DOMAIN_PAGING))
		dom = NULL;	/* identity or blocked: addresses are physical */

	rep->seg_min = U64_MAX;
	for_each_sgtable_dma_sg(sgt, sg, i) {
		len = sg_dma_len(sg);
		rep->nents++;
		rep->mapped += len;
		rep->seg_min = min(rep->seg_min, len);
		rep->seg_max = max(rep->seg_max, len);
		if (len) {
			ret = nvs_classify_seg(&wk, dom, compat_sg_dma_is_bus_address(sg),
					       sg_dma_address(sg), len);
			if (ret)
				break;
		}
		/* 1 GiB of 4 KiB pages is 262144 entries */
		if ((i & 4095) == 4095) {
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				break;
			}
			cond_resched();
		}
	}
	if (ret) {
		rep->nents = 0;
		rep->mapped = 0;
		rep->seg_min = 0;
		rep->seg_max = 0;
		rep->verdict = NVS_DMABUF_VERDICT_UNKNOWN;
		rep->addr = NVS_DMABUF_ADDR_UNKNOWN;
		return ret;
	}
	nvs_walk_flush(&wk);
	if (!rep->nents)
		rep->seg_min = 0;
	rep->verdict = nvs_verdict(wk.bytes);
	rep->addr = nvs_addr_kind(wk.saw);
	return 0;
}

/*
 * The GPU's PCI device with our own reference, or NULL once core has seen it
 * removed (gpu->pdev is only trusted under gpu->lock while !removed).
 */
static struct pci_dev *nvs_dmabuf_gpu_pdev(struct nvs_gpu *gpu)
{
	struct pci_dev *pdev = NULL;

	mutex_lock(&gpu->lock);
	if (!gpu->removed && gpu->pdev)
		pdev = pci_dev_get(gpu->pdev);
	mutex_unlock(&gpu->lock);
	return pdev;
}

/*
 * Would mapping the buffer for dev have side effects on its contents? A
 * static exporter maps at attach time, and dma_buf_detach() unmaps, with
 * DMA_BIDIRECTIONAL whatever direction the probe asks for. Through a
 * swiotlb bounce buffer that unmap copies the bounce slot, a snapshot
 * taken at attach, back over the pages: every write to the buffer between
 * attach and detach would be reverted. On a device that is not
 * DMA-coherent the unmap invalidates the CPU caches over the buffer, and
 * lines dirtied meanwhile are lost. Neither is a probe's to risk: true
 * when the mapping may have such effects, with extack saying which.
 */
static bool nvs_dmabuf_side_effects(struct device *dev,
				    struct netlink_ext_ack *extack)
{
	if (compat_swiotlb_force_bounce(dev)) {
		NL_SET_ERR_MSG(extack, "The importer's DMA always goes through swiotlb bounce buffers (swiotlb=force or a confidential guest): a probe would write its attach-time copy back over the buffer; not probed");
		return true;
	}
	if (dma_addressing_limited(dev)) {
		NL_SET_ERR_MSG(extack, "The importer's DMA mask does not reach all of memory: its mappings may bounce through swiotlb, and a probe would write the bounce copy back over the buffer; not probed");
		return true;
	}
	if (!dev_is_dma_coherent(dev)) {
		NL_SET_ERR_MSG(extack, "The importer is not DMA-coherent: unmapping after a probe would discard CPU writes to the buffer; not probed");
		return true;
	}
	return false;
}

/* The importer, referenced; the policy check comes under its device lock. */
static int nvs_dmabuf_importer(const char *importer, struct pci_dev *gpu_pdev,
			       struct pci_dev **out, struct netlink_ext_ack *extack)
{
	u32 domain, bus, devfn;
	struct pci_dev *pdev;

	if (!importer) {
		if (!gpu_pdev) {
			NL_SET_ERR_MSG(extack, "Name an importer PCI device or a GPU");
			return -EINVAL;
		}
		*out = pci_dev_get(gpu_pdev);
		return 0;
	}
	if (strnlen(importer, NVS_BUSID_LEN) >= NVS_BUSID_LEN ||
	    nvs_parse_busid(importer, &domain, &bus, &devfn)) {
		NL_SET_ERR_MSG(extack, "Importer must be a PCI bus id such as 0000:01:00.0");
		return -EINVAL;
	}
	pdev = pci_get_domain_bus_and_slot(domain, bus, devfn);
	if (!pdev) {
		NL_SET_ERR_MSG(extack, "No PCI device with that bus id");
		return -ENODEV;
	}
	*out = pdev;
	return 0;
}

static void nvs_dmabuf_p2p(struct pci_dev *gpu_pdev, struct pci_dev *ipdev,
			   struct nvs_dmabuf_report *rep)
{
	if (!gpu_pdev) {
		rep->p2p = NVS_P2P_NOT_APPLICABLE;
		return;
	}
	if (!IS_ENABLED(CONFIG_PCI_P2PDMA)) {
		rep->p2p = NVS_P2P_UNKNOWN;
		return;
	}
	/* Not verbose: a refused pair would otherwise warn on every probe. */
	rep->p2p_distance = pci_p2pdma_distance(gpu_pdev, &ipdev->dev, false);
	rep->p2p = rep->p2p_distance >= 0 ? NVS_P2P_ALLOWED : NVS_P2P_REFUSED;
}

static void nvs_dmabuf_record(struct nvs_gpu *gpu,
			      const struct nvs_dmabuf_report *rep)
{
	time64_t now = ktime_get_real_seconds();

	mutex_lock(&gpu->lock);
	if (rep->step == NVS_DMABUF_STEP_DONE && !rep->err)
		scnprintf(gpu->dmabuf_last, sizeof(gpu->dmabuf_last),
			  "%ptT UTC ok exporter=%s importer=%s size=%llu nents=%u seg=%llu..%llu verdict=%s p2p=%s%s addr=%s",
			  &now, rep->exporter, rep->importer, rep->size,
			  rep->nents, rep->seg_min, rep->seg_max,
			  nvs_verdict_names[rep->verdict],
			  nvs_p2p_names[rep->p2p], rep->moved ? " moved" : "",
			  nvs_addr_names[rep->addr]);
	else
		scnprintf(gpu->dmabuf_last, sizeof(gpu->dmabuf_last),
			  "%ptT UTC failed step=%s errno=%d exporter=%s importer=%s size=%llu p2p=%s",
			  &now, nvs_step_names[rep->step], rep->err,
			  rep->exporter[0] ? rep->exporter : "-",
			  rep->importer[0] ? rep->importer : "-", rep->size,
			  nvs_p2p_names[rep->p2p]);
	mutex_unlock(&gpu->lock);
}

int nvs_dmabuf_probe(int fd, const char *importer, struct nvs_gpu *gpu,
		     struct nvs_dmabuf_report *rep, struct netlink_ext_ack *extack)
{
	struct nvs_dmabuf_import imp = { .moved = ATOMIC_INIT(0) };
	struct pci_dev *gpu_pdev = NULL, *ipdev = NULL;
	struct nvs_bar_window w = {};
	struct dma_buf_attachment *at;
	struct sg_table *sgt;
	struct dma_buf *buf;
	long left;
	int ret;

	memset(rep, 0, sizeof(*rep));
	rep->step = NVS_DMABUF_STEP_GET;
	rep->verdict = NVS_DMABUF_VERDICT_UNKNOWN;
	rep->p2p = gpu ? NVS_P2P_UNKNOWN : NVS_P2P_NOT_APPLICABLE;

	if (gpu) {
		gpu_pdev = nvs_dmabuf_gpu_pdev(gpu);
		if (!gpu_pdev) {
			NL_SET_ERR_MSG(extack, "The GPU was removed");
			ret = -ENODEV;
			goto out;
		}
		nvs_dmabuf_bar1(gpu, gpu_pdev, &w);
		rep->bar1_start = w.start;
		rep->bar1_len = w.len;
	}
	ret = nvs_dmabuf_importer(importer, gpu_pdev, &ipdev, extack);
	if (ret)
		goto put_gpu;
	strscpy(rep->importer, pci_name(ipdev), sizeof(rep->importer));
	nvs_dmabuf_p2p(gpu_pdev, ipdev, rep);

	buf = dma_buf_get(fd);
	if (IS_ERR(buf)) {
		ret = PTR_ERR(buf);
		if (ret == -EBADF)
			NL_SET_ERR_MSG(extack, "Not an open file descriptor of the caller");
		else
			NL_SET_ERR_MSG(extack, "The file descriptor is not a dma-buf");
		goto put_importer;
	}
	rep->size = buf->size;
	strscpy(rep->exporter, buf->exp_name ? buf->exp_name : "", sizeof(rep->exporter));

	/*
	 * The exporter's own fences (a move, a clear) are waited for here,
	 * before any PCI lock. The family is parallel_ops, so genl_mutex is
	 * not held, but genl_rcv() holds genetlink's cb_lock for read across
	 * every doit: a (un)registration of any genetlink family waits for
	 * this request meanwhile, and every genetlink message behind that
	 * writer with it. Hence a bounded wait, and interruptible sleeps
	 * everywhere the request may block on someone else.
	 */
	rep->step = NVS_DMABUF_STEP_FENCE;
	left = compat_dma_resv_wait_kernel(buf->resv, true,
					   msecs_to_jiffies(NVS_DMABUF_FENCE_MS));
	if (left <= 0) {
		ret = left ? (int)left : -ETIMEDOUT;
		if (ret == -ERESTARTSYS)
			ret = -EINTR;	/* netlink does not restart requests */
		if (left)
			NL_SET_ERR_MSG(extack, "Interrupted while waiting for the exporter's fences");
		else
			NL_SET_ERR_MSG(extack, "The exporter's fences did not signal in time");
		goto put_buf;
	}

	/*
	 * The importer's device lock keeps its driver bound while a mapping
	 * exists for it: the PCI core unbinds under it before it deletes a
	 * device, and with an IOMMU, mapping for a device whose group is
	 * being torn down is not safe. A driverless free sim has no unbind
	 * to wait for: the importer check and our PCI notifier order it
	 * (nvs_free_sim_importer()). While the lock is held, whatever else
	 * takes it waits too: system suspend, the AER callbacks and
	 * pci_reset_function() for the importer, which is why the probe
	 * holds it only from the attach to the detach.
	 */
	rep->step = NVS_DMABUF_STEP_ATTACH;
	ret = device_lock_interruptible(&ipdev->dev);
	if (ret) {
		ret = -EINTR;
		NL_SET_ERR_MSG(extack, "Interrupted while waiting for the importer");
		goto put_buf;
	}
	switch (nvs_core_importer_check(ipdev)) {
	case NVS_IMPORTER_OK:
		break;
	case NVS_IMPORTER_REMOVED:
		NL_SET_ERR_MSG(extack, "The importer device was removed");
		ret = -ENODEV;
		goto refused;
	case NVS_IMPORTER_NO_DRIVER:
		NL_SET_ERR_MSG(extack, "The importer has no driver: bind its own driver (the NIC's) first");
		ret = -EPERM;
		goto refused;
	case NVS_IMPORTER_NOT_LISTED:
		NL_SET_ERR_MSG(extack, "The importer is a simulated GPU that nvsidecar does not list now (being added or removed, or no recipe for it): see the kernel log");
		ret = -ENODEV;
		goto refused;
	case NVS_IMPORTER_USERSPACE:
		NL_SET_ERR_MSG(extack, "The importer's driver hands it to a guest or to userspace (vfio-pci, pci-stub, uio_pci_generic): bind the NIC's own driver, or probe inside the guest");
		ret = -EPERM;
		goto refused;
	}
	if (nvs_dmabuf_side_effects(&ipdev->dev, extack)) {
		ret = -EOPNOTSUPP;
		goto refused;
	}
	/*
	 * Reviews N8, K1 and K2: mapping a dynamic exporter's buffer may
	 * move it. Without move_notify the core pins it for every importer
	 * (drivers/dma-buf/dma-buf.c), and amdgpu pins into GTT; with it, the
	 * exporter's own map_dma_buf migrates what the importer cannot reach
	 * peer to peer (amdgpu_dma_buf_map() validates into GTT,
	 * xe_dma_buf_map() migrates to TT). The probe would report where it
	 * had itself put the buffer. The Kconfig option is no guide either:
	 * the dma-buf revoke series removes it. NVIDIA's exporter
	 * (nv-dmabuf.c) is static, so the refusal costs nothing we exist for.
	 */
	if (dma_buf_is_dynamic(buf)) {
		NL_SET_ERR_MSG(extack, "The exporter is dynamic (amdgpu, xe): mapping may move its buffer, so it is not probed; NVIDIA's exporter is static");
		ret = -EOPNOTSUPP;
		goto refused;
	}
	/*
	 * Review N7: for a static exporter the core maps inside
	 * dma_buf_dynamic_attach() under dma_resv_lock(), which cannot be
	 * interrupted, with the importer's device lock and genetlink's
	 * cb_lock held here. The fences were waited for above; whoever holds
	 * the reservation lock now may hold it for long, so the probe does
	 * not queue behind it. A holder that comes after this check is still
	 * waited for (the core gives no trylock variant of the attach).
	 */
	if (!dma_resv_trylock(buf->resv)) {
		NL_SET_ERR_MSG(extack, "Someone holds the exporter's reservation lock: probe again");
		ret = -EBUSY;
		goto unlock_importer;
	}
	dma_resv_unlock(buf->resv);
	at = dma_buf_dynamic_attach(buf, &ipdev->dev, &nvs_dmabuf_attach_ops, &imp);
	if (IS_ERR(at)) {
		ret = PTR_ERR(at);
		NL_SET_ERR_MSG(extack, "The exporter refused the peer-to-peer attachment");
		goto unlock_importer;
	}

	rep->step = NVS_DMABUF_STEP_MAP;
	ret = dma_resv_lock_interruptible(buf->resv, NULL);
	if (ret) {
		ret = -EINTR;	/* netlink does not restart requests */
		NL_SET_ERR_MSG(extack, "Interrupted while waiting for the exporter's reservation lock");
		goto detach;
	}
	sgt = dma_buf_map_attachment(at, DMA_BIDIRECTIONAL);
	dma_resv_unlock(buf->resv);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		NL_SET_ERR_MSG(extack, "The exporter refused to map the buffer for the importer");
		goto detach;
	}

	ret = nvs_dmabuf_walk(sgt, &ipdev->dev, &w, rep);
	if (ret) {
		NL_SET_ERR_MSG(extack, "Killed while classifying the mapping");
		goto unmap;
	}
	rep->step = NVS_DMABUF_STEP_DONE;

unmap:
	/* not interruptible: the mapping must go before the detach */
	dma_resv_lock(buf->resv, NULL);
	dma_buf_unmap_attachment(at, sgt, DMA_BIDIRECTIONAL);
	dma_resv_unlock(buf->resv);
detach:
	dma_buf_detach(buf, at);
unlock_importer:
	device_unlock(&ipdev->dev);
put_buf:
	dma_buf_put(buf);
	rep->err = -ret;
	/* Past the fd lookup the reply carries the failing step instead. */
	ret = 0;
	goto put_importer;

refused:
	/* a refused importer is a plain error, like an unknown one */
	device_unlock(&ipdev->dev);
	dma_buf_put(buf);
put_importer:
	pci_dev_put(ipdev);
put_gpu:
	pci_dev_put(gpu_pdev);
out:
	if (ret)
		rep->err = -ret;
	rep->moved = atomic_read(&imp.moved);
	if (gpu)
		nvs_dmabuf_record(gpu, rep);
	return ret;
}

#ifdef NVS_SELFTEST
#include "selftest/dmabuf.c"
#endif
