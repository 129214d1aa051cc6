// SPDX-License-Identifier: GPL-2.0
/*
 * nvsexp: a test-only dma-buf exporter that exports a PCI device's BAR the
 * way NVIDIA's exporter does, so that t-dmabuf.sh can check the probe's
 * verdict against both of its address kinds without a GPU.
 *
 * What it copies from NVIDIA's behaviour (open-gpu-kernel-modules,
 * kernel-open/nvidia/nv-dmabuf.c; described here, no code taken):
 * - It is a static exporter (no pin/unpin, no move_notify), so a dynamic
 *   importer gets its mapping made at attach time by the dma-buf core.
 * - nv_dma_buf_attach() accepts PCI importers only.
 * - nv_dma_buf_map_pfns() splits every range into chunks of the importer's
 *   dma_get_max_seg_size() rounded down to a page, and fills each entry
 *   with sg_set_page(sg, NULL, len, 0) plus sg_dma_address()/sg_dma_len():
 *   no struct page behind any of it.
 * - Its default mapping type maps each chunk for the importer through
 *   nv_dma_map_peer(), i.e. dma_map_resource(..., DMA_ATTR_SKIP_CPU_SYNC)
 *   (kernel-open/nvidia/nv-dma.c): an IOVA behind a translating IOMMU, the
 *   physical address in pass-through (NVSEXP_MODE_IOMMU).
 * - For NV_DMABUF_EXPORT_MAPPING_TYPE_FORCE_PCIE, nv_dma_buf_attach() sets
 *   priv->skip_iommu and nv_dma_buf_map_pfns() then stores the raw BAR
 *   address in sg_dma_address() without sg_dma_mark_bus_address(), and
 *   unmapping does nothing (NVSEXP_MODE_PCIE). NVIDIA first checks the
 *   topology (nv_pci_is_valid_topology_for_direct_pci()); this stand-in
 *   does not, since a test wants the raw address in every topology.
 *
 * Two more behaviours that NVIDIA's exporter does not have, for the
 * probe's other exporters: NVSEXP_MODE_DYNAMIC is a dynamic exporter
 * (pin/unpin, like amdgpu), whose pins and maps the parameters "pins" and
 * "dynamic_maps" count; and
 * NVSEXP_HOLD holds a buffer's reservation lock for a while, as an exporter
 * busy with the buffer does.
 *
 * Interface: /dev/nvsexp (0600, CAP_SYS_ADMIN), ioctls NVSEXP_EXPORT
 * (returns a dma-buf fd for a page-aligned range of one BAR) and
 * NVSEXP_HOLD (nvsexp.h).
 */
#include <linux/dma-buf.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/iommu.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "nvsexp.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

static int pins;
module_param(pins, int, 0444);
MODULE_PARM_DESC(pins, "pin calls on dynamic buffers so far (read-only)");
static int dynamic_maps;
module_param(dynamic_maps, int, 0444);
MODULE_PARM_DESC(dynamic_maps, "map calls on dynamic buffers so far (read-only)");
static int holding;
module_param(holding, int, 0444);
MODULE_PARM_DESC(holding, "1 while NVSEXP_HOLD holds a reservation lock (read-only)");
/*
 * Test knob, not an NVIDIA behaviour: keep a fresh mapping this long before
 * map_dma_buf returns, so that an importer added or deleted meanwhile is so
 * while a mapping for it exists (t-dmabuf.sh: the window in which the sid
 * lane once warned in __iommu_dma_unmap()). It sleeps under the exporter's
 * reservation lock and the probe's locks: test use only.
 */
static unsigned int map_delay_ms;
module_param(map_delay_ms, uint, 0644);
MODULE_PARM_DESC(map_delay_ms, "sleep this long after mapping, mapping and locks held (test knob, at most 10000)");

