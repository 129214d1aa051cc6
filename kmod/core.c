// SPDX-License-Identifier: GPL-2.0
/*
 * Discovery and lifetime of GPUs.
 *
 * A PCI bus notifier follows devices as they come and go; at load the
 * devices already present are scanned. A device id the chips table lists is
 * taken at once; any other NVIDIA display device is taken when a driver
 * owns it and its NV_PMC_BOOT_0 names a chip with a recipe (nvs_match()).
 * Either way PMC_BOOT_0 is read again at each attach and must agree
 * (nvs_check_boot0()). A GPU's registers are mapped only
 * while a driver owns it (not one that hands it to a guest or userspace:
 * vfio-pci, pci-stub, uio_pci_generic), because the owner may reset or
 * power off the device as it unbinds. The one exception is the tests'
 * fixture device (sim= without "owned", gpu->free_sim), which is read
 * whether a driver is bound or not; sim=...:owned makes a simulated GPU
 * follow the same rules as a real one, so that tests can drive them.
 *
 * Locking, outermost first:
 *   pci_lock_rescan_remove()  scan at load and teardown at unload, so that
 *                             no device is added or deleted meanwhile
 *   device_lock(pci dev)      held by the driver core around bind/unbind
 *                             (our notifier is called under it); taken
 *                             here only by the dma-buf probe, across its
 *                             mapping (nvs_gpus_lock inside), and at a
 *                             free sim's BUS_NOTIFY_DEL_DEVICE, outside
 *                             nvs_attach_lock, to wait for that probe
 *   nvs_attach_lock           every attach state change (add, map, unmap,
 *                             hwmon/class registration, delete), and the
 *                             pending list; the pending work takes it, so
 *                             it is never cancelled with it held
 *   gpu->lock                 sampler state; never held across hwmon or
 *                             class (un)registration or kthread_stop(), as
 *                             their readers take it
 *   nvs_gpus_lock             list membership and nvs_gen only
 *
 * gpuN indexes are never reused while the module is loaded: together with
 * the per-GPU sample sequence numbers they name a sample unambiguously, so
 * a stream reader can never mistake a replugged GPU for the one it followed.
 */
#include <linux/device.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/pm_runtime.h>
#include <linux/reboot.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include "nvs.h"
#include "chips.h"
#include "compat.h"

LIST_HEAD(nvs_gpus);
DEFINE_MUTEX(nvs_gpus_lock);
unsigned int nvs_gen;

static DEFINE_MUTEX(nvs_attach_lock);
static unsigned int nvs_next_index;
static bool nvs_unloading;		/* under nvs_attach_lock */
static bool nvs_going_down;		/* under nvs_attach_lock: reboot */

/*
 * An unlisted device (or sim auto) whose PMC_BOOT_0 could not be read when
 * a driver took it: asleep, in a reset, decoding off, or answering
 * all-ones (review M2). Without its chip there is no recipe, and no bus
 * event comes when the GPU wakes or its reset ends, so it is looked at
 * again: 1 s later, then 2, 4 ... up to NVS_PENDING_MAX_SHIFT, for as
 * long as the driver owns it (a free sim: until unload). Each look is a
 * 4-byte mapping, the sampler's gate (a config-lock trylock, a runtime-PM
 * test; a GPU asleep is not woken) and one register read once the gate
 * opens. An unbind, removal or unload forgets it, and so does the GPU
 * being added another way. Under nvs_attach_lock, as every attach
 * change. The work runs on the freezable workqueue: like the sampler
 * thread (set_freezable()), it never looks at a GPU while the system
 * suspends or resumes, when the owner's ->suspend/->resume may be running
 * with the device still decoding. It takes nvs_attach_lock, so it is
 * cancelled with no lock held (nvs_core_uninit()).
 */
struct nvs_pending {
	struct list_head node;
	struct pci_dev *pdev;		/* a reference of its own */
	unsigned long due;		/* jiffies */
	unsigned int tries;
};

#define NVS_PENDING_MAX_SHIFT	6	/* 64 s */

static LIST_HEAD(nvs_pending);
static void nvs_pending_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(nvs_pending_work, nvs_pending_fn);

#define NVS_SIM_MAX	8

/*
 * Only QEMU's ivshmem device can stand in for a GPU: sim= on any other
 * device would have the module read another driver's registers, and that
 * device's owner would not expect it.
 */
#define NVS_SIM_VENDOR	0x1af4
#define NVS_SIM_DEVICE	0x1110

struct nvs_sim {
	u16 vendor;
	u16 device;
	int bar;
	bool owned;		/* follows the ownership rules */
	/*
	 * "auto": the recipe of the chip PMC_BOOT_0 names, as for a device
	 * id the table does not list (chip is NULL then).
	 */
	bool auto_chip;
	const struct nvs_chip *chip;
};

static struct nvs_sim nvs_sims[NVS_SIM_MAX];
static unsigned int nvs_nsims;

static const char *const nvs_status_names[] = {
	[NVS_STATUS_OK]			= "ok",
	[NVS_STATUS_NO_DRIVER]		= "no-driver",
	[NVS_STATUS_ASLEEP]		= "asleep",
	[NVS_STATUS_UNAVAILABLE]	= "unavailable",
	[NVS_STATUS_REMOVED]		= "removed",
};

const char *nvs_status_str(enum nvs_status st)
{
	if ((unsigned int)st >= ARRAY_SIZE(nvs_status_names))
		return "unknown";
	return nvs_status_names[st];
}

void nvs_gpu_set_status(struct nvs_gpu *gpu, enum nvs_status st,
			const char *reason)
{
	lockdep_assert_held(&gpu->lock);
	if (gpu->status == st && !strcmp(gpu->reason, reason))
		return;
	/* once removed, stay removed: late sampler passes must not revive it */
	if (gpu->removed && st != NVS_STATUS_REMOVED)
		return;
	gpu->status = st;
	strscpy(gpu->reason, reason, sizeof(gpu->reason));
	nvs_genl_event_gpu(gpu, NVS_EVENT_STATUS_CHANGED);
}

