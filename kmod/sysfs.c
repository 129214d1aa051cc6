// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: sysfs class
 *
 * /sys/class/nvsidecar/gpuN, one per GPU, a child of the GPU's PCI device.
 * Every file holds one line (docs/ABI/sysfs-class-nvsidecar):
 *
 *   chip                 0444  recipe name ("gb202")
 *   name                 0444  marketing name ("GeForce RTX 5090")
 *   pci                  0444  PCI bus id ("0000:01:00.0")
 *   status               0444  "<state>" or "<state>: <reason>", state one
 *                              of ok, no-driver, asleep, unavailable, removed
 *   sample_hz            0644  samples per second, 0 = on demand; root
 *                              writes a decimal 0..NVS_SAMPLE_HZ_MAX
 *   mem_hz               0644  memory-sensor passes per second; root
 *                              writes a decimal 1..NVS_MEM_HZ_MAX
 *   samples              0444  sampling passes taken
 *   unavailable_reads    0444  passes skipped or unreadable
 *   backoff_skips        0444  passes not tried while backing off
 *   threshold_crossings  0444  threshold crossings, all sensors
 *   last_sample_ns       0444  CLOCK_MONOTONIC ns of the last sample, 0: none
 *   seq                  0444  sequence number of the newest sample, 0: none
 *   mmio_reads           0444  32-bit register reads done so far
 *   simulated            0444  1 for a sim= device, else 0
 *   dmabuf_last_probe    0444  summary of the last dma-buf probe, or "none"
 *
 * Attributes are plain device attributes created with the device
 * (device_create_with_groups), not class attributes: the class attribute
 * and devnode prototypes changed constness across 6.2-6.4.
 */
#include <linux/capability.h>
#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/kernel.h>
#include <linux/sysfs.h>
#include "nvs.h"
#include "compat.h"

static struct class *nvs_class;

static ssize_t chip_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", nvs_chip_name(gpu));
}
static DEVICE_ATTR_RO(chip);

static ssize_t name_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", gpu->name);
}
static DEVICE_ATTR_RO(name);

static ssize_t pci_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", nvs_gpu_busid(gpu));
}
static DEVICE_ATTR_RO(pci);

static ssize_t status_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	enum nvs_status st;
	ssize_t len;

	mutex_lock(&gpu->lock);
	nvs_sample_on_demand(gpu);
	st = gpu->removed ? NVS_STATUS_REMOVED : gpu->status;
	len = sysfs_emit(buf, "%s", nvs_status_str(st));
	if (gpu->reason[0])
		len += sysfs_emit_at(buf, len, ": %.*s",
				     (int)sizeof(gpu->reason), gpu->reason);
	len += sysfs_emit_at(buf, len, "\n");
	mutex_unlock(&gpu->lock);
	return len;
}
static DEVICE_ATTR_RO(status);

static ssize_t sample_hz_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	unsigned int hz;

	mutex_lock(&gpu->lock);
	hz = gpu->sample_hz;
	mutex_unlock(&gpu->lock);
	return sysfs_emit(buf, "%u\n", hz);
}

static ssize_t sample_hz_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	unsigned int hz;
	ssize_t ret;

	/* kstrtouint takes one optional trailing newline and nothing else. */
	if (kstrtouint(buf, 10, &hz) || hz > NVS_SAMPLE_HZ_MAX)
		return -EINVAL;
	/*
	 * As GPU_SET: raising the read budget needs CAP_SYS_ADMIN (genl.c).
	 * capable() checks the writer, not the opener (review K11): the file
	 * is 0644 root, so only root opens it for writing, and the check can
	 * only narrow what that opener may do; netlink checks the socket's
	 * opener and the sender (netlink_capable()).
	 */
	if (nvs_effective_hz(hz) > nvs_effective_hz(READ_ONCE(nvs_default_hz)) &&
	    !capable(CAP_SYS_ADMIN))
		return -EPERM;

	mutex_lock(&gpu->lock);
	ret = -ENODEV;
	if (gpu->removed)
		goto out_unlock;
	nvs_sampler_set_hz(gpu, hz);
	ret = count;
out_unlock:
	mutex_unlock(&gpu->lock);
	return ret;
}
static DEVICE_ATTR_RW(sample_hz);

static ssize_t mem_hz_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	unsigned int hz;

	mutex_lock(&gpu->lock);
	hz = gpu->mem_hz;
	mutex_unlock(&gpu->lock);
	return sysfs_emit(buf, "%u\n", hz);
}

