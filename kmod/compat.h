/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel API difference between 5.15 and 6.19 that the module meets,
 * in one place. The COMPAT_* switches come from compile probes
 * (kmod/conftest.sh, run by Kbuild), not from version numbers, because
 * distro and stable kernels backport API changes.
 */
#ifndef _NVS_COMPAT_H
#define _NVS_COMPAT_H

#include <linux/device.h>
#include <linux/module.h>
#include <linux/pm_runtime.h>
#include <net/genetlink.h>
#include "conftest.h"

#ifndef GENL_MCAST_CAP_NET_ADMIN
#define GENL_MCAST_CAP_NET_ADMIN GENL_UNS_ADMIN_PERM
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

#ifdef COMPAT_HRTIMER_SETUP
#define compat_hrtimer_setup hrtimer_setup
#else
#include <linux/hrtimer.h>
static inline void compat_hrtimer_setup(struct hrtimer *t,
					enum hrtimer_restart (*fn)(struct hrtimer *),
					clockid_t clock, enum hrtimer_mode mode)
{
	hrtimer_init(t, clock, mode);
	t->function = fn;
}
#endif

#ifndef COMPAT_TIMER_DELETE_SYNC
#define timer_delete_sync del_timer_sync
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
 * hwmon_chip_info.info: `const struct hwmon_channel_info **` before 6.4,
 * `... * const *` since. A non-const array of const pointers assigns to
 * both, so declare it as
 *	static const struct hwmon_channel_info *nvs_info[] = { ... };
 * COMPAT_HWMON_INFO_CONST_PTRS is there for code that needs to know.
 */

#endif /* _NVS_COMPAT_H */