static void nvs_gpu_release(struct kref *ref)
{
	struct nvs_gpu *gpu = container_of(ref, struct nvs_gpu, ref);

	if (gpu->name_alloc)
		kfree(gpu->name);
	kvfree(gpu->ring);
	pci_dev_put(gpu->pdev);
	mutex_destroy(&gpu->lock);
	kfree(gpu);
}

void nvs_gpu_put(struct nvs_gpu *gpu)
{
	if (gpu)
		kref_put(&gpu->ref, nvs_gpu_release);
}

struct nvs_gpu *nvs_gpu_get_by_index(unsigned int index)
{
	struct nvs_gpu *gpu, *found = NULL;

	mutex_lock(&nvs_gpus_lock);
	list_for_each_entry(gpu, &nvs_gpus, node) {
		if (gpu->index == index) {
			kref_get(&gpu->ref);
			found = gpu;
			break;
		}
	}
	mutex_unlock(&nvs_gpus_lock);
	return found;
}

struct nvs_gpu *nvs_gpu_get_by_pdev(struct pci_dev *pdev)
{
	struct nvs_gpu *gpu, *found = NULL;

	mutex_lock(&nvs_gpus_lock);
	list_for_each_entry(gpu, &nvs_gpus, node) {
		if (gpu->pdev == pdev) {
			kref_get(&gpu->ref);
			found = gpu;
			break;
		}
	}
	mutex_unlock(&nvs_gpus_lock);
	return found;
}

const char *nvs_gpu_busid(const struct nvs_gpu *gpu)
{
	return pci_name(gpu->pdev);
}

/* Caller holds nvs_attach_lock, which keeps the result alive. */
static struct nvs_gpu *nvs_find(struct pci_dev *pdev)
{
	struct nvs_gpu *gpu = nvs_gpu_get_by_pdev(pdev);

	nvs_gpu_put(gpu);
	return gpu;
}

void __iomem *nvs_gpu_reg(struct nvs_gpu *gpu, u32 off)
{
	unsigned int i;

	for (i = 0; i < gpu->nwin; i++) {
		struct nvs_window *w = &gpu->win[i];

		if (off >= w->off && off - w->off + 4 <= w->len)
			return w->base + (off - w->off);
	}
	return NULL;
}

/* gpu->lock held. Readers see -ENODATA from here on. */
static void nvs_unmap(struct nvs_gpu *gpu)
{
	unsigned int i;

	lockdep_assert_held(&gpu->lock);
	/* the sampler peeks at it without the lock to decide to sleep */
	WRITE_ONCE(gpu->mapped, false);
	for (i = 0; i < gpu->nwin; i++) {
		iounmap(gpu->win[i].base);
		gpu->win[i].base = NULL;
	}
	gpu->nwin = 0;
	for (i = 0; i < gpu->nsensors; i++)
		gpu->sensor[i].valid = false;
}

/*
 * One read of NV_PMC_BOOT_0 (BAR + 0, chips.c "The chip from PMC_BOOT_0")
 * through a 4-byte mapping made for it and dropped at once, so that the
 * recipe windows never include offset 0. The caller has made sure a
 * driver owns the device (or it is a free sim); the rest is the gate a
 * sampler pass goes through (access.c). The mapping is made before the
 * gate is opened: ioremap() may sleep and allocate, and resets and lspci
 * wait on the gate (review m4). Returns 0 with *boot0 set, -ENODEV when
 * the BAR cannot hold it, or another negative errno when it could not be
 * read now (-EBUSY in a reset, -EAGAIN asleep, -EIO dead, decoding off or
 * a runtime-PM error).
 */
static int nvs_read_boot0(struct pci_dev *pdev, int bar, u32 *boot0)
{
	unsigned long flags = pci_resource_flags(pdev, bar);
	resource_size_t start = pci_resource_start(pdev, bar);
	void __iomem *reg;
	bool rpm;
	int ret;

	if (!(flags & IORESOURCE_MEM) || (flags & IORESOURCE_UNSET) ||
	    !start || pci_resource_len(pdev, bar) < NVS_PMC_BOOT_0 + 4)
		return -ENODEV;
	reg = ioremap(start + NVS_PMC_BOOT_0, 4);
	if (!reg)
		return -ENOMEM;
	switch (nvs_gate_open(pdev, &rpm, NULL, 0)) {
	case NVS_GATE_OPEN:
		*boot0 = readl(reg);
		nvs_gate_close(pdev, rpm);
		ret = 0;
		break;
	case NVS_GATE_BUSY:
		ret = -EBUSY;
		break;
	case NVS_GATE_ASLEEP:
		ret = -EAGAIN;
		break;
	default:
		ret = -EIO;
		break;
	}
	iounmap(reg);
	return ret;
}

/*
 * nvs_attach_lock held (boot0_noted). The chip PMC_BOOT_0 names must be the
 * recipe's: a GPU whose PCI id says one chip while its registers say
 * another is not read at all (its registers are not where the recipe
 * looks, and a wrong offset is a wrong temperature, or a read of reserved
 * MMIO). A boot0 without a chip id, or one not readable now, leaves the
 * PCI id's recipe in use: logged once, since later chips zero BOOT_0.
 */
