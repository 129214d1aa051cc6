// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: one kthread per GPU reading the recipe's registers on
 * absolute deadlines, so the rate does not drift with the time a pass takes
 * and the kernel's hrtimers, not jiffies, set the pace (1-1000 Hz).
 *
 * The read budget. Every register read is a PCIe round trip (1-2 us), so
 * what is read, and how often, is chosen:
 *   - die sensors on every pass, at sample_hz: they carry the 50 ms spikes;
 *   - memory sensors on every DIV_ROUND_UP(sample_hz, mem_hz)-th pass, i.e.
 *     at most mem_hz (default 1) times a second: GDDR temperatures move in
 *     2 degC steps behind a large thermal mass, and a partition costs at
 *     most five reads (its status word, then the sampled slots of its
 *     two chips; back sides share the words). Between memory passes a
 *     sample carries the last memory readings;
 *   - DRAM chips found absent (0xBADFxxxx) or invalid when the GPU was
 *     attached, and those of a partition whose status word two memory
 *     passes in a row read as all-ones while the die answers
 *     (nvs_parts_judge()), are "dormant":
 *     not read by passes at all, only re-probed
 *     after mem_reprobe_s seconds (default 30), the interval doubling
 *     after every re-probe that finds nothing, up to 32 x mem_reprobe_s,
 *     and woken up when a probe finds them valid;
 *   - the hottest-module summary reads its own (broadcast) register only
 *     when no module gave a reading.
 * At the defaults a GB202 with all 16 chips (8 partitions) costs
 * 50 * 6 + 1 * 40 = 340 reads a second, an AD102 with 12 chips
 * 50 * 1 + 1 * (1 + 30) = 81 (docs/benchmarks.md). With sample_hz 0 there is no thread
 * work at all: readers (hwmon, the status file, netlink) ask for a pass,
 * which runs only when the last one is older than 1/NVS_ONDEMAND_HZ (die)
 * or 1/mem_hz (memory), so no reader, privileged or not, can make the
 * module read more than it would at the default rate.
 *
 * A pass touches the BAR only when the device is in D0, not offline, has
 * memory decoding on and is runtime-active, with no reset under way
 * (access.c); a suspended GPU is never woken.
 * What "unavailable" means:
 *   - status "asleep": runtime-suspended or not in D0; nothing was read.
 *   - status "unavailable": channel offline, decoding off, config space
 *     unreadable or all-ones, a die register read all-ones (fallen off
 *     the bus or resetting: in all of these passes then back off, see
 *     nvs_dead_backoff()), or no sensor decoded to a plausible value.
 *   - a single sensor is invalid (hwmon -ENODATA) when its value is
 *     all-ones, 0xBADFxxxx, fails its validity register or is implausible.
 * Passes of the first two kinds count in gpu->unavailable and add nothing
 * to the ring; every other pass is one ring entry (gpu->samples == seq).
 * A pass skipped by the backoff counts in gpu->backoff_skips instead.
 */
#include <linux/freezer.h>
#include <linux/hrtimer.h>
#include <linux/io.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "nvs.h"
#include "chips.h"

static bool nvs_may_sample(const struct nvs_gpu *gpu)
{
	return gpu->mapped && !gpu->removed &&
	       (gpu->free_sim || gpu->driver_bound);
}

/*
 * Keeps what makes a BAR read safe true until nvs_access_end()
 * (access.c, nvs_gate_open()). Returns true with *rpm telling whether a
 * runtime PM reference is to be put afterwards; false with the status
 * updated, and *dead set where the caller backs off as from an all-ones
 * BAR. Status changes and threshold events wait until the gate is closed:
 * they may allocate, and resets and lspci sleep on it meanwhile.
 */
static bool nvs_access_begin(struct nvs_gpu *gpu, bool *rpm, bool *dead)
{
	enum nvs_status st = NVS_STATUS_UNAVAILABLE;
	char why[48];

	*dead = false;
	switch (nvs_gate_open(gpu->pdev, rpm, why, sizeof(why))) {
	case NVS_GATE_OPEN:
		return true;
	case NVS_GATE_ASLEEP:
		st = NVS_STATUS_ASLEEP;
		break;
	case NVS_GATE_DEAD:
		*dead = true;
		break;
	case NVS_GATE_BUSY:
	case NVS_GATE_ERROR:
		break;
	}
	nvs_gpu_set_status(gpu, st, why);
	return false;
}

