// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: hwmon
 *
 * One hwmon chip named "nvsidecar" per GPU, parented on the GPU's PCI
 * device so that libsensors lists it as nvsidecar-pci-XXXX (it ignores
 * hwmon devices below class devices). The PCI device belongs to another
 * driver, so registration is not devm: core.c unregisters the chip before
 * the PCI device goes away.
 *
 * Channels follow the chip recipe, in sensor order, skipping sensors that
 * are not present (absent GDDR modules). Per channel N:
 *
 *   tempN_input          0444  current value, m°C (1/256 °C resolution)
 *   tempN_label          0444  recipe label: hotspot, average, ch0, mem3...
 *   tempN_highest        0444  highest value since the last reset, m°C
 *   tempN_lowest         0444  lowest value since the last reset, m°C
 *   tempN_reset_history  0200  write 1: reset highest/lowest
 *   tempN_max            0644  threshold, m°C; reads NVS_THRESH_MAX_MC when
 *                              none is set; a write is clamped to
 *                              NVS_THRESH_MIN_MC..NVS_THRESH_MAX_MC
 *   tempN_max_alarm      0444  1 while the current reading is valid and
 *                              above max; 0 while there is none (asleep,
 *                              unbound, unreadable), whatever the last
 *                              reading was
 * and for the chip:
 *   temp_reset_history   0200  write 1: reset every channel's history
 *
 * Reads that have no real value (register unreadable, poisoned, GPU
 * without driver, asleep or removed; no history) return
 * -ENODATA, so userspace never sees a made-up number. Writes are root-only
 * by mode and checked here. With sample_hz 0 a read of a temperature file
 * takes a fresh sample, rate-limited (nvs_sample_on_demand()).
 *
 * Locking: the hwmon core serialises callbacks only from 6.18 on, and the
 * sampler updates the same state, so every callback takes gpu->lock. The
 * caller of nvs_hwmon_unregister() must not hold gpu->lock: unregistering
 * waits for callbacks in flight, which take it.
 */
#include <linux/hwmon.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include "nvs.h"

struct nvs_hwmon {
	struct nvs_gpu *gpu;
	unsigned int nchan;
	u8 sensor[NVS_MAX_SENSORS];		/* channel -> sensor id */
	u32 temp_config[NVS_MAX_SENSORS + 1];	/* zero-terminated */
	u32 chip_config[2];
	struct hwmon_channel_info temp_info;
	struct hwmon_channel_info chip_info;
	/*
	 * Not const: hwmon_chip_info.info is "const info **" before 6.4 and
	 * "const info * const *" after; a plain array converts to both.
	 */
	const struct hwmon_channel_info *info[3];
	struct hwmon_chip_info chip;
};

#define NVS_HWMON_TEMP_CONFIG	(HWMON_T_INPUT | HWMON_T_LABEL |	\
				 HWMON_T_HIGHEST | HWMON_T_LOWEST |	\
				 HWMON_T_RESET_HISTORY | HWMON_T_MAX |	\
				 HWMON_T_MAX_ALARM)

static umode_t nvs_hwmon_is_visible(const void *data,
				    enum hwmon_sensor_types type, u32 attr,
				    int channel)
{
	const struct nvs_hwmon *hw = data;

	if (type == hwmon_chip)
		return attr == hwmon_chip_temp_reset_history ? 0200 : 0;
	if (type != hwmon_temp || channel < 0 || channel >= hw->nchan)
		return 0;

	switch (attr) {
	case hwmon_temp_input:
	case hwmon_temp_label:
	case hwmon_temp_highest:
	case hwmon_temp_lowest:
	case hwmon_temp_max_alarm:
		return 0444;
	case hwmon_temp_max:
		return 0644;
	case hwmon_temp_reset_history:
		return 0200;
	default:
		return 0;
	}
}

/* Stale values must not pass for current ones once sampling has stopped. */
static bool nvs_hwmon_current(const struct nvs_gpu *gpu)
{
	if (gpu->removed)
		return false;
	return gpu->status == NVS_STATUS_OK ||
	       gpu->status == NVS_STATUS_UNAVAILABLE;
}

static int nvs_hwmon_read(struct device *dev, enum hwmon_sensor_types type,
			  u32 attr, int channel, long *val)
{
	struct nvs_hwmon *hw = dev_get_drvdata(dev);
	struct nvs_gpu *gpu = hw->gpu;
	const struct nvs_sensor *s;
	int ret = -EOPNOTSUPP;

	if (type != hwmon_temp || channel < 0 || channel >= hw->nchan)
		return -EOPNOTSUPP;

	mutex_lock(&gpu->lock);
	s = &gpu->sensor[hw->sensor[channel]];
	if (attr != hwmon_temp_max)
		nvs_sample_on_demand(gpu);
	switch (attr) {
	case hwmon_temp_input:
		ret = -ENODATA;
		if (!s->valid || !nvs_hwmon_current(gpu))
			break;
		*val = s->mc;
		ret = 0;
		break;
	case hwmon_temp_highest:
	case hwmon_temp_lowest:
		ret = -ENODATA;
		if (!s->has_hist)
			break;
		*val = attr == hwmon_temp_highest ? s->highest : s->lowest;
		ret = 0;
		break;
	case hwmon_temp_max:
		/*
		 * No threshold reads as the highest settable one, which never
		 * alarms. Not -ENODATA, though hwmon's rules would prefer it:
		 * lm-sensors 3.6.0 (Debian 12) prints "ERROR: Can't get value
		 * of subfeature tempN_max: Can't read" for every such sensor
		 * (tests/vm/t-thermal-values.sh, thermal-sensors-clean), and
		 * hiding the attribute means registering the chip anew (a new
		 * hwmonN) whenever a threshold is set or cleared.
		 */
		*val = s->has_max ? s->max : NVS_THRESH_MAX_MC;
		ret = 0;
		break;
	case hwmon_temp_max_alarm:
		/* a reading that stopped is not above anything */
		*val = s->has_max && s->alarm && s->valid &&
		       nvs_hwmon_current(gpu);
		ret = 0;
		break;
	}
	mutex_unlock(&gpu->lock);
	return ret;
}