static int nvs_check_boot0(struct nvs_gpu *gpu, char *why, size_t whylen)
{
	const struct nvs_chip *chip = gpu->chip;
	struct pci_dev *pdev = gpu->pdev;
	u32 boot0;
	u16 id, raw;
	int ret;

	ret = nvs_read_boot0(pdev, gpu->bar, &boot0);
	if (ret) {
		if (!gpu->boot0_noted)
			pci_info(pdev, "gpu%u: PMC_BOOT_0 not readable now (%d): %s recipe, unchecked\n",
				 gpu->index, ret, chip->name);
		gpu->boot0_noted = true;
		return 0;
	}
	mutex_lock(&gpu->lock);
	gpu->mmio_reads++;
	mutex_unlock(&gpu->lock);

	id = nvs_boot0_chip_id(boot0);
	if (id == NVS_BOOT0_NONE) {
		if (!gpu->boot0_noted)
			pci_info(pdev, "gpu%u: PMC_BOOT_0 reads 0x%08x, no chip id (later chips report through BOOT_42): %s recipe from the PCI id\n",
				 gpu->index, boot0, chip->name);
		gpu->boot0_noted = true;
		return 0;
	}
	if (id == chip->chip_id)
		return 0;

	/* the field as read, also for NVS_BOOT0_FUTURE (named "unknown") */
	raw = nvs_boot0_field(boot0);
	if (gpu->chip_from_boot0)
		snprintf(why, whylen, "PMC_BOOT_0 chip 0x%03x (%s), was 0x%03x (%s)",
			 raw, nvs_chip_id_name(id), chip->chip_id, chip->name);
	else if (gpu->simulated)
		snprintf(why, whylen, "PMC_BOOT_0 chip 0x%03x (%s) contradicts sim= %s",
			 raw, nvs_chip_id_name(id), chip->name);
	else
		snprintf(why, whylen, "PMC_BOOT_0 chip 0x%03x (%s) contradicts %04x:%04x (%s)",
			 raw, nvs_chip_id_name(id), pdev->vendor, pdev->device,
			 chip->name);
	return -ENODEV;
}

/*
 * ioremap exactly the recipe's windows, nothing else of the BAR, and
 * without request_mem_region(): the BAR belongs to the GPU's driver.
 * PMC_BOOT_0 is read first (nvs_check_boot0()); nothing else is read
 * when it names another chip.
 */
static int nvs_map(struct nvs_gpu *gpu, char *why, size_t whylen)
{
	const struct nvs_chip *chip = gpu->chip;
	struct pci_dev *pdev = gpu->pdev;
	struct nvs_window win[NVS_MAX_WINDOWS];
	resource_size_t start, len;
	unsigned long flags;
	unsigned int i, n;
	int ret;

	flags = pci_resource_flags(pdev, gpu->bar);
	start = pci_resource_start(pdev, gpu->bar);
	len = pci_resource_len(pdev, gpu->bar);
	if (!(flags & IORESOURCE_MEM) || (flags & IORESOURCE_UNSET) ||
	    !start || !len) {
		snprintf(why, whylen, "BAR%d is not an assigned memory BAR",
			 gpu->bar);
		return -ENODEV;
	}
	ret = nvs_check_boot0(gpu, why, whylen);
	if (ret)
		return ret;
	if (chip->nwindows > NVS_MAX_WINDOWS) {
		snprintf(why, whylen, "recipe has too many windows");
		return -E2BIG;
	}
	for (i = 0; i < chip->nwindows; i++) {
		const struct nvs_chip_window *cw = &chip->windows[i];

		if ((u64)cw->off + cw->len > len) {
			snprintf(why, whylen, "BAR%d (%llu bytes) too small",
				 gpu->bar, (unsigned long long)len);
			return -ENODEV;
		}
	}

	for (n = 0; n < chip->nwindows; n++) {
		win[n].off = chip->windows[n].off;
		win[n].len = chip->windows[n].len;
		win[n].base = ioremap(start + win[n].off, win[n].len);
		if (!win[n].base) {
			snprintf(why, whylen, "ioremap failed");
			goto err_unmap;
		}
	}

	mutex_lock(&gpu->lock);
	memcpy(gpu->win, win, sizeof(win[0]) * n);
	gpu->nwin = n;
	WRITE_ONCE(gpu->mapped, true);
	nvs_sample_probe_modules(gpu);
	mutex_unlock(&gpu->lock);
	return 0;

err_unmap:
	while (n--)
		iounmap(win[n].base);
	return -ENOMEM;
}

/*
 * Does the bound driver own the device itself, rather than hand it to a
 * guest or to userspace, which may reset it at any time and whose DMA
 * mappings are not the kernel's? The kernel says so since 5.19:
 * driver_managed_dma is set by vfio-pci, every vfio-pci variant driver
 * (mlx5_vfio_pci, nvgrace-gpu-vfio-pci, ...) and pci-stub. Before it, and
 * for uio_pci_generic (which has no IOMMU isolation and does not set the
 * flag), the names.
 */
static bool nvs_driver_owns(const struct device_driver *drv)
{
	if (!drv)
		return false;
#ifdef COMPAT_PCI_DRIVER_MANAGED_DMA
	/* container_of: 6.1's to_pci_driver() takes no const pointer */
	if (container_of(drv, struct pci_driver, driver)->driver_managed_dma)
		return false;
#endif
	return strcmp(drv->name, "vfio-pci") &&
	       strcmp(drv->name, "pci-stub") &&
	       strcmp(drv->name, "uio_pci_generic");
}

/* A device that sim= names without ":owned" (the sim list is fixed at load). */
static bool nvs_is_free_sim(const struct pci_dev *pdev)
{
	unsigned int i;

	for (i = 0; i < nvs_nsims; i++)
		if (nvs_sims[i].vendor == pdev->vendor &&
		    nvs_sims[i].device == pdev->device)
			return !nvs_sims[i].owned;
	return false;
}