/* Ends the access, then sends the threshold events the pass queued. */
static void nvs_access_end(struct nvs_gpu *gpu, bool rpm)
{
	unsigned int i;

	nvs_gate_close(gpu->pdev, rpm);

	for_each_set_bit(i, gpu->alarm_changed, NVS_MAX_SENSORS)
		nvs_genl_event_threshold(gpu, i, gpu->sensor[i].alarm);
	bitmap_zero(gpu->alarm_changed, NVS_MAX_SENSORS);
}

static u32 nvs_read(struct nvs_gpu *gpu, u32 off)
{
	void __iomem *reg = nvs_gpu_reg(gpu, off);

	if (!reg)
		return ~0U;
	gpu->mmio_reads++;
	return readl(reg);
}

static bool nvs_raw_dead(u32 raw)
{
	return raw == ~0U || nvs_raw_poison(raw);
}

/*
 * What one memory pass has read of each partition: the status word first,
 * then only the data words of the shown chips' slots whose status bit is
 * set, each at most once however many chips (and back sides) share it.
 */
struct nvs_part_rd {
	u32 status;
	u32 w[4];
	u8 have;		/* bit k: w[k] was read */
	bool have_status;
};

struct nvs_mem_rd {
	struct nvs_part_rd part[NVS_MAX_PARTS];
	bool die_asked;		/* nvs_die_gone() said no in this pass */
};

/* A back-side row on a board without a back side: never read, no channel. */
static bool nvs_module_void(const struct nvs_gpu *gpu,
			    const struct nvs_chip_sensor *cs)
{
	return cs->back && !gpu->clamshell;
}

/* One DRAM chip (kmod/chips.c, "Per-chip memory temperatures"). */
static enum nvs_module_state nvs_read_module(struct nvs_gpu *gpu,
					     struct nvs_mem_rd *rd,
					     const struct nvs_chip_sensor *cs,
					     s32 *mc)
{
	struct nvs_part_rd *pr;
	unsigned long slots;
	unsigned int k;

	if (cs->part >= NVS_MAX_PARTS || cs->part >= gpu->chip->nparts)
		return NVS_MODULE_ABSENT;	/* never past the last partition */
	pr = &rd->part[cs->part];
	if (!pr->have_status) {
		pr->status = nvs_read(gpu, nvs_mem_status(cs->part));
		pr->have_status = true;
	}
	/*
	 * Only the status word: a data word of ~0 is a slot with no reading
	 * on a card that answers (LACT skips it), but a status word of ~0
	 * samples every slot and cannot be a live one. The callers decide
	 * what it means (a pass: the GPU stopped answering).
	 */
	if (pr->status == ~0U)
		return NVS_MODULE_DEAD;
	if (!nvs_raw_dead(pr->status)) {
		slots = NVS_CHIP_SLOTS(cs->chip & 1) & (pr->status >> 24);
		for_each_set_bit(k, &slots, 4) {
			if (pr->have & BIT(k))
				continue;
			pr->w[k] = nvs_read(gpu, nvs_mem_word(cs->part, k));
			pr->have |= BIT(k);
		}
	}
	return nvs_decode_module(pr->status, pr->w, pr->have, cs->chip,
				 cs->back, mc);
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
	/* inside the pass: nvs_access_end() sends the event */
	__set_bit(i, gpu->alarm_changed);
}

/* Appends the current readings to the ring as sample gpu->seq + 1. */
static void nvs_ring_push(struct nvs_gpu *gpu, u64 now)
{
	struct nvs_sample *e = &gpu->ring[gpu->seq & (NVS_RING_LEN - 1)];
	unsigned int i;

	gpu->samples++;
	gpu->last_sample_ns = now;
	gpu->seq++;
	e->seq = gpu->seq;
	e->ts_ns = now;
	e->valid = 0;
	for (i = 0; i < NVS_MAX_SENSORS; i++) {
		bool v = i < gpu->nsensors && gpu->sensor[i].valid;

		e->valid |= v ? BIT(i) : 0;
		e->mc[i] = v ? gpu->sensor[i].mc : 0;
	}
}

