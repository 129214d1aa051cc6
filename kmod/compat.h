/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel API difference that the module meets between Linux 5.10
 * (the oldest kernel a CI build lane compiles: Debian bullseye) and 7.3
 * (experimental's release candidate), in one place. The COMPAT_* switches
 * come from compile probes (kmod/conftest.sh, run by Kbuild), not from
 * version numbers, because distro and stable kernels backport API changes
 * (Debian's 6.1 has timer_delete_sync(), bullseye's 5.10.223 has
 * param_set_uint_minmax(); neither is in its mainline release).
 */
#ifndef _NVS_COMPAT_H
#define _NVS_COMPAT_H

#include <linux/device.h>
#include <linux/dma-resv.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pm_runtime.h>
#include <linux/scatterlist.h>
#include <linux/swiotlb.h>
#include <net/genetlink.h>
#include "conftest.h"

#ifdef COMPAT_LINUX_MATH_H
#include <linux/math.h>
#endif

#ifndef GENL_REQ_ATTR_CHECK
#define GENL_REQ_ATTR_CHECK(info, attr) ({				\
	bool __missing = !(info)->attrs[attr];				\
	if (__missing)							\
		GENL_SET_ERR_MSG(info, "missing attribute");		\
	__missing;							\
})
#endif

#ifdef COMPAT_GENL_INFO_DUMP
#define compat_dump_attrs(cb) (genl_info_dump(cb)->attrs)
#else
#define compat_dump_attrs(cb) (genl_dumpit_info(cb)->attrs)
#endif

#ifndef COMPAT_NLA_STRSCPY
#define nla_strscpy nla_strlcpy
#endif

#ifdef COMPAT_CLASS_CREATE_NO_OWNER
#define compat_class_create(name) class_create(name)
#else
#define compat_class_create(name) class_create(THIS_MODULE, name)
#endif

/* >0: active and referenced; 0: suspended (not woken); -EINVAL: rpm off */
#ifdef COMPAT_RPM_GET_IF_ACTIVE_1ARG
#define compat_rpm_get_if_active(dev) pm_runtime_get_if_active(dev)
#else
#define compat_rpm_get_if_active(dev) pm_runtime_get_if_active(dev, true)
#endif

#ifdef COMPAT_PARAM_SET_UINT_MINMAX
#define compat_param_set_uint_minmax param_set_uint_minmax
#else
static inline int compat_param_set_uint_minmax(const char *val,
					       const struct kernel_param *kp,
					       unsigned int min, unsigned int max)
{
	unsigned int num;
	int ret;

	if (!val)
		return -EINVAL;
	ret = kstrtouint(val, 0, &num);
	if (ret)
		return ret;
	if (num < min || num > max)
		return -EINVAL;
	*((unsigned int *)kp->arg) = num;
	return 0;
}
#endif

#ifdef COMPAT_MODULE_IMPORT_NS_STRING
#define COMPAT_IMPORT_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#else
#define COMPAT_IMPORT_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#endif

/* Use as `.COMPAT_DMABUF_NOTIFY = fn` in struct dma_buf_attach_ops. */
#ifdef COMPAT_DMABUF_INVALIDATE_MAPPINGS
#define COMPAT_DMABUF_NOTIFY invalidate_mappings
#else
#define COMPAT_DMABUF_NOTIFY move_notify
#endif

/*
 * The fences the kernel itself puts on a buffer (a move, a clear) before
 * its contents may be used: DMA_RESV_USAGE_KERNEL since 5.19. Before, the
 * same fences were the exclusive one, which wait_all/test_all = false
 * selects; before 5.15 the functions carried an _rcu suffix.
 */
static inline long compat_dma_resv_wait_kernel(struct dma_resv *resv,
					       bool intr, unsigned long timeout)
{
#if defined(COMPAT_DMA_RESV_USAGE)
	return dma_resv_wait_timeout(resv, DMA_RESV_USAGE_KERNEL, intr, timeout);
#elif defined(COMPAT_DMA_RESV_WAIT_TIMEOUT)
	return dma_resv_wait_timeout(resv, false, intr, timeout);
#else
	return dma_resv_wait_timeout_rcu(resv, false, intr, timeout);
#endif
}

/* 5.16: every streaming mapping of dev goes through a swiotlb bounce buffer */
#ifdef COMPAT_SWIOTLB_FORCE_BOUNCE
#define compat_swiotlb_force_bounce(dev) is_swiotlb_force_bounce(dev)
#else
#define compat_swiotlb_force_bounce(dev) ((void)(dev), false)
#endif

/* 6.2: a P2PDMA segment mapped as a PCI bus address, not through the IOMMU */
#ifdef COMPAT_SG_DMA_IS_BUS_ADDRESS
#define compat_sg_dma_is_bus_address(sg) sg_dma_is_bus_address(sg)
#else
#define compat_sg_dma_is_bus_address(sg) ((void)(sg), false)
#endif

/*
 * Not probed, because one spelling builds everywhere:
 * hwmon_chip_info.info is `const struct hwmon_channel_info **` before 6.4
 * and `... * const *` since; a non-const array of const pointers assigns
 * to both (hwmon.c). MODULE_IMPORT_NS(DMA_BUF) before 5.16, where dma-buf
 * had no namespace, imports an unused one, which modpost accepts.
 */

#endif /* _NVS_COMPAT_H */