/*
 * An importer with a driver is ready for DMA (the driver core configured
 * it before the bind) and stays so until its unbind, which waits for the
 * probe's device lock. A free sim has no driver, so neither holds for it,
 * and it is an importer only while it is listed here:
 * - Adding, the device is on the bus, and registered, before the ADD
 *   notifiers run, and the IOMMU core sets its DMA up in its own
 *   (iommu_bus_notifier(), registered at subsys_initcall, so called before
 *   ours). A probe that found it in between mapped through dma-direct and
 *   unmapped through the IOMMU: the sid lane's WARN in __iommu_dma_unmap().
 *   It is listed by our ADD notifier, after that.
 * - Deleting, device_del() takes the device lock only to mark the device
 *   dead, while device_is_registered() stays true until the end, and the
 *   IOMMU core lets go of it at BUS_NOTIFY_REMOVED_DEVICE. Our DEL notifier
 *   comes between the two: it unlists the sim, then takes and drops its
 *   device lock, which waits for a probe that holds it mapped
 *   (nvs_pci_notify()).
 * A sysfs write to the IOMMU group's type can still change a driverless
 * device's DMA under a probe; the tests do not do that.
 */
static enum nvs_importer nvs_free_sim_importer(struct pci_dev *pdev)
{
	struct nvs_gpu *gpu = nvs_gpu_get_by_pdev(pdev);

	nvs_gpu_put(gpu);
	return gpu ? NVS_IMPORTER_OK : NVS_IMPORTER_NOT_LISTED;
}

enum nvs_importer nvs_core_importer_check(struct pci_dev *pdev)
{
	const struct device_driver *drv = pdev->dev.driver;

	device_lock_assert(&pdev->dev);
	if (!device_is_registered(&pdev->dev))
		return NVS_IMPORTER_REMOVED;
	if (nvs_is_free_sim(pdev))
		return nvs_free_sim_importer(pdev);
	if (!drv)
		return NVS_IMPORTER_NO_DRIVER;
	if (!nvs_driver_owns(drv))
		return NVS_IMPORTER_USERSPACE;
	return NVS_IMPORTER_OK;
}

/* nvs_attach_lock held. A driver owns the GPU (or it is a free sim): map. */
static void nvs_attach(struct nvs_gpu *gpu)
{
	char why[sizeof(gpu->reason)];
	int ret;

	/* after the reboot notifier nothing is mapped again (nvs_reboot_notify) */
	if (gpu->mapped || gpu->removed || nvs_going_down)
		return;

	ret = nvs_map(gpu, why, sizeof(why));
	if (ret) {
		pci_warn(gpu->pdev, "gpu%u: not sampling: %s\n", gpu->index,
			 why);
		mutex_lock(&gpu->lock);
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE, why);
		mutex_unlock(&gpu->lock);
		return;
	}

	ret = nvs_hwmon_register(gpu);
	if (ret)
		pci_warn(gpu->pdev, "gpu%u: no hwmon device (%d)\n",
			 gpu->index, ret);

	mutex_lock(&gpu->lock);
	/*
	 * Mapped is not read (review N17): "ok" is left to the first pass
	 * that reads a valid sensor (nvs_pass()). The probe in nvs_map() may
	 * already have found the GPU asleep or unreadable; that stays.
	 */
	if (gpu->status != NVS_STATUS_ASLEEP &&
	    gpu->status != NVS_STATUS_UNAVAILABLE)
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "no reading yet");
	nvs_sampler_set_hz(gpu, gpu->sample_hz);	/* wakes the sampler */
	mutex_unlock(&gpu->lock);
}

void nvs_core_refresh_hwmon(struct nvs_gpu *gpu)
{
	bool stale;

	/*
	 * trylock: nvs_del() stops this thread while holding the lock, and
	 * an attach or detach under way registers the chip anew anyway.
	 */
	if (!mutex_trylock(&nvs_attach_lock))
		return;
	mutex_lock(&gpu->lock);
	stale = gpu->hwmon_stale && gpu->mapped && !gpu->removed;
	WRITE_ONCE(gpu->hwmon_stale, false);
	mutex_unlock(&gpu->lock);
	if (stale && gpu->hwmon) {
		/* the channel list is fixed at registration: register anew */
		nvs_hwmon_unregister(gpu);
		if (nvs_hwmon_register(gpu))
			pci_warn(gpu->pdev, "gpu%u: no hwmon device after a memory module appeared\n",
				 gpu->index);
	}
	mutex_unlock(&nvs_attach_lock);
}

/* nvs_attach_lock held. Stop register access first, then tidy up. */
static void nvs_detach(struct nvs_gpu *gpu, const char *reason)
{
	mutex_lock(&gpu->lock);
	if (gpu->mapped)
		nvs_unmap(gpu);
	nvs_gpu_set_status(gpu, NVS_STATUS_NO_DRIVER, reason);
	mutex_unlock(&gpu->lock);

	nvs_hwmon_unregister(gpu);
}

/* nvs_attach_lock held. Bound to a driver that hands the GPU to userspace. */
static void nvs_detach_handed(struct nvs_gpu *gpu,
			      const struct device_driver *drv)
{
	char why[sizeof(gpu->reason)];

	snprintf(why, sizeof(why), "bound to %s", drv->name);
	nvs_detach(gpu, why);
}

/* Unlocked, as in nvs_add(): a driver completed its bind and owns the GPU. */
static bool nvs_owned_now(struct pci_dev *pdev)
{
	const struct device_driver *drv = READ_ONCE(pdev->dev.driver);

	return drv && READ_ONCE(pdev->dev.links.status) == DL_DEV_DRIVER_BOUND &&
	       nvs_driver_owns(drv);
}

/*
 * nvs_attach_lock held. A device id the table does not list, or sim=
 * ...:auto: the recipe is that of the chip PMC_BOOT_0 names, read now if
 * the registers may be read (a driver owns the device, or it is a free
 * sim); otherwise it is looked at again when a driver binds
 * (nvs_pci_notify()). Returns 0 with *chip set, -ENOENT when it is not
 * handled (no chip id, a chip without a recipe, or no driver yet), or
 * -EAGAIN when boot0 could not be read now and is to be read again later
 * (nvs_pending_add()).
 */