static void nvs_invalidate(struct nvs_gpu *gpu)
{
	unsigned int i;

	for (i = 0; i < gpu->nsensors; i++)
		gpu->sensor[i].valid = false;
}

/*
 * Dormant modules, once every mem_reprobe_s: a module that answers is
 * shown (its hwmon channel appears: the sampler thread re-registers the
 * chip) and one that reads valid is read by every memory pass from now on.
 * Called inside a pass, with the device checked.
 */
static void nvs_reprobe(struct nvs_gpu *gpu, u64 now)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	enum nvs_module_state ms;
	struct nvs_mem_rd rd = {};
	bool found = false;
	unsigned int i;
	s32 mc;

	for (i = 0; i < gpu->nsensors; i++) {
		struct nvs_sensor *st = &gpu->sensor[i];

		if (cs[i].kind != NVS_KIND_MODULE || !st->dormant ||
		    nvs_module_void(gpu, &cs[i]))
			continue;
		ms = nvs_read_module(gpu, &rd, &cs[i], &mc);
		if (ms == NVS_MODULE_DEAD)	/* as at attach: not there */
			ms = NVS_MODULE_ABSENT;
		if (ms == NVS_MODULE_OK) {
			st->dormant = false;
			gpu->ndormant--;
			nvs_update(gpu, i, true, mc);
			found = true;
		}
		if (ms != NVS_MODULE_ABSENT && !st->present) {
			found = true;
			st->present = true;
			WRITE_ONCE(gpu->hwmon_stale, true);
			if (gpu->sampler)
				wake_up_process(gpu->sampler);
		}
	}
	/*
	 * A board's chips do not come and go: one that did not answer is
	 * probed less and less often, up to 32 x mem_reprobe_s (16 min at
	 * the default), rather than every mem_reprobe_s forever.
	 */
	if (found)
		gpu->reprobe_shift = 0;
	else if (gpu->reprobe_shift < NVS_REPROBE_MAX_SHIFT)
		gpu->reprobe_shift++;
	gpu->next_reprobe_ns = now + ((u64)READ_ONCE(nvs_reprobe_s) <<
				      gpu->reprobe_shift) * NSEC_PER_SEC;
}

/*
 * The die read all-ones: the GPU fell off the bus (Xid 79; it stays bound
 * while nvidia-persistenced holds it, open-gpu-kernel-modules nv.c) or is
 * in a reset its driver started without the locks nvs_access_begin() can
 * see (nvidia.ko's FLR on the last close, os_pci_trigger_flr()). Every
 * read of a lost GPU may stall for a PCIe completion timeout, so passes
 * back off: the next one after one sampling period, then twice that, up
 * to @max_ms (NVS_DEAD_PROBE_MAX_MS), one register read each. The same
 * holds when config space is gone too (a dead link: each try is then one
 * config read and no BAR read), the channel is offline or decoding is off
 * (see nvs_access_begin()). An asleep GPU backs off the same way up to
 * NVS_ASLEEP_PROBE_MAX_MS: nothing is read then, but each try would wake
 * the sampler sample_hz times a second for nothing. The sampler thread
 * sleeps through the passes a backoff leaves out (nvs_sampler_fn()). The
 * first pass that reads something ends the backoff.
 */
static void nvs_backoff(struct nvs_gpu *gpu, u64 now, unsigned int max_ms)
{
	unsigned int hz = READ_ONCE(gpu->sample_hz) ?: NVS_ONDEMAND_HZ;
	u64 delay = NSEC_PER_SEC / hz;

	delay <<= min(gpu->dead_streak, 16U);
	delay = min_t(u64, delay, (u64)max_ms * NSEC_PER_MSEC);
	gpu->dead_streak++;
	gpu->dead_until_ns = now + delay;
}