/* read-only counters, atomic: several probes may map at once */
static int nvsexp_get_atomic(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

static const struct kernel_param_ops nvsexp_atomic_ops = {
	.get = nvsexp_get_atomic,
};

static atomic_t outlived = ATOMIC_INIT(0);
module_param_cb(outlived, &nvsexp_atomic_ops, &outlived, 0444);
MODULE_PARM_DESC(outlived, "unmaps for an importer already deleted (read-only)");
static atomic_t switched = ATOMIC_INIT(0);
module_param_cb(switched, &nvsexp_atomic_ops, &switched, 0444);
MODULE_PARM_DESC(switched, "unmaps whose importer changed IOMMU domain since the map (read-only)");

/* a mapping, with the importer's IOMMU domain when it was made */
struct nvsexp_map {
	struct sg_table sgt;
	struct iommu_domain *dom;
};

struct nvsexp_buf {
	struct pci_dev *pdev;	/* referenced while the buffer lives */
	u64 phys;		/* CPU physical address of the range */
	u64 bus;		/* PCI bus address of the range */
	u64 size;
	u32 mode;
};

static int nvsexp_attach(struct dma_buf *dmabuf, struct dma_buf_attachment *at)
{
	/* as nv_dma_buf_attach(): PCI importers that accept peer memory only */
	if (!dev_is_pci(at->dev) || !at->peer2peer)
		return -EOPNOTSUPP;
	return 0;
}

static void nvsexp_unmap_entries(struct dma_buf_attachment *at,
				 struct sg_table *sgt, unsigned int n,
				 enum dma_data_direction dir, u32 mode)
{
	struct scatterlist *sg;
	unsigned int i;

	if (mode == NVSEXP_MODE_PCIE)
		return;		/* raw addresses: nothing was mapped */
	for_each_sg(sgt->sgl, sg, n, i)
		dma_unmap_resource(at->dev, sg_dma_address(sg), sg_dma_len(sg),
				   dir, DMA_ATTR_SKIP_CPU_SYNC);
}

static struct sg_table *nvsexp_map(struct dma_buf_attachment *at,
				   enum dma_data_direction dir)
{
	struct nvsexp_buf *b = at->dmabuf->priv;
	u64 seg = ALIGN_DOWN((u64)dma_get_max_seg_size(at->dev), PAGE_SIZE);
	unsigned int delay = READ_ONCE(map_delay_ms);
	struct scatterlist *sg;
	struct nvsexp_map *m;
	struct sg_table *sgt;
	unsigned int n, i;
	u64 off = 0, len;
	dma_addr_t addr;
	int ret;

	if (!seg)
		return ERR_PTR(-EINVAL);
	n = DIV_ROUND_UP(b->size, seg);
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->dom = iommu_get_domain_for_dev(at->dev);
	sgt = &m->sgt;
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		goto free_map;
	for_each_sg(sgt->sgl, sg, n, i) {
		len = min(seg, b->size - off);
		if (b->mode != NVSEXP_MODE_PCIE) {
			addr = dma_map_resource(at->dev, b->phys + off, len, dir,
						DMA_ATTR_SKIP_CPU_SYNC);
			if (dma_mapping_error(at->dev, addr)) {
				ret = -EIO;
				goto unmap_done;
			}
		} else {
			addr = b->bus + off;
		}
		sg_set_page(sg, NULL, len, 0);
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = len;
		off += len;
	}
	if (delay)
		msleep(min(delay, 10000U));
	return sgt;

unmap_done:
	nvsexp_unmap_entries(at, sgt, i, dir, b->mode);
	sg_free_table(sgt);
free_map:
	kfree(m);
	return ERR_PTR(ret);
}

static void nvsexp_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			 enum dma_data_direction dir)
{
	struct nvsexp_map *m = container_of(sgt, struct nvsexp_map, sgt);
	struct nvsexp_buf *b = at->dmabuf->priv;

	/*
	 * Unmapping through another domain than the map's (none yet while a
	 * device is being added, none any more once the IOMMU core let go of
	 * it) unmaps what was never mapped there.
	 */
	if (iommu_get_domain_for_dev(at->dev) != m->dom)
		atomic_inc(&switched);
	if (!device_is_registered(at->dev))
		atomic_inc(&outlived);
	nvsexp_unmap_entries(at, sgt, sgt->orig_nents, dir, b->mode);
	sg_free_table(sgt);
	kfree(m);
}

static void nvsexp_release(struct dma_buf *dmabuf)
{
	struct nvsexp_buf *b = dmabuf->priv;

	pci_dev_put(b->pdev);
	kfree(b);
}

static const struct dma_buf_ops nvsexp_ops = {
	.attach = nvsexp_attach,
	.map_dma_buf = nvsexp_map,
	.unmap_dma_buf = nvsexp_unmap,
	.release = nvsexp_release,
};