static int nvs_match_boot0(struct pci_dev *pdev, int bar, bool free_sim,
			   const struct nvs_chip **chip)
{
	u32 boot0;
	u16 id;
	int ret;

	*chip = NULL;
	if (!free_sim && !nvs_owned_now(pdev))
		return -ENOENT;
	ret = nvs_read_boot0(pdev, bar, &boot0);
	if (ret == -ENODEV)
		return -ENOENT;
	/* all-ones or poison: not answering now, unlike a BOOT_0 of 0 */
	if (ret || boot0 == ~0U || nvs_raw_poison(boot0))
		return -EAGAIN;
	id = nvs_boot0_chip_id(boot0);
	if (id != NVS_BOOT0_NONE && id != NVS_BOOT0_FUTURE)
		*chip = nvs_chip_by_chip_id(id);
	if (*chip)
		return 0;
	pci_info(pdev, "PMC_BOOT_0 0x%08x: %s, not handled\n", boot0,
		 id == NVS_BOOT0_NONE ? "no chip id" : "no recipe for its chip");
	return -ENOENT;
}

/* NVIDIA VGA or 3D controller: what the GPUs with a recipe present as. */
static bool nvs_nvidia_display(const struct pci_dev *pdev)
{
	return pdev->vendor == PCI_VENDOR_ID_NVIDIA &&
	       (pdev->class >> 8 == PCI_CLASS_DISPLAY_VGA ||
		pdev->class >> 8 == PCI_CLASS_DISPLAY_3D);
}

/*
 * *name is NULL where nvs_add() makes one: sim= devices, and recipes from
 * PMC_BOOT_0 (*from_boot0, which read one register already). Returns 0 on
 * a match, -ENOENT for a device not handled, -EAGAIN for one whose
 * PMC_BOOT_0 is to be read again later (nvs_match_boot0()).
 */
static int nvs_match(struct pci_dev *pdev, const struct nvs_chip **chip,
		     const char **name, int *bar, bool *simulated,
		     bool *free_sim, bool *from_boot0)
{
	const struct nvs_chip_id *id;
	unsigned int i;

	*from_boot0 = false;
	for (i = 0; i < nvs_nsims; i++) {
		if (nvs_sims[i].vendor == pdev->vendor &&
		    nvs_sims[i].device == pdev->device) {
			*chip = nvs_sims[i].chip;
			*name = NULL;
			*bar = nvs_sims[i].bar;
			*simulated = true;
			*free_sim = !nvs_sims[i].owned;
			if (!nvs_sims[i].auto_chip)
				return 0;
			*from_boot0 = true;
			return nvs_match_boot0(pdev, *bar, *free_sim, chip);
		}
	}

	*name = NULL;
	*bar = 0;
	*simulated = false;
	*free_sim = false;
	id = nvs_chip_by_id(pdev->vendor, pdev->device);
	if (id) {
		*chip = id->chip;
		*name = id->name;
		return 0;
	}
	/* the PCI id only names the product: a new board of a known chip */
	if (!nvs_nvidia_display(pdev))
		return -ENOENT;
	*from_boot0 = true;
	return nvs_match_boot0(pdev, 0, false, chip);
}

static void nvs_pending_add(struct pci_dev *pdev, unsigned int tries);
static bool nvs_pending_drop(struct pci_dev *pdev);

/*
 * nvs_attach_lock held. tries: how many times PMC_BOOT_0 could not be read
 * before (nvs_pending_fn()), 0 on a bus event or the scan at load.
 */
