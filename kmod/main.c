// SPDX-License-Identifier: GPL-2.0
/*
 * nvsidecar: hidden NVIDIA GPU thermal sensors through hwmon, sysfs and
 * generic netlink, read beside the NVIDIA driver without touching it.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include "nvs.h"
#include "compat.h"

static char *sim;
module_param(sim, charp, 0444);
MODULE_PARM_DESC(sim, "Treat QEMU ivshmem devices as GPUs for testing: 1af4:1110:bar:chip[:owned], e.g. 1af4:1110:2:gb202 (chip auto: the one PMC_BOOT_0 names); owned: read only while a driver is bound, like a real GPU");

unsigned int nvs_default_hz = 50;
unsigned int nvs_default_mem_hz = NVS_MEM_HZ_DEFAULT;
unsigned int nvs_reprobe_s = NVS_REPROBE_S_DEFAULT;

static int sample_hz_set(const char *val, const struct kernel_param *kp)
{
	return compat_param_set_uint_minmax(val, kp, 0, NVS_SAMPLE_HZ_MAX);
}

static const struct kernel_param_ops sample_hz_ops = {
	.set = sample_hz_set,
	.get = param_get_uint,
};

/* Read-only after load: per-GPU rates are set through sysfs or netlink. */
module_param_cb(sample_hz, &sample_hz_ops, &nvs_default_hz, 0444);
MODULE_PARM_DESC(sample_hz, "Default sampling rate in Hz, 0-1000; 0 reads on demand, at most 50 times a second (default 50)");

static int mem_hz_set(const char *val, const struct kernel_param *kp)
{
	return compat_param_set_uint_minmax(val, kp, 1, NVS_MEM_HZ_MAX);
}

static const struct kernel_param_ops mem_hz_ops = {
	.set = mem_hz_set,
	.get = param_get_uint,
};

module_param_cb(mem_hz, &mem_hz_ops, &nvs_default_mem_hz, 0444);
MODULE_PARM_DESC(mem_hz, "Default rate of memory-module reads in Hz, 1-10 (default 1)");

static int reprobe_set(const char *val, const struct kernel_param *kp)
{
	return compat_param_set_uint_minmax(val, kp, 1, 3600);
}

static const struct kernel_param_ops reprobe_ops = {
	.set = reprobe_set,
	.get = param_get_uint,
};

module_param_cb(mem_reprobe_s, &reprobe_ops, &nvs_reprobe_s, 0444);
MODULE_PARM_DESC(mem_reprobe_s, "Seconds to the first re-read of memory modules found absent or invalid, doubling after each that finds none, up to 32 times this; 1-3600 (default 30)");

static int __init nvs_mod_init(void)
{
	int ret;

#ifdef NVS_SELFTEST
	{
		/* before the netlink family exists: test events go nowhere */
		unsigned int failed = 0;

		failed += !nvs_selftest_decode();
		failed += !nvs_selftest_ring();
		failed += !nvs_selftest_threshold();
		failed += !nvs_selftest_busid();
		failed += !nvs_selftest_walk();
		if (failed) {
			pr_err("%u self-test group(s) failed: not loading\n",
			       failed);
			return -ENOTRECOVERABLE;
		}
	}
#endif
	ret = nvs_genl_init();
	if (ret)
		return ret;

	ret = nvs_sysfs_init();
	if (ret)
		goto err_genl;

	ret = nvs_core_init(sim);
	if (ret)
		goto err_sysfs;

	pr_info("version %s loaded, sampling at %u Hz, memory at %u Hz\n",
		NVS_VERSION, nvs_default_hz, nvs_default_mem_hz);
	return 0;

err_sysfs:
	nvs_sysfs_uninit();
err_genl:
	nvs_genl_uninit();
	return ret;
}

static void __exit nvs_mod_exit(void)
{
	nvs_core_uninit();
	nvs_sysfs_uninit();
	nvs_genl_uninit();
}

module_init(nvs_mod_init);
module_exit(nvs_mod_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("nvsidecar developers");
MODULE_DESCRIPTION("Hidden NVIDIA GPU thermal sensors (hwmon, sysfs, generic netlink)");
MODULE_VERSION(NVS_VERSION);
MODULE_ALIAS_GENL_FAMILY(NVS_GENL_NAME);
