// SPDX-License-Identifier: GPL-2.0
/*
 * nvsowner: a test-only stand-in for the driver that owns a GPU, bound to
 * the VM tests' simulated GPUs (ivshmem-plain, tests/vm/run-vm) so that
 * nvsidecar's "owned" path (sim=...:owned) meets the events a real node
 * produces: bind, unbind, runtime suspend and resume, and PCI resets. It is
 * built by tests/vm/vmlib.sh for each lane's kernel and never installed.
 *
 * It binds like the nvidia driver does: pci_enable_device(), bus master,
 * runtime PM with autosuspend (allowed, as nouveau and amdgpu do; nvidia
 * leaves that to a udev rule), and reset_prepare/reset_done handlers. It
 * has no ID table, so it never claims a device on its own: a test binds it
 * with driver_override,
 *
 *   echo nvsowner > /sys/bus/pci/devices/BDF/driver_override
 *   echo BDF > /sys/bus/pci/drivers_probe
 *
 * It does not request the BAR regions (nvidia does): with
 * CONFIG_IO_STRICT_DEVMEM a busy region can no longer be mmapped through
 * sysfs resourceN, and nvsim writes the register file that way.
 *
 * Per device, /sys/bus/pci/devices/BDF/nvsowner/:
 *   hold              (RW) write 1: take a runtime PM reference (wakes the
 *                     device and keeps it awake); 0: drop one. Reads the
 *                     number held. The references go with the driver.
 *   runtime_suspends  (RO) runtime_suspend callbacks since the bind
 *   runtime_resumes   (RO) runtime_resume callbacks since the bind
 *   reset_prepares    (RO) reset_prepare callbacks since the bind
 *   reset_dones       (RO) reset_done callbacks since the bind
 *   flr               (WO) write 1: reset the function while staying
 *                     bound, as nvidia.ko does on the last close of a GPU
 *                     (nv.c nv_shutdown_adapter() -> os-pci.c
 *                     os_pci_trigger_flr(): pci_save_state(),
 *                     pcie_reset_flr(), pci_restore_state()). That path
 *                     takes no pci_dev_lock and the config access lock
 *                     only inside the FLR itself, and calls no other
 *                     driver's reset_prepare(): a reader is not told. On a
 *                     device with FLR it does exactly that. The simulated
 *                     GPU (ivshmem-plain, conventional PCI) has no FLR, so
 *                     it plays what one does to the registers a reader
 *                     sees: every word of the register file (BAR sim_bar)
 *                     reads all-ones for flr_ms while the function is in
 *                     reset, then the register file is back and the
 *                     command register is 0 until pci_restore_state(). Its
 *                     config space keeps answering, where a real function
 *                     in FLR may not: the sampler's config-space checks
 *                     have their own test (t-thermal-dead.sh).
 *   flrs              (RO) writes to flr done since the bind
 *
 * Module parameters (/sys/module/nvsowner/parameters/):
 *   autosuspend_ms    autosuspend delay set at bind (default 100)
 *   probe_delay_ms    probe() sleeps this long once the device is enabled,
 *                     before it returns: the window in which the driver
 *                     core has set dev->driver but the bind is not done,
 *                     and a reader must not start yet (default 0)
 *   remove_delay_ms   remove() sleeps this long before tearing down: the
 *                     window in which a reader that ignored the unbind
 *                     would still be reading (default 0)
 *   reset_delay_ms    reset_prepare() sleeps this long (default 0)
 *   flr_ms            how long a played FLR reads all-ones (default 100:
 *                     the time PCIe gives a function to come back from
 *                     an FLR before software may access it)
 *   sim_bar           the BAR that holds the simulated register file
 *                     (default 2: ivshmem-plain's shared memory)
 *   trap_bar, trap_off, trap_val
 *                     the trap: when trap_bar is 0..5, reset_prepare()
 *                     writes trap_val at byte trap_off of that BAR (saving
 *                     the old value, which reset_done() puts back), and
 *                     remove() writes it before its delay. A reader that
 *                     reads during a reset or after the unbind started sees
 *                     trap_val. Default -1: off.
 *   probes_started, probes, removes_started, removes_done
 *                     (RO) counters, all devices: probe() calls entered,
 *                     binds that succeeded, remove() calls entered and
 *                     finished
 *
 * Writing the register file is this driver's right as its owner: the
 * simulated GPU is shared memory, and nvsidecar (which must never write a
 * GPU register) is the code under test, not this.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pm_runtime.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

static int autosuspend_ms = 100;
module_param(autosuspend_ms, int, 0644);
MODULE_PARM_DESC(autosuspend_ms, "Runtime PM autosuspend delay set at bind, ms (default 100)");

static unsigned int probe_delay_ms;
module_param(probe_delay_ms, uint, 0644);
MODULE_PARM_DESC(probe_delay_ms, "probe() sleeps this long before it returns, ms (default 0)");

static unsigned int remove_delay_ms;
module_param(remove_delay_ms, uint, 0644);
MODULE_PARM_DESC(remove_delay_ms, "remove() sleeps this long before tearing down, ms (default 0)");

static unsigned int reset_delay_ms;
module_param(reset_delay_ms, uint, 0644);
MODULE_PARM_DESC(reset_delay_ms, "reset_prepare() sleeps this long, ms (default 0)");

static unsigned int flr_ms = 100;
module_param(flr_ms, uint, 0644);
MODULE_PARM_DESC(flr_ms, "A played FLR reads all-ones this long, ms (default 100)");

static int sim_bar = 2;
module_param(sim_bar, int, 0644);
MODULE_PARM_DESC(sim_bar, "BAR of the simulated register file (default 2)");

static int trap_bar = -1;
module_param(trap_bar, int, 0644);
MODULE_PARM_DESC(trap_bar, "BAR of the trap register, 0-5; -1: no trap (default)");

static unsigned int trap_off;
module_param(trap_off, uint, 0644);
MODULE_PARM_DESC(trap_off, "Byte offset of the trap register in trap_bar");

static unsigned int trap_val;
module_param(trap_val, uint, 0644);
MODULE_PARM_DESC(trap_val, "Value written to the trap register at reset_prepare and remove");

static unsigned int probes_started, probes, removes_started, removes_done;
module_param(probes_started, uint, 0444);
MODULE_PARM_DESC(probes_started, "probe() calls entered, all devices");
module_param(probes, uint, 0444);
MODULE_PARM_DESC(probes, "Successful binds, all devices");
module_param(removes_started, uint, 0444);
MODULE_PARM_DESC(removes_started, "remove() calls entered, all devices");
module_param(removes_done, uint, 0444);
MODULE_PARM_DESC(removes_done, "remove() calls finished, all devices");

/* the four counters above */
static DEFINE_MUTEX(nvsowner_count_lock);