static void nvs_add(struct pci_dev *pdev, unsigned int tries)
{
	const struct device_driver *drv;
	const struct nvs_chip *chip;
	struct nvs_gpu *gpu;
	const char *name;
	bool simulated, free_sim, from_boot0, bound;
	unsigned int i;
	int bar, ret;

	/*
	 * nvs_find() first: a listed GPU's BOUND_DRIVER comes here too. After
	 * the reboot notifier nothing is added: nvs_match() may read boot0
	 * (review m5).
	 */
	if (nvs_unloading || nvs_going_down || nvs_find(pdev))
		return;
	ret = nvs_match(pdev, &chip, &name, &bar, &simulated, &free_sim,
			&from_boot0);
	if (ret == -EAGAIN)
		nvs_pending_add(pdev, tries);
	if (ret)
		return;

	gpu = kzalloc(sizeof(*gpu), GFP_KERNEL);
	if (!gpu)
		goto err_nomem;
	gpu->ring = kvcalloc(NVS_RING_LEN, sizeof(*gpu->ring), GFP_KERNEL);
	if (!gpu->ring)
		goto err_free_gpu;
	if (from_boot0) {
		/* no marketing name: the id says which board, the chip how */
		name = kasprintf(GFP_KERNEL, "%sNVIDIA %04x:%04x (%s)",
				 simulated ? "Simulated " : "", pdev->vendor,
				 pdev->device, chip->name);
		if (!name)
			goto err_free_ring;
	} else if (simulated) {
		name = kasprintf(GFP_KERNEL, "Simulated %s", chip->sim_name);
		if (!name)
			goto err_free_ring;
	}

	kref_init(&gpu->ref);
	mutex_init(&gpu->lock);
	gpu->pdev = pci_dev_get(pdev);
	gpu->chip = chip;
	gpu->name = name;
	gpu->name_alloc = simulated || from_boot0;
	gpu->chip_from_boot0 = from_boot0;
	gpu->mmio_reads = from_boot0;	/* nvs_match_boot0() read boot0 */
	gpu->bar = bar;
	gpu->simulated = simulated;
	gpu->free_sim = free_sim;
	gpu->index = nvs_next_index++;
	gpu->sample_hz = nvs_default_hz;
	gpu->mem_hz = nvs_default_mem_hz;
	gpu->nsensors = min_t(unsigned int, chip->nsensors, NVS_MAX_SENSORS);
	/*
	 * Back-side chips exist only where the strap says so, which needs a
	 * read: until then netlink lists no back row and takes no threshold
	 * on one (review finding 8).
	 */
	for (i = 0; i < gpu->nsensors; i++)
		gpu->sensor[i].present = !(chip->sensors[i].kind ==
					   NVS_KIND_MODULE &&
					   chip->sensors[i].back);
	gpu->status = NVS_STATUS_NO_DRIVER;
	strscpy(gpu->reason, "no driver bound", sizeof(gpu->reason));

	ret = nvs_sampler_start(gpu);
	if (ret) {
		pci_err(pdev, "Unable to start the sampler thread (%d)\n", ret);
		nvs_gpu_put(gpu);
		return;
	}

	mutex_lock(&nvs_gpus_lock);
	list_add_tail(&gpu->node, &nvs_gpus);
	nvs_gen++;
	mutex_unlock(&nvs_gpus_lock);
	/* a look queued by an earlier event (the scan at load follows them) */
	nvs_pending_drop(pdev);

	ret = nvs_sysfs_add(gpu);
	if (ret)
		pci_warn(pdev, "gpu%u: no class device (%d)\n", gpu->index, ret);

	pci_info(pdev, "gpu%u: %s (%s%s%s)\n", gpu->index, gpu->name,
		 chip->name, from_boot0 ? " from PMC_BOOT_0" : "",
		 free_sim ? ", simulated" :
		 simulated ? ", simulated, owned by its driver" : "");
	nvs_genl_event_gpu(gpu, NVS_EVENT_GPU_ADDED);

	/*
	 * Unlocked look at the driver, which only a completed bind may trust:
	 * dev->driver is set before the driver's probe() runs and cleared
	 * after its remove() returns, so it alone cannot tell a GPU the driver
	 * is still bringing up, or already tearing down, from one it owns.
	 * The device links state can: the driver core sets
	 * DL_DEV_DRIVER_BOUND before BUS_NOTIFY_BOUND_DRIVER and leaves it for
	 * DL_DEV_UNBINDING before BUS_NOTIFY_UNBIND_DRIVER. Those events take
	 * nvs_attach_lock, held here, and find this GPU from now on; one that
	 * came before the GPU was listed changed the state first. So a GPU in
	 * probe() or remove() stays unmapped until BOUND_DRIVER or
	 * DRIVER_NOT_BOUND / UNBOUND_DRIVER settles it.
	 */
	drv = READ_ONCE(pdev->dev.driver);
	bound = drv && READ_ONCE(pdev->dev.links.status) == DL_DEV_DRIVER_BOUND;
	mutex_lock(&gpu->lock);
	gpu->driver_bound = bound && nvs_driver_owns(drv);
	mutex_unlock(&gpu->lock);
	if (gpu->driver_bound || free_sim)
		nvs_attach(gpu);
	else if (bound)
		nvs_detach_handed(gpu, drv);
	else if (drv)
		nvs_detach(gpu, "driver probing or unbinding");
	return;

err_free_ring:
	kvfree(gpu->ring);
err_free_gpu:
	kfree(gpu);
err_nomem:
	pci_err(pdev, "Unable to allocate GPU state\n");
}

/* nvs_attach_lock held. Everything the GPU has goes before its pci_dev. */
static void nvs_del(struct nvs_gpu *gpu)
{
	mutex_lock(&nvs_gpus_lock);
	list_del(&gpu->node);
	nvs_gen++;
	mutex_unlock(&nvs_gpus_lock);

	nvs_sampler_stop(gpu);
	nvs_hwmon_unregister(gpu);

	mutex_lock(&gpu->lock);
	if (gpu->mapped)
		nvs_unmap(gpu);
	nvs_gpu_set_status(gpu, NVS_STATUS_REMOVED, "device removed");
	gpu->removed = true;
	mutex_unlock(&gpu->lock);

	nvs_sysfs_remove(gpu);
	nvs_genl_event_gpu(gpu, NVS_EVENT_GPU_REMOVED);
	nvs_gpu_put(gpu);
}

/* nvs_attach_lock held. The work runs at the earliest due look, if any. */
static void nvs_pending_arm(void)
{
	unsigned long due = 0, now = jiffies;
	struct nvs_pending *p;
	bool any = false;

	if (nvs_unloading || nvs_going_down)
		return;
	list_for_each_entry(p, &nvs_pending, node) {
		if (!any || time_before(p->due, due))
			due = p->due;
		any = true;
	}
	if (any)
		mod_delayed_work(system_freezable_wq, &nvs_pending_work,
				 time_after(due, now) ? due - now : 0);
}

static void nvs_pending_free(struct nvs_pending *p)
{
	list_del(&p->node);
	pci_dev_put(p->pdev);
	kfree(p);
}

/*
 * nvs_attach_lock held. Its driver let it go, or it went: no more looks.
 * Returns whether one was pending.
 */
static bool nvs_pending_drop(struct pci_dev *pdev)
{
	struct nvs_pending *p, *tmp;
	bool found = false;

	list_for_each_entry_safe(p, tmp, &nvs_pending, node) {
		if (p->pdev == pdev) {
			nvs_pending_free(p);
			found = true;
		}
	}
	return found;
}

/* nvs_attach_lock held, from nvs_add(): PMC_BOOT_0 not readable now. */
static void nvs_pending_add(struct pci_dev *pdev, unsigned int tries)
{
	struct nvs_pending *p;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p) {
		pci_warn(pdev, "PMC_BOOT_0 not readable now, and no memory to look again later: rebind its driver to retry\n");
		return;
	}
	/* the scan at load and ADD_DEVICE may both come here: one entry */
	if (nvs_pending_drop(pdev))
		tries = max(tries, 1U);
	if (!tries)
		pci_info(pdev, "PMC_BOOT_0 not readable now (asleep, in a reset or not decoding): looking again in 1 s, then less often while a driver owns it\n");
	p->pdev = pci_dev_get(pdev);
	p->tries = tries + 1;
	p->due = jiffies + (HZ << min(tries, (unsigned int)NVS_PENDING_MAX_SHIFT));
	list_add_tail(&p->node, &nvs_pending);
	nvs_pending_arm();
}