static void nvs_dead_backoff(struct nvs_gpu *gpu, u64 now)
{
	nvs_backoff(gpu, now, NVS_DEAD_PROBE_MAX_MS);
}

/*
 * A partition's status word read all-ones in a pass. At attach and re-probe
 * that is a partition the board does not populate (kmod/chips.c): a card
 * may have fewer than its chip's recipe names, an RTX 3080 5 of GA102's 6.
 * The attach sort hides those, but it is skipped when the GPU could not be
 * read then, and a pass that took such a partition for a dead GPU would
 * throw every reading away and back off, on every memory pass, for as long
 * as the GPU stays bound (review K3). So the die decides, as everywhere
 * else: the GPU is gone only if its first die register, which answered at
 * the start of this pass, now reads all-ones too (an FLR or a link drop
 * between the die and the memory reads, review finding 6). One read a
 * pass, only when a status word was all-ones.
 */
static bool nvs_die_gone(struct nvs_gpu *gpu)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	unsigned int i;

	for (i = 0; i < gpu->nsensors; i++)
		if (cs[i].kind == NVS_KIND_DIE)
			return nvs_read(gpu, cs[i].off) == ~0U;
	return false;	/* no die to ask: only a re-probe can tell */
}

/*
 * The die still answers, and partition part read all-ones in two memory
 * passes in a row (nvs_parts_judge()): it is not on the board. Its chips
 * become what the attach sort makes of an absent partition, hidden and
 * dormant, so no pass reads it again; only the re-probe does, at its own
 * (doubling) interval, and shows them should they ever answer.
 */
static void nvs_part_absent(struct nvs_gpu *gpu, unsigned int part, u64 now)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	bool hide = false;
	unsigned int i;

	/*
	 * A partition that just stopped answering is re-probed after
	 * mem_reprobe_s, not at a schedule other absent chips have
	 * doubled up to 32 times that: one bad reading must not hide a
	 * live partition for many minutes (review M3). The interval
	 * starts over; a probe that finds nothing doubles it again.
	 */
	gpu->reprobe_shift = 0;
	gpu->next_reprobe_ns = min(gpu->ndormant ? gpu->next_reprobe_ns : U64_MAX,
				   now + (u64)READ_ONCE(nvs_reprobe_s) * NSEC_PER_SEC);
	for (i = 0; i < gpu->nsensors; i++) {
		struct nvs_sensor *st = &gpu->sensor[i];

		if (cs[i].kind != NVS_KIND_MODULE || cs[i].part != part ||
		    st->dormant || nvs_module_void(gpu, &cs[i]))
			continue;
		st->dormant = true;
		gpu->ndormant++;
		st->valid = false;
		hide |= st->present;
		st->present = false;
	}
	if (hide) {
		/* its hwmon channels go: the sampler thread re-registers */
		WRITE_ONCE(gpu->hwmon_stale, true);
		if (gpu->sampler)
			wake_up_process(gpu->sampler);
	}
}

/*
 * After a memory pass: which partitions read all-ones while the die
 * answered. One such pass is not enough to hide a partition (review M3):
 * a glitch, or an FLR whose blanking reached the partitions before the
 * die, would hide live chips until a re-probe. Its chips read invalid in
 * that pass (-ENODATA); a second memory pass in a row that reads all-ones
 * hides them, one that reads anything else forgets the first. A pass
 * that ends as dead, or does not get to read, breaks the row too.
 * Returns true when the die no longer answers: the pass ends as dead.
 */
static bool nvs_parts_judge(struct nvs_gpu *gpu, const struct nvs_mem_rd *mrd,
			    u64 now)
{
	unsigned int p;

	BUILD_BUG_ON(NVS_MAX_PARTS > BITS_PER_TYPE(gpu->part_allones));
	for (p = 0; p < NVS_MAX_PARTS; p++) {
		if (!mrd->part[p].have_status)
			continue;
		if (mrd->part[p].status != ~0U) {
			gpu->part_allones &= ~BIT(p);
		} else if (!(gpu->part_allones & BIT(p))) {
			gpu->part_allones |= BIT(p);
		} else {
			/*
			 * The die was asked once this pass, before this
			 * partition's read: asked again before hiding, so a
			 * reset that began in between does not hide live
			 * chips. One read, only when hiding.
			 */
			if (nvs_die_gone(gpu))
				return true;
			gpu->part_allones &= ~BIT(p);
			nvs_part_absent(gpu, p, now);
		}
	}
	return false;
}

