// SPDX-License-Identifier: GPL-2.0
/*
 * The gate in front of every BAR read: a sampler pass (sampler.c) and the
 * one PMC_BOOT_0 read at attach (core.c) both go through it, so that what
 * makes a read safe is decided in one place.
 *
 * The checks alone would be check-then-use: a reset started between them
 * and the reads (sysfs "reset", a driver's pci_reset_function()) turns
 * decoding off and resets the device under the reads, which some servers
 * escalate to a fatal error. The resets done through pci_dev_lock() or
 * pci_bus_lock() (pci_reset_function(), pci_try_reset_function(), slot and
 * bus resets, sysfs "reset") hold the device's config access lock for the
 * whole reset, so holding it across the reads excludes them; a caller that
 * finds it taken skips its reads instead of waiting. A driver's own
 * pci_reset_function_locked() or pcie_flr(), DPC and surprise removal take
 * no such lock: only the owner's unbind (which stops the reads first) and
 * the callers' all-ones checks cover those. While it is held, resets and
 * userspace config accesses (lspci, setpci) sleep uninterruptibly, so
 * nothing that may sleep long runs under it: no allocation, no ioremap, no
 * netlink event. The kernel's own config reads below still work.
 */
#include <linux/pci.h>
#include <linux/pm_runtime.h>
#include <linux/string.h>
#include "nvs.h"
#include "compat.h"

/* A device without the PM capability cannot leave D0. */
static bool nvs_in_d0(struct pci_dev *pdev)
{
	u16 pmcsr;

	if (pdev->current_state == PCI_D0)
		return true;
	if (pdev->current_state != PCI_UNKNOWN)
		return false;
	if (!pdev->pm_cap)
		return true;
	if (pci_read_config_word(pdev, pdev->pm_cap + PCI_PM_CTRL, &pmcsr))
		return false;
	return (pmcsr & PCI_PM_CTRL_STATE_MASK) == 0;
}

/*
 * Everything that must hold before the BAR is touched, kept so until
 * nvs_gate_close(). NVS_GATE_OPEN: read, then close; *rpm says whether a
 * runtime PM reference is held. Any other result: nothing is held, and
 * why[] (if given) says what was found, in words fit for the status file.
 * A runtime-suspended GPU is never woken: a temperature read must not
 * keep a GPU its owner put to sleep awake.
 */
enum nvs_gate nvs_gate_open(struct pci_dev *pdev, bool *rpm, char *why,
			    size_t whylen)
{
	enum nvs_gate g;
	u16 cmd;
	int ret;

	*rpm = false;
	if (!pci_cfg_access_trylock(pdev)) {
		if (why)
			strscpy(why, "reset or config access in progress", whylen);
		return NVS_GATE_BUSY;
	}
	if (pci_channel_offline(pdev)) {
		if (why)
			strscpy(why, "PCI channel offline", whylen);
		g = NVS_GATE_DEAD;
		goto err_unlock;
	}

	ret = compat_rpm_get_if_active(&pdev->dev);
	if (ret == 0) {
		if (why)
			strscpy(why, "runtime-suspended", whylen);
		g = NVS_GATE_ASLEEP;
		goto err_unlock;
	}
	if (ret > 0) {
		*rpm = true;
	} else if (ret != -EINVAL) {	/* -EINVAL: runtime PM disabled */
		if (why)
			snprintf(why, whylen, "runtime PM error %d", ret);
		g = NVS_GATE_ERROR;
		goto err_unlock;
	}

	if (!nvs_in_d0(pdev)) {
		if (why)
			snprintf(why, whylen, "in %s",
				 pci_power_name(pdev->current_state));
		g = NVS_GATE_ASLEEP;
		goto err_put;
	}
	/*
	 * These three are NVS_GATE_DEAD, backed off like an all-ones BAR: a
	 * GPU that fell off the bus with its link down answers config reads
	 * with all-ones too, as the kernel's own presence test assumes
	 * (pci_device_is_present() -> pci_bus_read_dev_vendor_id()), and
	 * each such read is a non-posted request that may time out; a
	 * function with decoding off answers no BAR read until its owner
	 * enables it again (after nvidia.ko's own FLR, for one).
	 */
	g = NVS_GATE_DEAD;
	if (pci_read_config_word(pdev, PCI_COMMAND, &cmd)) {
		if (why)
			strscpy(why, "config space unreadable", whylen);
		goto err_put;
	}
	if (cmd == 0xffff) {
		if (why)
			strscpy(why, "config space all-ones (fallen off the bus)",
				whylen);
		goto err_put;
	}
	if (!(cmd & PCI_COMMAND_MEMORY)) {
		if (why)
			strscpy(why, "memory decoding disabled", whylen);
		goto err_put;
	}
	return NVS_GATE_OPEN;

err_put:
	if (*rpm)
		pm_runtime_put(&pdev->dev);
	*rpm = false;
err_unlock:
	pci_cfg_access_unlock(pdev);
	return g;
}

void nvs_gate_close(struct pci_dev *pdev, bool rpm)
{
	/* pm_runtime_put(), not _autosuspend: it must not extend the timer */
	if (rpm)
		pm_runtime_put(&pdev->dev);
	pci_cfg_access_unlock(pdev);
}
