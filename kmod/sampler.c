// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: one kthread per GPU reading the recipe's registers on
 * absolute deadlines, so the rate does not drift with the time a pass takes
 * and the kernel's hrtimers, not jiffies, set the pace (50-1000 Hz).
 *
 * Die sensors are read on every pass. Memory sensors are read on every
 * DIV_ROUND_UP(hz, NVS_MEM_HZ)-th pass, i.e. at most NVS_MEM_HZ (10) times a
 * second: GDDR temperatures move slowly and each module costs two reads.
 * Between memory passes a sample carries the last memory readings.
 *
 * A pass touches the BAR only when the device is in D0, not offline, has
 * memory decoding on and is runtime-active; a suspended GPU is never woken.
 * What "unavailable" means:
 *   - status "asleep": runtime-suspended or not in D0; nothing was read.
 *   - status "unavailable": channel offline, decoding off, config space
 *     unreadable, the die block read all-ones (device gone or resetting),
 *     or no sensor decoded to a plausible value.
 *   - a single sensor is invalid (hwmon -ENODATA) when its value is
 *     all-ones, 0xBADFxxxx, fails its validity register or is implausible.
 * Passes of the first two kinds count in gpu->unavailable and add nothing
 * to the ring; every other pass is one ring entry (gpu->samples == seq).
 */
#include <linux/delay.h>
#include <linux/freezer.h>
#include <linux/hrtimer.h>
#include <linux/io.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/pci.h>
#include <linux/pm_runtime.h>
#include <linux/sched.h>
#include <linux/string.h>
#include "nvs.h"
#include "chips.h"
#include "compat.h"

static bool nvs_may_sample(const struct nvs_gpu *gpu)
{
	return gpu->mapped && !gpu->removed &&
	       (gpu->free_sim || gpu->driver_bound);
}

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
 * Checks everything that must hold before the BAR is touched, and keeps it
 * so until nvs_access_end(). Returns true with *rpm telling whether a
 * runtime PM reference is to be put afterwards; false with the status
 * updated.
 *
 * The checks alone would be check-then-use: a reset started between them
 * and the reads (sysfs "reset", a driver's pci_reset_function()) turns
 * decoding off and resets the device under the reads, which some servers
 * escalate to a fatal error. Every reset path holds the device's config
 * access lock (pci_dev_lock()) for the whole reset, so holding it across
 * the pass excludes them; a pass that finds it taken is skipped instead of
 * waiting. It blocks only userspace config accesses (lspci), for the few
 * microseconds of a pass; the kernel's own config reads below still work.
 */
static bool nvs_access_begin(struct nvs_gpu *gpu, bool *rpm)
{
	struct pci_dev *pdev = gpu->pdev;
	char why[48];
	u16 cmd;
	int ret;

	*rpm = false;
	if (!pci_cfg_access_trylock(pdev)) {
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "reset or config access in progress");
		return false;
	}
	if (pci_channel_offline(pdev)) {
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "PCI channel offline");
		goto err_unlock;
	}

	ret = compat_rpm_get_if_active(&pdev->dev);
	if (ret == 0) {
		nvs_gpu_set_status(gpu, NVS_STATUS_ASLEEP, "runtime-suspended");
		goto err_unlock;
	}
	if (ret > 0) {
		*rpm = true;
	} else if (ret != -EINVAL) {	/* -EINVAL: runtime PM disabled */
		snprintf(why, sizeof(why), "runtime PM error %d", ret);
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE, why);
		goto err_unlock;
	}

	if (!nvs_in_d0(pdev)) {
		snprintf(why, sizeof(why), "in %s",
			 pci_power_name(pdev->current_state));
		nvs_gpu_set_status(gpu, NVS_STATUS_ASLEEP, why);
		goto err_put;
	}
	if (pci_read_config_word(pdev, PCI_COMMAND, &cmd) || cmd == 0xffff) {
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "config space unreadable");
		goto err_put;
	}
	if (!(cmd & PCI_COMMAND_MEMORY)) {
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "memory decoding disabled");
		goto err_put;
	}
	return true;

err_put:
	if (*rpm)
		pm_runtime_put(&pdev->dev);
	*rpm = false;
err_unlock:
	pci_cfg_access_unlock(pdev);
	return false;
}

static void nvs_access_end(struct nvs_gpu *gpu, bool rpm)
{
	/* pm_runtime_put(), not _autosuspend: it must not extend the timer */
	if (rpm)
		pm_runtime_put(&gpu->pdev->dev);
	pci_cfg_access_unlock(gpu->pdev);
}

static u32 nvs_read(struct nvs_gpu *gpu, u32 off)
{
	void __iomem *reg = nvs_gpu_reg(gpu, off);

	if (!reg)
		return ~0U;
	gpu->mmio_reads++;
	return readl(reg);
}