static int nvs_hwmon_read_string(struct device *dev,
				 enum hwmon_sensor_types type, u32 attr,
				 int channel, const char **str)
{
	struct nvs_hwmon *hw = dev_get_drvdata(dev);
	struct nvs_gpu *gpu = hw->gpu;

	if (type != hwmon_temp || attr != hwmon_temp_label ||
	    channel < 0 || channel >= hw->nchan)
		return -EOPNOTSUPP;
	/* Recipe labels are constant: no lock needed. */
	*str = nvs_sensor_label(gpu, hw->sensor[channel]);
	return 0;
}

static int nvs_hwmon_write(struct device *dev, enum hwmon_sensor_types type,
			   u32 attr, int channel, long val)
{
	struct nvs_hwmon *hw = dev_get_drvdata(dev);
	struct nvs_gpu *gpu = hw->gpu;
	int ret;

	if (type == hwmon_chip && attr == hwmon_chip_temp_reset_history) {
		if (val != 1)
			return -EINVAL;
		mutex_lock(&gpu->lock);
		nvs_reset_history(gpu, -1);
		mutex_unlock(&gpu->lock);
		return 0;
	}
	if (type != hwmon_temp || channel < 0 || channel >= hw->nchan)
		return -EOPNOTSUPP;

	switch (attr) {
	case hwmon_temp_reset_history:
		if (val != 1)
			return -EINVAL;
		mutex_lock(&gpu->lock);
		nvs_reset_history(gpu, hw->sensor[channel]);
		mutex_unlock(&gpu->lock);
		return 0;
	case hwmon_temp_max:
		/*
		 * A continuous limit is clamped, not refused
		 * (Documentation/hwmon/sysfs-interface.rst, "clamp_val").
		 * Text that is not a number never gets here: the hwmon core
		 * refuses it with kstrtol()'s error.
		 */
		val = clamp_val(val, NVS_THRESH_MIN_MC, NVS_THRESH_MAX_MC);
		mutex_lock(&gpu->lock);
		ret = nvs_set_threshold(gpu, hw->sensor[channel], false, val);
		mutex_unlock(&gpu->lock);
		return ret;
	default:
		return -EOPNOTSUPP;
	}
}

static const struct hwmon_ops nvs_hwmon_ops = {
	.is_visible = nvs_hwmon_is_visible,
	.read = nvs_hwmon_read,
	.read_string = nvs_hwmon_read_string,
	.write = nvs_hwmon_write,
};

int nvs_hwmon_register(struct nvs_gpu *gpu)
{
	struct nvs_hwmon *hw;
	struct device *hdev;
	unsigned int i;

	if (gpu->hwmon)
		return 0;

	hw = kzalloc(sizeof(*hw), GFP_KERNEL);
	if (!hw)
		return -ENOMEM;
	hw->gpu = gpu;

	/* Presence is decided when the registers are mapped, under the lock. */
	mutex_lock(&gpu->lock);
	for (i = 0; i < gpu->nsensors && i < NVS_MAX_SENSORS; i++) {
		if (!gpu->sensor[i].present)
			continue;
		hw->sensor[hw->nchan] = i;
		hw->temp_config[hw->nchan] = NVS_HWMON_TEMP_CONFIG;
		hw->nchan++;
	}
	mutex_unlock(&gpu->lock);

	hw->chip_config[0] = HWMON_C_TEMP_RESET_HISTORY;
	hw->chip_info.type = hwmon_chip;
	hw->chip_info.config = hw->chip_config;
	hw->temp_info.type = hwmon_temp;
	hw->temp_info.config = hw->temp_config;
	hw->info[0] = &hw->chip_info;
	hw->info[1] = &hw->temp_info;
	hw->chip.ops = &nvs_hwmon_ops;
	hw->chip.info = hw->info;

	hdev = hwmon_device_register_with_info(&gpu->pdev->dev, "nvsidecar", hw,
					       &hw->chip, NULL);
	if (IS_ERR(hdev)) {
		kfree(hw);
		return PTR_ERR(hdev);
	}
	gpu->hwmon = hdev;
	return 0;
}

void nvs_hwmon_unregister(struct nvs_gpu *gpu)
{
	struct nvs_hwmon *hw;

	if (!gpu->hwmon)
		return;
	hw = dev_get_drvdata(gpu->hwmon);
	hwmon_device_unregister(gpu->hwmon);
	gpu->hwmon = NULL;
	kfree(hw);
}