/*
 * The clamshell strap (kmod/chips.c), read inside a pass or the attach
 * probe after a die register answered. A read of ~0 or 0xBADFxxxx is no
 * value (the GPU in a reset, not yet initialised by its driver, or gone):
 * the strap stays unknown, the back rows hidden, and a later memory pass
 * reads it again, rather than deciding the board's layout for the whole
 * binding from one bad moment (review finding 5). Not every memory pass,
 * though: on a board where the register never gives a value that would
 * be one wasted read a memory pass for as long as it is bound (review
 * K10). The next read is 1 s later, then 2, 4... up to 256 s. Returns
 * true when it was read now and says there is a back side.
 */
static bool nvs_read_strap(struct nvs_gpu *gpu)
{
	u32 strap = nvs_read(gpu, gpu->chip->strap_off);

	if (nvs_raw_dead(strap)) {
		gpu->strap_retry_ns = ktime_get_ns() +
			((u64)NSEC_PER_SEC << min_t(unsigned int, gpu->strap_tries,
					       NVS_STRAP_MAX_SHIFT));
		if (gpu->strap_tries < U8_MAX)
			gpu->strap_tries++;
		return false;
	}
	gpu->strap_known = true;
	gpu->clamshell = nvs_strap_clamshell(strap);
	return gpu->clamshell;
}

/*
 * The strap, read late, says there is a back side: its chips are
 * classified by a re-probe at the end of this pass, which shows each one
 * that answers (its hwmon channel appears, as for any re-probed chip).
 */
static void nvs_back_found(struct nvs_gpu *gpu, u64 now)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	unsigned int i;

	for (i = 0; i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_MODULE || !cs[i].back ||
		    gpu->sensor[i].dormant)
			continue;
		gpu->sensor[i].dormant = true;
		gpu->ndormant++;
	}
	gpu->reprobe_shift = 0;
	gpu->next_reprobe_ns = now;
}

/*
 * One pass over the recipe; mem: also read the memory sensors. The caller
 * holds gpu->lock, so nothing unmaps the windows meanwhile.
 */