static void nvs_update(struct nvs_gpu *gpu, unsigned int i, bool valid, s32 mc)
{
	struct nvs_sensor *st = &gpu->sensor[i];
	bool above;

	st->valid = valid;
	if (!valid)
		return;
	st->mc = mc;
	if (!st->has_hist) {
		st->highest = mc;
		st->lowest = mc;
		st->has_hist = true;
	} else {
		st->highest = max(st->highest, mc);
		st->lowest = min(st->lowest, mc);
	}

	if (!st->has_max)
		return;
	above = mc > st->max;
	if (above == st->alarm)
		return;
	st->alarm = above;
	if (above) {
		st->crossings++;
		gpu->crossings++;
	}
	nvs_genl_event_threshold(gpu, i, above);
}

/* One pass over the recipe; mem: also read the memory sensors. */
static void nvs_pass(struct nvs_gpu *gpu, bool mem)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	u32 raw[NVS_MAX_SENSORS], vraw[NVS_MAX_SENSORS];
	DECLARE_BITMAP(rd, NVS_MAX_SENSORS);
	bool all_ones = true, rpm;
	unsigned int i, nvalid = 0;
	int hottest = -1;
	struct nvs_sample *e;
	u32 valid_mask = 0;
	s32 mc;
	u64 now;

	lockdep_assert_held(&gpu->lock);
	if (!nvs_may_sample(gpu))
		return;
	if (!nvs_access_begin(gpu, &rpm)) {
		/*
		 * The last readings are no longer current: report them as
		 * unavailable (-ENODATA) rather than as a stale number.
		 */
		gpu->unavailable++;
		for (i = 0; i < gpu->nsensors; i++)
			gpu->sensor[i].valid = false;
		return;
	}

	bitmap_zero(rd, NVS_MAX_SENSORS);
	for (i = 0; i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_DIE && !mem)
			continue;
		if (cs[i].kind == NVS_KIND_MODULE && !gpu->sensor[i].present)
			continue;
		raw[i] = nvs_read(gpu, cs[i].off);
		vraw[i] = cs[i].decode == NVS_DEC_GDDR7 ?
			  nvs_read(gpu, cs[i].valid_off) : 0;
		if (cs[i].kind == NVS_KIND_DIE && raw[i] != ~0U)
			all_ones = false;
		__set_bit(i, rd);
	}
	nvs_access_end(gpu, rpm);
	now = ktime_get_ns();

	if (all_ones) {
		gpu->unavailable++;
		for (i = 0; i < gpu->nsensors; i++)
			gpu->sensor[i].valid = false;
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "device returned all-ones");
		return;
	}

	for (i = 0; i < gpu->nsensors; i++) {
		bool ok;

		if (!test_bit(i, rd) || cs[i].kind == NVS_KIND_MODULE_MAX)
			continue;
		ok = nvs_decode(cs[i].decode, raw[i], vraw[i], &mc);
		nvs_update(gpu, i, ok, mc);
		if (ok && cs[i].kind == NVS_KIND_MODULE &&
		    (hottest < 0 || mc > gpu->sensor[hottest].mc))
			hottest = i;
	}
	/* "mem": the hottest module; the broadcast word when none reads */
	for (i = 0; i < gpu->nsensors; i++) {
		if (!test_bit(i, rd) || cs[i].kind != NVS_KIND_MODULE_MAX)
			continue;
		if (hottest >= 0)
			nvs_update(gpu, i, true, gpu->sensor[hottest].mc);
		else
			nvs_update(gpu, i, nvs_decode(cs[i].decode, raw[i], 0, &mc),
				   mc);
	}

	for (i = 0; i < gpu->nsensors; i++) {
		if (gpu->sensor[i].valid) {
			valid_mask |= BIT(i);
			if (test_bit(i, rd))
				nvalid++;
		}
	}
	if (!nvalid) {
		gpu->unavailable++;
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "no valid sensor reading");
		return;
	}

	gpu->samples++;
	gpu->last_sample_ns = now;
	e = &gpu->ring[gpu->seq & (NVS_RING_LEN - 1)];
	gpu->seq++;
	e->seq = gpu->seq;
	e->ts_ns = now;
	e->valid = valid_mask;
	for (i = 0; i < NVS_MAX_SENSORS; i++)
		e->mc[i] = i < gpu->nsensors && gpu->sensor[i].valid ?
			   gpu->sensor[i].mc : 0;
	nvs_gpu_set_status(gpu, NVS_STATUS_OK, "");
}

void nvs_sample_now(struct nvs_gpu *gpu)
{
	nvs_pass(gpu, true);
}

/*
 * Memory modules that read 0xBADFxxxx right after mapping do not exist on
 * this board; hwmon hides them. If the device cannot be read now, every
 * module stays present and reads as unavailable instead.
 */
void nvs_sample_presence(struct nvs_gpu *gpu)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	unsigned int i;
	bool rpm;
	u32 raw;

	lockdep_assert_held(&gpu->lock);
	if (!nvs_may_sample(gpu) || !nvs_access_begin(gpu, &rpm))
		return;
	for (i = 0; i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_MODULE)
			continue;
		raw = nvs_read(gpu, cs[i].off);
		gpu->sensor[i].present = !nvs_raw_poison(raw);
	}
	nvs_access_end(gpu, rpm);
}

static bool nvs_sampler_idle(struct nvs_gpu *gpu)
{
	return !READ_ONCE(gpu->sample_hz) || !READ_ONCE(gpu->mapped);
}