struct nvsowner {
	struct pci_dev *pdev;
	struct mutex lock;		/* holds, trap_saved, trap_armed */
	unsigned int holds;
	bool trap_armed;		/* reset_prepare wrote the trap */
	u32 trap_saved;
	atomic_t suspends;
	atomic_t resumes;
	atomic_t prepares;
	atomic_t dones;
	atomic_t flrs;
};

static void nvsowner_count(unsigned int *c)
{
	mutex_lock(&nvsowner_count_lock);
	WRITE_ONCE(*c, *c + 1);
	mutex_unlock(&nvsowner_count_lock);
}

/*
 * Writes trap_val into the trap register; returns true with *old set when
 * it did. Called with o->lock held, the device awake and memory decoding on.
 */
static bool nvsowner_trap_write(struct nvsowner *o, u32 *old)
{
	int bar = READ_ONCE(trap_bar);
	u32 off = READ_ONCE(trap_off);
	void __iomem *reg;

	lockdep_assert_held(&o->lock);
	if (bar < 0 || bar >= PCI_STD_NUM_BARS)
		return false;
	if (!(pci_resource_flags(o->pdev, bar) & IORESOURCE_MEM) ||
	    off % 4 || (u64)off + 4 > pci_resource_len(o->pdev, bar)) {
		pci_warn(o->pdev, "trap register BAR%d+0x%x is not in a memory BAR\n",
			 bar, off);
		return false;
	}
	reg = ioremap(pci_resource_start(o->pdev, bar) + off, 4);
	if (!reg)
		return false;
	*old = readl(reg);
	writel(READ_ONCE(trap_val), reg);
	iounmap(reg);
	return true;
}

static void nvsowner_trap_restore(struct nvsowner *o)
{
	void __iomem *reg;

	lockdep_assert_held(&o->lock);
	if (!o->trap_armed)
		return;
	o->trap_armed = false;
	reg = ioremap(pci_resource_start(o->pdev, trap_bar) + trap_off, 4);
	if (!reg)
		return;
	writel(o->trap_saved, reg);
	iounmap(reg);
}

static ssize_t hold_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct nvsowner *o = pci_get_drvdata(to_pci_dev(dev));
	unsigned int n;

	mutex_lock(&o->lock);
	n = o->holds;
	mutex_unlock(&o->lock);
	return sysfs_emit(buf, "%u\n", n);
}