static void nvs_pass(struct nvs_gpu *gpu, bool mem)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	bool dead = false, rpm, ok;
	enum nvs_module_state ms;
	struct nvs_mem_rd mrd = {};
	unsigned int i, nvalid = 0;
	int hottest = -1;
	u32 raw;
	DECLARE_BITMAP(rd, NVS_MAX_SENSORS);
	s32 mc = 0;	/* passed, unread, with valid false when a decode fails */
	u64 now;

	lockdep_assert_held(&gpu->lock);
	now = ktime_get_ns();
	gpu->last_pass_ns = now;
	if (mem)
		gpu->last_mem_ns = now;
	if (!nvs_may_sample(gpu))
		return;
	/*
	 * Backing off from a GPU that read all-ones: nothing read, status
	 * kept. Counted apart from unavailable (one per try), so userspace
	 * can tell "backing off" (this moves) from "stuck" (review K9).
	 */
	if (gpu->dead_until_ns && now < gpu->dead_until_ns) {
		gpu->backoff_skips++;
		return;
	}
	if (!nvs_access_begin(gpu, &rpm, &dead)) {
		/*
		 * The last readings are no longer current: report them as
		 * unavailable (-ENODATA) rather than as a stale number.
		 */
		gpu->part_allones = 0;
		gpu->unavailable++;
		nvs_invalidate(gpu);
		if (dead)
			nvs_dead_backoff(gpu, now);
		else if (gpu->status == NVS_STATUS_ASLEEP)
			nvs_backoff(gpu, now, NVS_ASLEEP_PROBE_MAX_MS);
		return;
	}

	/*
	 * Die first: the first all-ones die register ends the pass, as no
	 * die word of a GPU that answers is all-ones (bit 30 and a 16-bit
	 * value at most 150 °C, or an 8-bit hotspot).
	 */
	bitmap_zero(rd, NVS_MAX_SENSORS);
	for (i = 0; i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_DIE)
			continue;
		raw = nvs_read(gpu, cs[i].off);
		if (raw == ~0U)
			goto err_dead;
		ok = nvs_decode(cs[i].decode, raw, 0, &mc);
		nvs_update(gpu, i, ok, mc);
		__set_bit(i, rd);
	}

	if (mem && gpu->chip->strap_off && !gpu->strap_known &&
	    now >= gpu->strap_retry_ns && nvs_read_strap(gpu))
		nvs_back_found(gpu, now);
	for (i = 0; mem && i < gpu->nsensors; i++) {
		switch (cs[i].kind) {
		case NVS_KIND_MEM:
			raw = nvs_read(gpu, cs[i].off);
			ok = nvs_decode(cs[i].decode, raw, 0, &mc);
			break;
		case NVS_KIND_MODULE:
			if (gpu->sensor[i].dormant ||
			    nvs_module_void(gpu, &cs[i]))
				continue;
			/*
			 * A status word of all-ones: either the GPU stopped
			 * answering between the die and the memory reads
			 * (an FLR starting, the link dropping; end the pass
			 * as a dead die read does, before more reads that
			 * may each stall, review finding 6), or the
			 * partition is not on the board (review K3). The
			 * die tells which.
			 */
			ms = nvs_read_module(gpu, &mrd, &cs[i], &mc);
			if (ms == NVS_MODULE_DEAD && !mrd.die_asked) {
				if (nvs_die_gone(gpu))
					goto err_dead;
				mrd.die_asked = true;	/* once a pass */
			}
			/* DEAD: no reading now; nvs_parts_judge() decides */
			ok = ms == NVS_MODULE_OK;
			if (ok && (hottest < 0 || mc > gpu->sensor[hottest].mc))
				hottest = i;
			break;
		default:
			continue;
		}
		nvs_update(gpu, i, ok, mc);
		__set_bit(i, rd);
	}
	/* "mem": the hottest module; its own register only when none reads */
	for (i = 0; mem && i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_MODULE_MAX)
			continue;
		if (hottest >= 0) {
			nvs_update(gpu, i, true, gpu->sensor[hottest].mc);
		} else if (!cs[i].off) {
			nvs_update(gpu, i, false, 0);	/* no summary register */
		} else {
			raw = nvs_read(gpu, cs[i].off);
			ok = nvs_decode(cs[i].decode, raw, 0, &mc);
			nvs_update(gpu, i, ok, mc);
		}
		__set_bit(i, rd);
	}
	if (mem && nvs_parts_judge(gpu, &mrd, now))
		goto err_dead;
	/* nothing read all-ones: a backoff, if any, is over */
	gpu->dead_streak = 0;
	gpu->dead_until_ns = 0;
	if (gpu->ndormant && now >= gpu->next_reprobe_ns)
		nvs_reprobe(gpu, now);
	nvs_access_end(gpu, rpm);

	for (i = 0; i < gpu->nsensors; i++)
		if (gpu->sensor[i].valid && test_bit(i, rd))
			nvalid++;
	if (!nvalid) {
		gpu->unavailable++;
		nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
				   "no valid sensor reading");
		return;
	}

	nvs_ring_push(gpu, now);
	nvs_gpu_set_status(gpu, NVS_STATUS_OK, "");
	return;

err_dead:
	nvs_access_end(gpu, rpm);
	gpu->part_allones = 0;
	gpu->unavailable++;
	nvs_invalidate(gpu);
	nvs_dead_backoff(gpu, now);
	nvs_gpu_set_status(gpu, NVS_STATUS_UNAVAILABLE,
			   "all-ones (fallen off the bus or in reset)");
}

/*
 * A reader wants current values (sample_hz 0). Rate-limited: the die
 * sensors are read again only when the last pass is older than
 * 1/NVS_ONDEMAND_HZ, the memory sensors when older than 1/mem_hz, so any
 * number of readers costs at most what the default rate does.
 */