/* Called with the reservation lock held; a real one might migrate here. */
static int nvsexp_pin(struct dma_buf_attachment *at)
{
	WRITE_ONCE(pins, READ_ONCE(pins) + 1);
	return 0;
}

static void nvsexp_unpin(struct dma_buf_attachment *at)
{
}

/* amdgpu and xe migrate in their map_dma_buf: the call itself is the harm. */
static struct sg_table *nvsexp_dynamic_map(struct dma_buf_attachment *at,
					   enum dma_data_direction dir)
{
	WRITE_ONCE(dynamic_maps, READ_ONCE(dynamic_maps) + 1);
	return nvsexp_map(at, dir);
}

static const struct dma_buf_ops nvsexp_dynamic_ops = {
	.attach = nvsexp_attach,
	.pin = nvsexp_pin,
	.unpin = nvsexp_unpin,
	.map_dma_buf = nvsexp_dynamic_map,
	.unmap_dma_buf = nvsexp_unmap,
	.release = nvsexp_release,
};

static long nvsexp_export(const struct nvsexp_export *req)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	unsigned int domain, bus, dev, fn;
	struct nvsexp_buf *b;
	struct dma_buf *dmabuf;
	u64 blen;
	int fd;

	if (req->bar >= PCI_STD_NUM_BARS || req->mode > NVSEXP_MODE_DYNAMIC ||
	    !req->size || !PAGE_ALIGNED(req->size) || !PAGE_ALIGNED(req->offset) ||
	    strnlen(req->bdf, sizeof(req->bdf)) >= sizeof(req->bdf) ||
	    sscanf(req->bdf, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4 ||
	    bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->pdev = pci_get_domain_bus_and_slot(domain, bus, PCI_DEVFN(dev, fn));
	if (!b->pdev) {
		kfree(b);
		return -ENODEV;
	}
	blen = pci_resource_len(b->pdev, req->bar);
	if (!(pci_resource_flags(b->pdev, req->bar) & IORESOURCE_MEM) ||
	    req->offset >= blen || req->size > blen - req->offset) {
		fd = -EINVAL;
		goto put_dev;
	}
	b->phys = pci_resource_start(b->pdev, req->bar) + req->offset;
	b->bus = pci_bus_address(b->pdev, req->bar) + req->offset;
	b->size = req->size;
	b->mode = req->mode;

	info.ops = req->mode == NVSEXP_MODE_DYNAMIC ? &nvsexp_dynamic_ops : &nvsexp_ops;
	info.size = req->size;
	info.flags = O_RDWR;
	info.priv = b;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		fd = PTR_ERR(dmabuf);
		goto put_dev;
	}
	/* from here the buffer owns b: its release puts the device */
	fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (fd < 0)
		dma_buf_put(dmabuf);
	return fd;

put_dev:
	pci_dev_put(b->pdev);
	kfree(b);
	return fd;
}

static long nvsexp_hold(const struct nvsexp_hold *req)
{
	struct dma_buf *dmabuf = dma_buf_get(req->fd);
	int ret;

	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		goto put_buf;
	WRITE_ONCE(holding, 1);
	/*
	 * At most a minute (review K15): a test that dies while holding must
	 * not leave every importer of the buffer waiting for good.
	 */
	msleep_interruptible(min_t(u32, req->ms, 60 * MSEC_PER_SEC));
	WRITE_ONCE(holding, 0);
	dma_resv_unlock(dmabuf->resv);
put_buf:
	dma_buf_put(dmabuf);
	return ret;
}

static long nvsexp_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct nvsexp_export req;
	struct nvsexp_hold hold;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case NVSEXP_EXPORT:
		if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
			return -EFAULT;
		return nvsexp_export(&req);
	case NVSEXP_HOLD:
		if (copy_from_user(&hold, (void __user *)arg, sizeof(hold)))
			return -EFAULT;
		return nvsexp_hold(&hold);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations nvsexp_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = nvsexp_ioctl,
};

static struct miscdevice nvsexp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nvsexp",
	.fops = &nvsexp_fops,
	.mode = 0600,
};

module_misc_device(nvsexp_misc);

MODULE_DESCRIPTION("nvsidecar test-only dma-buf exporter of a PCI BAR, after nv-dmabuf.c");
MODULE_LICENSE("GPL");