static void nvs_pending_fn(struct work_struct *work)
{
	struct nvs_pending *p, *tmp;
	unsigned long now = jiffies;
	LIST_HEAD(due);

	mutex_lock(&nvs_attach_lock);
	list_for_each_entry_safe(p, tmp, &nvs_pending, node)
		if (!time_before(now, p->due))
			list_move_tail(&p->node, &due);
	/* nvs_add() queues one anew, one try later, if it still cannot read */
	list_for_each_entry_safe(p, tmp, &due, node) {
		/* DEL_DEVICE drops it; this is the belt to those braces */
		if (device_is_registered(&p->pdev->dev))
			nvs_add(p->pdev, p->tries);
		nvs_pending_free(p);
	}
	nvs_pending_arm();
	mutex_unlock(&nvs_attach_lock);
}

static int nvs_pci_notify(struct notifier_block *nb, unsigned long action,
			  void *data)
{
	struct pci_dev *pdev = to_pci_dev(data);
	struct nvs_gpu *gpu;

	mutex_lock(&nvs_attach_lock);
	if (action == BUS_NOTIFY_ADD_DEVICE) {
		nvs_add(pdev, 0);
		goto out;
	}
	/*
	 * A device waiting for a readable boot0 waits no more once its
	 * driver binds anew (it starts over below), lets go, or it goes.
	 */
	nvs_pending_drop(pdev);
	gpu = nvs_find(pdev);
	if (!gpu) {
		/*
		 * An unlisted id (or sim auto) is added once its PMC_BOOT_0
		 * may be read, i.e. when a driver owns it (nvs_match()).
		 */
		if (action == BUS_NOTIFY_BOUND_DRIVER)
			nvs_add(pdev, 0);
		goto out;
	}

	switch (action) {
	case BUS_NOTIFY_BOUND_DRIVER:
		mutex_lock(&gpu->lock);
		gpu->driver_bound = nvs_driver_owns(pdev->dev.driver);
		mutex_unlock(&gpu->lock);
		if (gpu->driver_bound)
			nvs_attach(gpu);
		else if (!gpu->free_sim)
			nvs_detach_handed(gpu, pdev->dev.driver);
		break;
	case BUS_NOTIFY_UNBIND_DRIVER:
		/*
		 * The driver's remove() has not run yet: stop reading now,
		 * and wait for a pass in flight (nvs_detach takes gpu->lock).
		 */
		if (!gpu->free_sim)
			nvs_detach(gpu, "driver unbinding");
		break;
	case BUS_NOTIFY_UNBOUND_DRIVER:
	case BUS_NOTIFY_DRIVER_NOT_BOUND:
		mutex_lock(&gpu->lock);
		gpu->driver_bound = false;
		mutex_unlock(&gpu->lock);
		if (!gpu->free_sim)
			nvs_detach(gpu, "no driver bound");
		break;
	case BUS_NOTIFY_DEL_DEVICE:
		nvs_del(gpu);
		break;
	}
out:
	mutex_unlock(&nvs_attach_lock);
	/*
	 * Unlisted now (and off the pending list), a free sim is refused as
	 * an importer (nvs_free_sim_importer()); a probe that took its lock
	 * before holds a mapping for it, which must go before the IOMMU core
	 * releases the device: wait for it. Not under nvs_attach_lock, since
	 * the probe may wait long, uninterruptibly, for the exporter's
	 * reservation lock while it holds the device lock. Others that take
	 * the lock of a device being deleted (AER callbacks, the reset
	 * attribute, the PM core) wait on none of our locks.
	 */
	if (action == BUS_NOTIFY_DEL_DEVICE && nvs_is_free_sim(pdev)) {
		device_lock(&pdev->dev);
		device_unlock(&pdev->dev);
	}
	return NOTIFY_DONE;
}

static struct notifier_block nvs_pci_nb = {
	.notifier_call = nvs_pci_notify,
};

/*
 * Reboot, halt, power-off and kexec (review N11). kernel_restart_prepare()
 * and kernel_shutdown_prepare() (kernel/reboot.c), and kernel_kexec() through
 * kernel_restart_prepare() (kernel/kexec_core.c), run the reboot notifier
 * chain before device_shutdown(), which calls each owner's ->shutdown()
 * (pci_device_shutdown(), drivers/pci/pci-driver.c) with no bus
 * notification; on kexec that also clears bus mastering. So the reads stop
 * here, before any owner shuts its GPU down.
 * Not the PCI shutdown path: ->shutdown() belongs to the driver bound to
 * the GPU (nvidia.ko, nouveau), and nvsidecar binds to nothing. Not a
 * sys-off handler: those run after device_shutdown(), too late.
 * Every GPU is unmapped under its lock, which waits for a pass in flight;
 * nvs_going_down keeps a late bind from mapping again. Nothing is
 * unregistered: hwmon and netlink readers get -ENODATA and the status.
 */
static int nvs_reboot_notify(struct notifier_block *nb, unsigned long action,
			     void *data)
{
	struct nvs_gpu *gpu;

	mutex_lock(&nvs_attach_lock);
	nvs_going_down = true;
	list_for_each_entry(gpu, &nvs_gpus, node) {
		mutex_lock(&gpu->lock);
		if (gpu->mapped) {
			nvs_unmap(gpu);
			nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
					   "system going down");
		}
		mutex_unlock(&gpu->lock);
	}
	mutex_unlock(&nvs_attach_lock);
	return NOTIFY_DONE;
}

static struct notifier_block nvs_reboot_nb = {
	.notifier_call = nvs_reboot_notify,
};

/*
 * "vendor:device:bar:chip[:owned]", chip a recipe name or "auto" (the
 * recipe of the chip PMC_BOOT_0 names). Returns -ENOENT for an unknown chip,
 * -EPERM for a device other than ivshmem, -EINVAL for anything malformed.
 */