void nvs_sample_on_demand(struct nvs_gpu *gpu)
{
	u64 now = ktime_get_ns();
	bool mem;

	lockdep_assert_held(&gpu->lock);
	if (gpu->sample_hz || gpu->removed || !gpu->mapped)
		return;
	if (gpu->last_pass_ns &&
	    now - gpu->last_pass_ns < NSEC_PER_SEC / NVS_ONDEMAND_HZ)
		return;
	mem = !gpu->last_mem_ns ||
	      now - gpu->last_mem_ns >= NSEC_PER_SEC / gpu->mem_hz;
	nvs_pass(gpu, mem);
}

/*
 * Called by core.c right after mapping: sorts the memory modules into
 * absent (0xBADFxxxx, all-ones: not shown, dormant), invalid (shown,
 * dormant) and valid (read by every memory pass). If the device cannot be
 * read now (no access, or its first die register reads all-ones: in a
 * reset, not answering), every front module is shown and read normally,
 * so that nothing real is dropped because of a bad moment, and the strap
 * is read by the first memory pass that can (review finding 5).
 */
void nvs_sample_probe_modules(struct nvs_gpu *gpu)
{
	const struct nvs_chip_sensor *cs = gpu->chip->sensors;
	const struct nvs_chip *chip = gpu->chip;
	enum nvs_module_state ms;
	struct nvs_mem_rd rd = {};
	unsigned int i;
	bool rpm, dead;
	s32 mc;

	lockdep_assert_held(&gpu->lock);
	gpu->ndormant = 0;
	gpu->part_allones = 0;
	gpu->reprobe_shift = 0;
	gpu->dead_streak = 0;		/* a new attach starts without backoff */
	gpu->dead_until_ns = 0;
	gpu->strap_known = false;
	gpu->strap_tries = 0;
	gpu->strap_retry_ns = 0;
	gpu->clamshell = false;
	/* the first pass reads the memory, and the valid modules with it */
	gpu->last_mem_ns = 0;
	for (i = 0; i < gpu->nsensors; i++) {
		gpu->sensor[i].dormant = false;
		/* back sides stay hidden until the strap says they exist */
		if (cs[i].kind == NVS_KIND_MODULE)
			gpu->sensor[i].present = !cs[i].back;
	}
	if (!nvs_may_sample(gpu) || !nvs_access_begin(gpu, &rpm, &dead))
		return;
	for (i = 0; i < gpu->nsensors; i++) {
		if (cs[i].kind != NVS_KIND_DIE)
			continue;
		if (nvs_read(gpu, cs[i].off) == ~0U)
			goto out_end;
		break;
	}
	/* once per attach: the board's layout does not change while bound */
	if (chip->strap_off)
		nvs_read_strap(gpu);
	for (i = 0; i < gpu->nsensors; i++) {
		struct nvs_sensor *st = &gpu->sensor[i];

		if (cs[i].kind != NVS_KIND_MODULE || nvs_module_void(gpu, &cs[i]))
			continue;
		ms = nvs_read_module(gpu, &rd, &cs[i], &mc);
		/* the die answered: a status word of ~0 is a missing partition */
		if (ms == NVS_MODULE_DEAD)
			ms = NVS_MODULE_ABSENT;
		st->dormant = ms != NVS_MODULE_OK;
		st->present = ms != NVS_MODULE_ABSENT;
		gpu->ndormant += st->dormant;
	}
	gpu->next_reprobe_ns = ktime_get_ns() +
			       (u64)READ_ONCE(nvs_reprobe_s) * NSEC_PER_SEC;
out_end:
	nvs_access_end(gpu, rpm);
}

static bool nvs_sampler_idle(struct nvs_gpu *gpu)
{
	return !READ_ONCE(gpu->sample_hz) || !READ_ONCE(gpu->mapped);
}