static int nvs_sampler_fn(void *data)
{
	struct nvs_gpu *gpu = data;
	unsigned int hz, last_hz = 0, pass = 0;
	ktime_t next = 0, now;
	u64 period, slack;

	set_freezable();
	while (!kthread_should_stop()) {
		try_to_freeze();
		if (nvs_sampler_idle(gpu)) {
			/* on demand, or nothing mapped: sleep until woken */
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop() && nvs_sampler_idle(gpu))
				schedule();
			__set_current_state(TASK_RUNNING);
			last_hz = 0;
			continue;
		}

		hz = READ_ONCE(gpu->sample_hz);
		if (hz != last_hz) {
			last_hz = hz;
			pass = 0;
			next = ktime_get();
		}

		mutex_lock(&gpu->lock);
		nvs_pass(gpu, pass % DIV_ROUND_UP(hz, NVS_MEM_HZ) == 0);
		mutex_unlock(&gpu->lock);
		pass++;

		period = NSEC_PER_SEC / hz;
		slack = min_t(u64, period / 20, 100 * NSEC_PER_USEC);
		next = ktime_add_ns(next, period);
		now = ktime_get();
		/*
		 * Fell behind (a reader held the lock, or the machine cannot
		 * keep up): skip the missed slots and keep the phase, so the
		 * thread never bursts and always sleeps a little.
		 */
		if (!ktime_before(now, next))
			next = ktime_add_ns(next, period *
					    (div64_u64(ktime_to_ns(ktime_sub(now, next)),
						       period) + 1));

		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule_hrtimeout_range(&next, slack, HRTIMER_MODE_ABS);
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

int nvs_sampler_start(struct nvs_gpu *gpu)
{
	struct task_struct *t;

	t = kthread_run(nvs_sampler_fn, gpu, "nvsidecar/%u", gpu->index);
	if (IS_ERR(t))
		return PTR_ERR(t);
	mutex_lock(&gpu->lock);
	gpu->sampler = t;
	mutex_unlock(&gpu->lock);
	return 0;
}

void nvs_sampler_stop(struct nvs_gpu *gpu)
{
	struct task_struct *t;

	mutex_lock(&gpu->lock);
	t = gpu->sampler;
	gpu->sampler = NULL;
	mutex_unlock(&gpu->lock);
	/* not under gpu->lock: the thread takes it every pass */
	if (t)
		kthread_stop(t);
}

void nvs_sampler_set_hz(struct nvs_gpu *gpu, unsigned int hz)
{
	lockdep_assert_held(&gpu->lock);
	WRITE_ONCE(gpu->sample_hz, min_t(unsigned int, hz, NVS_SAMPLE_HZ_MAX));
	if (gpu->sampler)
		wake_up_process(gpu->sampler);
}

void nvs_reset_history(struct nvs_gpu *gpu, int sensor)
{
	unsigned int i;

	lockdep_assert_held(&gpu->lock);
	for (i = 0; i < gpu->nsensors; i++) {
		struct nvs_sensor *st = &gpu->sensor[i];

		if (sensor >= 0 && i != (unsigned int)sensor)
			continue;
		/* history restarts at the current reading, if there is one */
		st->has_hist = st->valid;
		st->highest = st->mc;
		st->lowest = st->mc;
	}
}

/*
 * The alarm is left as it is: the next reading decides, so re-writing the
 * same threshold while above it does not count another crossing.
 */
int nvs_set_threshold(struct nvs_gpu *gpu, int sensor, bool clear, s32 mc)
{
	struct nvs_sensor *st;

	lockdep_assert_held(&gpu->lock);
	if (sensor < 0 || (unsigned int)sensor >= gpu->nsensors)
		return -EINVAL;
	st = &gpu->sensor[sensor];
	if (clear) {
		if (st->alarm)
			nvs_genl_event_threshold(gpu, sensor, false);
		st->has_max = false;
		st->alarm = false;
		return 0;
	}
	if (mc < NVS_THRESH_MIN_MC || mc > NVS_THRESH_MAX_MC)
		return -ERANGE;
	st->max = mc;
	st->has_max = true;
	return 0;
}

unsigned int nvs_ring_read(struct nvs_gpu *gpu, u64 since,
			   struct nvs_sample *out, unsigned int max,
			   u64 *lost, u64 *next)
{
	u64 newest = gpu->seq, oldest, seq;
	unsigned int n = 0;

	lockdep_assert_held(&gpu->lock);
	*lost = 0;
	oldest = newest > NVS_RING_LEN ? newest - NVS_RING_LEN + 1 : 1;
	if (since == 0)
		since = oldest;
	if (since < oldest) {
		*lost = oldest - since;
		since = oldest;
	}
	/* a reader ahead of the ring (asked for the future) resumes at its end */
	if (since > newest + 1)
		since = newest + 1;

	for (seq = since; seq <= newest && n < max; seq++, n++)
		out[n] = gpu->ring[(seq - 1) & (NVS_RING_LEN - 1)];
	*next = seq;
	return n;
}