static int nvs_sim_parse_one(char *s, struct nvs_sim *sim)
{
	char *f[5];
	unsigned int i, bar;

	for (i = 0; i < 4; i++) {
		f[i] = strsep(&s, ":");
		if (!f[i] || !*f[i])
			return -EINVAL;
	}
	f[4] = strsep(&s, ":");
	if (s || (f[4] && strcmp(f[4], "owned")))
		return -EINVAL;
	sim->owned = f[4];
	if (strlen(f[0]) > 4 || kstrtou16(f[0], 16, &sim->vendor) ||
	    strlen(f[1]) > 4 || kstrtou16(f[1], 16, &sim->device) ||
	    kstrtouint(f[2], 10, &bar) || bar >= PCI_STD_NUM_BARS)
		return -EINVAL;
	if (sim->vendor != NVS_SIM_VENDOR || sim->device != NVS_SIM_DEVICE)
		return -EPERM;
	sim->bar = bar;
	sim->auto_chip = !strcmp(f[3], "auto");
	if (sim->auto_chip) {
		sim->chip = NULL;
		return 0;
	}
	sim->chip = nvs_chip_by_name(f[3]);
	return sim->chip ? 0 : -ENOENT;
}

static int nvs_sim_parse(const char *param)
{
	char *buf, *p, *entry;
	unsigned int i;
	int ret = 0;

	nvs_nsims = 0;
	if (!param || !*param)
		return 0;
	buf = kstrdup(param, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	p = buf;
	while ((entry = strsep(&p, ",")) != NULL) {
		struct nvs_sim sim;
		char copy[48];

		strscpy(copy, entry, sizeof(copy));
		if (nvs_nsims == NVS_SIM_MAX) {
			pr_err("sim: more than %d entries\n", NVS_SIM_MAX);
			ret = -EINVAL;
			break;
		}
		ret = nvs_sim_parse_one(entry, &sim);
		if (ret == -ENOENT) {
			pr_err("sim: unknown chip in `%s' (known: gb202, gb203, gb205, ad102, ad102gl, ad103, ad104, ad104gl, ad106, ad107, ga102, ga102gl, ga104, ga104gl, ga106, or auto: the chip PMC_BOOT_0 names)\n",
			       copy);
			ret = -EINVAL;
			break;
		}
		if (ret == -EPERM) {
			pr_err("sim: `%s' names a device other than QEMU's ivshmem (1af4:1110), the only one that may stand in for a GPU\n",
			       copy);
			ret = -EINVAL;
			break;
		}
		if (ret) {
			pr_err("sim: invalid entry `%s': expected vendor:device:bar:chip[:owned] in hex:hex:0-5:name, e.g. 1af4:1110:2:gb202 or 1af4:1110:2:gb202:owned\n",
			       copy);
			break;
		}
		for (i = 0; i < nvs_nsims; i++) {
			if (nvs_sims[i].vendor == sim.vendor &&
			    nvs_sims[i].device == sim.device) {
				pr_err("sim: %04x:%04x given twice\n",
				       sim.vendor, sim.device);
				ret = -EINVAL;
				break;
			}
		}
		if (ret)
			break;
		nvs_sims[nvs_nsims++] = sim;
	}
	kfree(buf);
	if (ret)
		nvs_nsims = 0;
	return ret;
}

int nvs_core_init(const char *sim)
{
	struct pci_dev *pdev = NULL;
	int ret;

	ret = nvs_sim_parse(sim);
	if (ret)
		return ret;

	/*
	 * Notifier first, then the scan: a device that appears in between is
	 * seen twice and deduplicated by nvs_add(), never missed.
	 */
	/* before anything is mapped, so that no mapping outlives a reboot */
	ret = register_reboot_notifier(&nvs_reboot_nb);
	if (ret)
		return ret;

	ret = bus_register_notifier(&pci_bus_type, &nvs_pci_nb);
	if (ret)
		goto err_reboot_nb;

	pci_lock_rescan_remove();
	while ((pdev = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, pdev)) != NULL) {
		mutex_lock(&nvs_attach_lock);
		nvs_add(pdev, 0);
		mutex_unlock(&nvs_attach_lock);
	}
	pci_unlock_rescan_remove();
	return 0;

err_reboot_nb:
	unregister_reboot_notifier(&nvs_reboot_nb);
	return ret;
}

void nvs_core_uninit(void)
{
	struct nvs_pending *p, *ptmp;
	struct nvs_gpu *gpu, *tmp;

	/*
	 * Every GPU goes first, the notifier last: while GPU 0..k-1 are torn
	 * down, GPU k's driver may unbind, and its BUS_NOTIFY_UNBIND_DRIVER
	 * must still stop GPU k's sampler before the driver's remove() runs.
	 * Unbinding does not take the rescan lock, which only keeps devices
	 * from being added or deleted meanwhile; nvs_unloading keeps a device
	 * that appears anyway from being added to the emptied list.
	 * bus_unregister_notifier() waits for events in flight, which take
	 * nvs_attach_lock: it is not held then.
	 */
	pci_lock_rescan_remove();
	mutex_lock(&nvs_attach_lock);
	nvs_unloading = true;
	list_for_each_entry_safe(gpu, tmp, &nvs_gpus, node)
		nvs_del(gpu);
	list_for_each_entry_safe(p, ptmp, &nvs_pending, node)
		nvs_pending_free(p);
	mutex_unlock(&nvs_attach_lock);
	bus_unregister_notifier(&pci_bus_type, &nvs_pci_nb);
	pci_unlock_rescan_remove();
	/*
	 * A look that was due waits on nvs_attach_lock, finds the list empty
	 * and does not re-arm (nvs_unloading): wait for it, outside the
	 * locks it takes.
	 */
	cancel_delayed_work_sync(&nvs_pending_work);
	/*
	 * Last: a reboot during the teardown still stops what is left. It
	 * waits for a call in flight, which takes nvs_attach_lock: not held.
	 */
	unregister_reboot_notifier(&nvs_reboot_nb);
}