/*
 * Asked after set_current_state(), before the sleep to the next slot: a
 * writer changes these (the rates, or gpu->kick: nvs_sampler_set_hz() and
 * _set_mem_hz(), an attach among them, bump it) and then wakes the
 * thread, and a wakeup that came while the thread was still running
 * (between its pass and here) is lost. Without this test it would sleep
 * to a slot that a backoff may have put seconds away (review m6). Each of
 * these restarts the schedule from now or idles the thread, so none can
 * make it run passes back to back. Not hwmon_stale: a pass of this thread
 * sets it, and the next slot handles it.
 */
static bool nvs_sampler_changed(struct nvs_gpu *gpu, unsigned int hz,
				unsigned int mem_hz, unsigned int kick)
{
	return READ_ONCE(gpu->kick) != kick ||
	       READ_ONCE(gpu->sample_hz) != hz ||
	       max(READ_ONCE(gpu->mem_hz), 1U) != mem_hz ||
	       !READ_ONCE(gpu->mapped);
}

static int nvs_sampler_fn(void *data)
{
	struct nvs_gpu *gpu = data;
	unsigned int hz, mem_hz, last_hz = 0, last_mem_hz = 0, pass = 0;
	unsigned int kick, last_kick = 0;
	ktime_t next = 0, now;
	u64 period, slack, skip;

	set_freezable();
	while (!kthread_should_stop()) {
		try_to_freeze();
		if (READ_ONCE(gpu->hwmon_stale))
			nvs_core_refresh_hwmon(gpu);
		/*
		 * One read of each rate per pass: a writer may set 0 at any
		 * moment, and the value tested must be the value divided by.
		 */
		kick = READ_ONCE(gpu->kick);
		hz = READ_ONCE(gpu->sample_hz);
		mem_hz = max(READ_ONCE(gpu->mem_hz), 1U);
		if (!hz || !READ_ONCE(gpu->mapped)) {
			/*
			 * On demand, or nothing mapped: sleep until woken; a
			 * refresh that found the attach lock taken retries.
			 */
			set_current_state(TASK_INTERRUPTIBLE);
			if (!kthread_should_stop() && nvs_sampler_idle(gpu)) {
				if (READ_ONCE(gpu->hwmon_stale))
					schedule_timeout(HZ / 10);
				else
					schedule();
			}
			__set_current_state(TASK_RUNNING);
			last_hz = 0;
			continue;
		}

		/* new rates, or a kick: the schedule starts again from now */
		if (hz != last_hz || mem_hz != last_mem_hz || kick != last_kick) {
			last_kick = kick;
			last_hz = hz;
			last_mem_hz = mem_hz;
			pass = 0;
			next = ktime_get();
		}

		period = NSEC_PER_SEC / hz;
		slack = min_t(u64, period / 20, 100 * NSEC_PER_USEC);
		next = ktime_add_ns(next, period);

		mutex_lock(&gpu->lock);
		nvs_pass(gpu, pass % DIV_ROUND_UP(hz, mem_hz) == 0);
		pass++;
		/*
		 * Backing off from a dead or asleep GPU: sleep through the
		 * slots before the next try instead of waking for each only
		 * to skip it. They count as skipped passes now; the phase and
		 * the memory-pass cadence are kept.
		 */
		if (gpu->dead_until_ns > (u64)ktime_to_ns(next)) {
			skip = div64_u64(gpu->dead_until_ns - ktime_to_ns(next) +
					 period - 1, period);
			next = ktime_add_ns(next, skip * period);
			pass += (unsigned int)skip;
			gpu->backoff_skips += skip;
		}
		mutex_unlock(&gpu->lock);
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
		if (!kthread_should_stop() &&
		    !nvs_sampler_changed(gpu, hz, mem_hz, kick))
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
	WRITE_ONCE(gpu->kick, gpu->kick + 1);
	if (gpu->sampler)
		wake_up_process(gpu->sampler);
}

void nvs_sampler_set_mem_hz(struct nvs_gpu *gpu, unsigned int mem_hz)
{
	lockdep_assert_held(&gpu->lock);
	WRITE_ONCE(gpu->mem_hz, clamp_t(unsigned int, mem_hz, 1, NVS_MEM_HZ_MAX));
	WRITE_ONCE(gpu->kick, gpu->kick + 1);
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

#ifdef NVS_SELFTEST
#include "selftest/sampler.c"
#endif