static ssize_t mem_hz_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	unsigned int hz;
	ssize_t ret;

	if (kstrtouint(buf, 10, &hz) || !hz || hz > NVS_MEM_HZ_MAX)
		return -EINVAL;
	if (hz > READ_ONCE(nvs_default_mem_hz) && !capable(CAP_SYS_ADMIN))
		return -EPERM;

	mutex_lock(&gpu->lock);
	ret = -ENODEV;
	if (gpu->removed)
		goto out_unlock;
	nvs_sampler_set_mem_hz(gpu, hz);
	ret = count;
out_unlock:
	mutex_unlock(&gpu->lock);
	return ret;
}
static DEVICE_ATTR_RW(mem_hz);

/* Counters are u64 and written by the sampler: read them under the lock. */
#define NVS_U64_ATTR(_name, _field)					\
static ssize_t _name##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	struct nvs_gpu *gpu = dev_get_drvdata(dev);			\
	u64 v;								\
									\
	mutex_lock(&gpu->lock);						\
	v = gpu->_field;						\
	mutex_unlock(&gpu->lock);					\
	return sysfs_emit(buf, "%llu\n", v);				\
}									\
static DEVICE_ATTR_RO(_name)

NVS_U64_ATTR(samples, samples);
NVS_U64_ATTR(unavailable_reads, unavailable);
NVS_U64_ATTR(backoff_skips, backoff_skips);
NVS_U64_ATTR(threshold_crossings, crossings);
NVS_U64_ATTR(last_sample_ns, last_sample_ns);
NVS_U64_ATTR(seq, seq);
NVS_U64_ATTR(mmio_reads, mmio_reads);

static ssize_t simulated_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", gpu->simulated);
}
static DEVICE_ATTR_RO(simulated);

static ssize_t dmabuf_last_probe_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	struct nvs_gpu *gpu = dev_get_drvdata(dev);
	ssize_t len;

	mutex_lock(&gpu->lock);
	if (gpu->dmabuf_last[0])
		len = sysfs_emit(buf, "%.*s\n", (int)sizeof(gpu->dmabuf_last),
				 gpu->dmabuf_last);
	else
		len = sysfs_emit(buf, "none\n");
	mutex_unlock(&gpu->lock);
	return len;
}
static DEVICE_ATTR_RO(dmabuf_last_probe);

static struct attribute *nvs_gpu_attrs[] = {
	&dev_attr_chip.attr,
	&dev_attr_name.attr,
	&dev_attr_pci.attr,
	&dev_attr_status.attr,
	&dev_attr_sample_hz.attr,
	&dev_attr_mem_hz.attr,
	&dev_attr_samples.attr,
	&dev_attr_unavailable_reads.attr,
	&dev_attr_backoff_skips.attr,
	&dev_attr_threshold_crossings.attr,
	&dev_attr_last_sample_ns.attr,
	&dev_attr_seq.attr,
	&dev_attr_mmio_reads.attr,
	&dev_attr_simulated.attr,
	&dev_attr_dmabuf_last_probe.attr,
	NULL
};
ATTRIBUTE_GROUPS(nvs_gpu);

/*
 * The class device's drvdata is the GPU. core.c holds its reference until
 * after nvs_sysfs_remove(), and device_unregister() waits for readers in
 * flight, so the show/store functions need no reference of their own.
 * Callers must not hold gpu->lock around nvs_sysfs_remove() for the same
 * reason.
 */
int nvs_sysfs_add(struct nvs_gpu *gpu)
{
	struct device *dev;

	if (gpu->classdev)
		return 0;
	dev = device_create_with_groups(nvs_class, &gpu->pdev->dev, MKDEV(0, 0),
					gpu, nvs_gpu_groups, "gpu%u",
					gpu->index);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	gpu->classdev = dev;
	return 0;
}

void nvs_sysfs_remove(struct nvs_gpu *gpu)
{
	if (!gpu->classdev)
		return;
	device_unregister(gpu->classdev);
	gpu->classdev = NULL;
}

int nvs_sysfs_init(void)
{
	nvs_class = compat_class_create("nvsidecar");
	return PTR_ERR_OR_ZERO(nvs_class);
}

void nvs_sysfs_uninit(void)
{
	class_destroy(nvs_class);
	nvs_class = NULL;
}