static ssize_t hold_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct nvsowner *o = pci_get_drvdata(to_pci_dev(dev));
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	mutex_lock(&o->lock);
	if (on) {
		ret = pm_runtime_resume_and_get(dev);
		if (!ret)
			o->holds++;
	} else if (o->holds) {
		o->holds--;
		pm_runtime_mark_last_busy(dev);
		pm_runtime_put_autosuspend(dev);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&o->lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(hold);

/*
 * What an FLR does to the register file a reader sees, for a device
 * without FLR (the simulated GPU): all-ones while in reset, then the
 * registers again (a real GPU's come back initialised by its driver; the
 * simulator's are put back as they were). o->lock held, device awake.
 */
static int nvsowner_play_flr(struct nvsowner *o)
{
	struct pci_dev *pdev = o->pdev;
	int bar = READ_ONCE(sim_bar);
	resource_size_t len, split;
	void __iomem *regs;
	void *saved;

	lockdep_assert_held(&o->lock);
	if (bar < 0 || bar >= PCI_STD_NUM_BARS ||
	    !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM))
		return -ENOTTY;
	len = pci_resource_len(pdev, bar);
	saved = kvmalloc(len, GFP_KERNEL);
	if (!saved)
		return -ENOMEM;
	regs = pci_iomap(pdev, bar, 0);
	if (!regs) {
		kvfree(saved);
		return -ENOMEM;
	}
	memcpy_fromio(saved, regs, len);
	/*
	 * A reset takes every register at once; a memset takes time. From
	 * 0xa00000 up (the GB20x die block, 0xad0a90) goes first, so no pass
	 * sees the die answer while the memory partitions (0x9024c0 to
	 * 0x91e4d4) already read all-ones, which would hide them as absent
	 * (review M3).
	 */
	split = min_t(resource_size_t, len, 0xa00000);
	memset_io(regs + split, 0xff, len - split);
	memset_io(regs, 0xff, split);
	msleep(READ_ONCE(flr_ms));
	memcpy_toio(regs, saved, len);
	/* the FLR cleared the command register; the caller restores it */
	pci_write_config_word(pdev, PCI_COMMAND, 0);
	pci_iounmap(pdev, regs);
	kvfree(saved);
	return 0;
}

static ssize_t flr_store(struct device *dev, struct device_attribute *attr,
			 const char *buf, size_t count)
{
	struct pci_dev *pdev = to_pci_dev(dev);
	struct nvsowner *o = pci_get_drvdata(pdev);
	bool on;
	int ret;

	ret = kstrtobool(buf, &on);
	if (ret)
		return ret;
	if (!on)
		return -EINVAL;
	/* the last close finds the GPU awake: it was in use */
	ret = pm_runtime_resume_and_get(dev);
	if (ret)
		return ret;
	mutex_lock(&o->lock);
	ret = pci_save_state(pdev);
	if (!ret) {
		if (!pcie_reset_flr(pdev, PCI_RESET_PROBE))
			ret = pcie_reset_flr(pdev, PCI_RESET_DO_RESET);
		else
			ret = nvsowner_play_flr(o);
		pci_restore_state(pdev);
	}
	if (!ret)
		atomic_inc(&o->flrs);
	mutex_unlock(&o->lock);
	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(flr);

#define NVSOWNER_COUNTER(_name, _field)					\
static ssize_t _name##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	struct nvsowner *o = pci_get_drvdata(to_pci_dev(dev));		\
									\
	return sysfs_emit(buf, "%d\n", atomic_read(&o->_field));	\
}									\
static DEVICE_ATTR_RO(_name)

NVSOWNER_COUNTER(runtime_suspends, suspends);
NVSOWNER_COUNTER(runtime_resumes, resumes);
NVSOWNER_COUNTER(reset_prepares, prepares);
NVSOWNER_COUNTER(reset_dones, dones);
NVSOWNER_COUNTER(flrs, flrs);

static struct attribute *nvsowner_attrs[] = {
	&dev_attr_hold.attr,
	&dev_attr_runtime_suspends.attr,
	&dev_attr_runtime_resumes.attr,
	&dev_attr_reset_prepares.attr,
	&dev_attr_reset_dones.attr,
	&dev_attr_flr.attr,
	&dev_attr_flrs.attr,
	NULL
};

static const struct attribute_group nvsowner_group = {
	.name = "nvsowner",
	.attrs = nvsowner_attrs,
};

static int nvsowner_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	unsigned int ms = READ_ONCE(probe_delay_ms);
	struct nvsowner *o;
	int ret;

	nvsowner_count(&probes_started);
	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	o->pdev = pdev;
	mutex_init(&o->lock);
	atomic_set(&o->suspends, 0);
	atomic_set(&o->resumes, 0);
	atomic_set(&o->prepares, 0);
	atomic_set(&o->dones, 0);
	atomic_set(&o->flrs, 0);

	ret = pci_enable_device(pdev);
	if (ret) {
		pci_err(pdev, "Unable to enable the device (%d)\n", ret);
		goto err_free;
	}
	pci_set_master(pdev);
	pci_set_drvdata(pdev, o);

	ret = sysfs_create_group(&dev->kobj, &nvsowner_group);
	if (ret) {
		pci_err(pdev, "Unable to create the nvsowner attributes (%d)\n", ret);
		goto err_disable;
	}

	/* enabled and bus master, as a real driver is while it sets up */
	if (ms)
		msleep(ms);

	/*
	 * The PCI core resumed the device and holds a usage count across
	 * probe; dropping it here (and taking it back in remove) is the
	 * documented contract for drivers that do runtime PM.
	 */
	pm_runtime_set_autosuspend_delay(dev, READ_ONCE(autosuspend_ms));
	pm_runtime_use_autosuspend(dev);
	pm_runtime_allow(dev);
	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);

	nvsowner_count(&probes);
	pci_info(pdev, "nvsowner: bound (autosuspend %d ms)\n",
		 READ_ONCE(autosuspend_ms));
	return 0;

err_disable:
	pci_set_drvdata(pdev, NULL);
	pci_disable_device(pdev);
err_free:
	kfree(o);
	return ret;
}

static void nvsowner_remove(struct pci_dev *pdev)
{
	struct nvsowner *o = pci_get_drvdata(pdev);
	struct device *dev = &pdev->dev;
	unsigned int ms = READ_ONCE(remove_delay_ms);
	u32 old;

	nvsowner_count(&removes_started);
	/* the PCI core resumed the device before calling remove */
	mutex_lock(&o->lock);
	nvsowner_trap_write(o, &old);	/* stays: the owner is leaving */
	o->trap_armed = false;
	mutex_unlock(&o->lock);
	if (ms)
		msleep(ms);

	sysfs_remove_group(&dev->kobj, &nvsowner_group);
	mutex_lock(&o->lock);
	while (o->holds) {
		o->holds--;
		pm_runtime_put_noidle(dev);
	}
	mutex_unlock(&o->lock);
	pm_runtime_get_noresume(dev);
	pm_runtime_forbid(dev);
	pm_runtime_dont_use_autosuspend(dev);

	pci_clear_master(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	mutex_destroy(&o->lock);
	kfree(o);
	nvsowner_count(&removes_done);
}

static void nvsowner_reset_prepare(struct pci_dev *pdev)
{
	struct nvsowner *o = pci_get_drvdata(pdev);
	unsigned int ms = READ_ONCE(reset_delay_ms);

	atomic_inc(&o->prepares);
	mutex_lock(&o->lock);
	o->trap_armed = nvsowner_trap_write(o, &o->trap_saved);
	mutex_unlock(&o->lock);
	if (ms)
		msleep(ms);
}

static void nvsowner_reset_done(struct pci_dev *pdev)
{
	struct nvsowner *o = pci_get_drvdata(pdev);

	mutex_lock(&o->lock);
	nvsowner_trap_restore(o);
	mutex_unlock(&o->lock);
	atomic_inc(&o->dones);
}

static const struct pci_error_handlers nvsowner_err_handler = {
	.reset_prepare = nvsowner_reset_prepare,
	.reset_done = nvsowner_reset_done,
};

static int nvsowner_runtime_suspend(struct device *dev)
{
	struct nvsowner *o = pci_get_drvdata(to_pci_dev(dev));

	atomic_inc(&o->suspends);
	return 0;
}

static int nvsowner_runtime_resume(struct device *dev)
{
	struct nvsowner *o = pci_get_drvdata(to_pci_dev(dev));

	atomic_inc(&o->resumes);
	return 0;
}

/* plain fields: SET_RUNTIME_PM_OPS is on its way out upstream */
static const struct dev_pm_ops nvsowner_pm_ops = {
	.runtime_suspend = nvsowner_runtime_suspend,
	.runtime_resume = nvsowner_runtime_resume,
};

static struct pci_driver nvsowner_driver = {
	.name = "nvsowner",
	.id_table = NULL,	/* driver_override only */
	.probe = nvsowner_probe,
	.remove = nvsowner_remove,
	.err_handler = &nvsowner_err_handler,
	.driver.pm = &nvsowner_pm_ops,
};
module_pci_driver(nvsowner_driver);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nvsidecar VM tests: stand-in owner driver for simulated GPUs (test only)");
