/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces shared by the nvsidecar module's files. Each file
 * exports only what is declared here; everything else stays static.
 */
#ifndef _NVS_H
#define _NVS_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include "uapi/nvsidecar.h"

struct nvs_chip;		/* chips.h */
struct task_struct;
struct netlink_ext_ack;

#define NVS_RING_LEN		1024	/* samples kept per GPU, power of two */
#define NVS_MAX_WINDOWS		24	/* ioremapped register windows per GPU */
/*
 * With sample_hz 0, readers trigger passes, at most this many a second:
 * the default rate, so readers never cost more than the default budget.
 */
#define NVS_ONDEMAND_HZ		50

/*
 * The passes a second a rate allows: 0 is on demand, as many passes as
 * readers ask for, at most NVS_ONDEMAND_HZ. The privilege rule for raising
 * a rate (genl.c, sysfs.c) compares these, so 0 is not "lower" than 5.
 */
static inline unsigned int nvs_effective_hz(unsigned int hz)
{
	return hz ?: NVS_ONDEMAND_HZ;
}
#define NVS_MEM_HZ_DEFAULT	1	/* module parameter mem_hz */
#define NVS_REPROBE_S_DEFAULT	30	/* module parameter mem_reprobe_s */
/*
 * A GPU whose die registers read all-ones (fallen off the bus, in reset):
 * the interval between passes doubles from one sampling period up to this.
 */
#define NVS_DEAD_PROBE_MAX_MS	4000
/*
 * A runtime-suspended GPU (or one not in D0): nothing is read, but each
 * try still wakes the sampler, so tries back off the same way, up to this
 * (a GPU its owner wakes is read again within it).
 */
#define NVS_ASLEEP_PROBE_MAX_MS	1000
/*
 * A strap that gives no value is read again 1 s later, the interval
 * doubling up to 1 << NVS_STRAP_MAX_SHIFT seconds (review K10).
 */
#define NVS_STRAP_MAX_SHIFT	8
/* re-probes that find nothing double the interval, up to 32 x mem_reprobe_s */
#define NVS_REPROBE_MAX_SHIFT	5

/* Per-sensor state, protected by nvs_gpu.lock. Values in milli-degrees C. */
struct nvs_sensor {
	s32 mc;			/* last reading */
	s32 highest;		/* since last reset; valid if has_hist */
	s32 lowest;
	s32 max;		/* threshold; valid if has_max */
	bool valid;		/* last reading was real */
	bool present;		/* memory module exists: has an hwmon channel */
	bool dormant;		/* module absent or invalid: only re-probed */
	bool has_hist;
	bool has_max;
	bool alarm;		/* mc > max */
	u64 crossings;
};

/* One ring entry: every sensor of one sampling pass. */
struct nvs_sample {
	u64 seq;
	u64 ts_ns;		/* ktime_get_ns() */
	u32 valid;		/* bit i: mc[i] is a real reading */
	s32 mc[NVS_MAX_SENSORS];
};

struct nvs_window {
	u32 off;		/* offset in the BAR */
	u32 len;
	void __iomem *base;
};

struct nvs_gpu {
	struct list_head node;		/* nvs_gpus, under nvs_gpus_lock */
	struct kref ref;
	struct pci_dev *pdev;		/* pci_dev_get() while attached */
	const struct nvs_chip *chip;
	const char *name;		/* marketing name */
	unsigned int index;		/* gpuN */
	int bar;			/* BAR holding the registers */
	bool simulated;			/* named by sim= */
	/*
	 * A simulated GPU read whatever its driver does (sim= without
	 * "owned"): the tests' fixture device. Every other GPU, real or
	 * simulated with "owned", follows the ownership rules: it is read
	 * only while a driver other than vfio-pci (or pci-stub, or
	 * uio_pci_generic) is bound.
	 */
	bool free_sim;
	/* the recipe came from PMC_BOOT_0 (an unlisted device id, sim auto) */
	bool chip_from_boot0;
	bool name_alloc;		/* name is kasprintf()ed */
	bool boot0_noted;		/* logged why PMC_BOOT_0 was not used */

	struct mutex lock;		/* everything below */
	bool driver_bound;
	bool mapped;
	bool removed;
	enum nvs_status status;
	char reason[64];
	struct nvs_window win[NVS_MAX_WINDOWS];
	unsigned int nwin;
	unsigned int sample_hz;
	unsigned int mem_hz;		/* memory passes a second, 1..MAX */
	unsigned int nsensors;		/* == chip sensor count */
	unsigned int ndormant;		/* modules only re-probed */
	u8 part_allones;		/* partitions all-ones last memory pass */
	unsigned int kick;		/* bumped before each wake of the sampler */
	unsigned int reprobe_shift;	/* re-probe every mem_reprobe_s << this */
	bool clamshell;			/* back-side chips, from the strap */
	bool strap_known;		/* the strap read as a value this attach */
	u8 strap_tries;			/* reads of it that gave no value */
	u64 strap_retry_ns;		/* unknown: not read again before this */
	bool hwmon_stale;		/* a module appeared: re-register */
	u64 last_pass_ns;		/* ktime_get_ns() of the last pass tried */
	u64 last_mem_ns;		/* ... and of the last memory pass tried */
	u64 next_reprobe_ns;
	u64 dead_until_ns;		/* dead or asleep: no pass before this */
	unsigned int dead_streak;	/* passes in a row that read all-ones */
	struct nvs_sensor sensor[NVS_MAX_SENSORS];
	/* alarms changed in this pass: events sent once access has ended */
	DECLARE_BITMAP(alarm_changed, NVS_MAX_SENSORS);
	u64 samples;
	u64 unavailable;
	u64 backoff_skips;		/* passes not tried: backing off */
	u64 mmio_reads;			/* every readl() of a register */
	u64 crossings;
	u64 last_sample_ns;
	u64 seq;			/* seq of the newest ring entry, 0 = none */
	struct nvs_sample *ring;	/* NVS_RING_LEN entries */
	char dmabuf_last[256];		/* one-line summary of the last probe */

	struct task_struct *sampler;
	struct device *hwmon;
	struct device *classdev;
};

/* core.c: discovery, lifetime, register access */
extern struct list_head nvs_gpus;
extern struct mutex nvs_gpus_lock;	/* list membership and nvs_gen */
extern unsigned int nvs_gen;		/* bumped on add/remove, for dumps */
extern unsigned int nvs_default_hz;	/* module parameter sample_hz */
extern unsigned int nvs_default_mem_hz;	/* module parameter mem_hz */
extern unsigned int nvs_reprobe_s;	/* module parameter mem_reprobe_s */

struct nvs_gpu *nvs_gpu_get_by_index(unsigned int index);	/* ref'd or NULL */
struct nvs_gpu *nvs_gpu_get_by_pdev(struct pci_dev *pdev);	/* ref'd or NULL */
void nvs_gpu_put(struct nvs_gpu *gpu);
const char *nvs_gpu_busid(const struct nvs_gpu *gpu);		/* pci_name() */
int nvs_core_init(const char *sim);
/*
 * dmabuf.c, device_lock(&pdev->dev) held: may a buffer be mapped for pdev?
 * Only if a driver owns it that does not hand it to a guest or userspace
 * (vfio-pci and its variants, pci-stub, uio_pci_generic), or it is a
 * simulated GPU without ":owned" (the tests' stand-in, which has no driver)
 * while this module lists it: not yet, or no longer, is NOT_LISTED.
 */
enum nvs_importer {
	NVS_IMPORTER_OK,
	NVS_IMPORTER_REMOVED,
	NVS_IMPORTER_NO_DRIVER,
	NVS_IMPORTER_USERSPACE,
	NVS_IMPORTER_NOT_LISTED,
};
enum nvs_importer nvs_core_importer_check(struct pci_dev *pdev);
void nvs_core_uninit(void);
/* "ok", "no-driver", "asleep", "unavailable", "removed" */
const char *nvs_status_str(enum nvs_status st);
/* gpu->lock held; sends NVS_EVENT_STATUS_CHANGED when status or reason change */
void nvs_gpu_set_status(struct nvs_gpu *gpu, enum nvs_status st,
			const char *reason);
/* core.c <-> sampler.c: mapped register at BAR offset off, or NULL */
void __iomem *nvs_gpu_reg(struct nvs_gpu *gpu, u32 off);
/*
 * sampler thread, no lock held: re-registers the hwmon chip after a module
 * appeared (gpu->hwmon_stale), unless an attach state change is under way.
 */
void nvs_core_refresh_hwmon(struct nvs_gpu *gpu);

/*
 * chips.c: recipe accessors, no lock needed (recipes are constant).
 * Sensor i of a GPU is sensor i of its chip, 0 <= i < gpu->nsensors; the
 * same index is used in hwmon channels, ring samples and netlink.
 * gpu->sensor[i].present is false only for memory modules found absent
 * (0xBADFxxxx) when the registers were mapped and not found since; hwmon
 * and netlink leave those out.
 */
const char *nvs_chip_name(const struct nvs_gpu *gpu);		/* "gb202" */
const char *nvs_sensor_label(const struct nvs_gpu *gpu, unsigned int i);
int nvs_sensor_find(const struct nvs_gpu *gpu, const char *label); /* i or -ENOENT */

/*
 * access.c: the gate in front of every BAR read (sampler passes, the boot0
 * read at attach). Not open: nothing held, why[] says what was found.
 */
enum nvs_gate {
	NVS_GATE_OPEN,		/* read, then nvs_gate_close() */
	NVS_GATE_BUSY,		/* a reset or config access in progress */
	NVS_GATE_ASLEEP,	/* runtime-suspended (not woken), or not in D0 */
	NVS_GATE_DEAD,		/* offline, config space gone, decoding off */
	NVS_GATE_ERROR,		/* runtime PM error */
};
enum nvs_gate nvs_gate_open(struct pci_dev *pdev, bool *rpm, char *why,
			    size_t whylen);
void nvs_gate_close(struct pci_dev *pdev, bool rpm);

/* sampler.c: sampling, ring, thresholds. Callers hold gpu->lock unless noted. */
int nvs_sampler_start(struct nvs_gpu *gpu);	/* no lock held */
void nvs_sampler_stop(struct nvs_gpu *gpu);	/* no lock held */
void nvs_sampler_set_hz(struct nvs_gpu *gpu, unsigned int hz);
void nvs_sampler_set_mem_hz(struct nvs_gpu *gpu, unsigned int mem_hz);
/* a reader wants current values: a rate-limited pass when sample_hz is 0 */
void nvs_sample_on_demand(struct nvs_gpu *gpu);
void nvs_sample_probe_modules(struct nvs_gpu *gpu);	/* core.c, after mapping */
void nvs_reset_history(struct nvs_gpu *gpu, int sensor);	/* -1 = all */
int nvs_set_threshold(struct nvs_gpu *gpu, int sensor, bool clear, s32 mc);
/* copy samples with seq >= since; returns count, sets *lost and *next */
unsigned int nvs_ring_read(struct nvs_gpu *gpu, u64 since,
			   struct nvs_sample *out, unsigned int max,
			   u64 *lost, u64 *next);

/*
 * hwmon.c. Called by core.c without gpu->lock, serialised per GPU.
 * register sets gpu->hwmon or returns -errno leaving it NULL; unregister is
 * a no-op when gpu->hwmon is NULL and clears it. The chip is registered
 * while the GPU's registers are mapped (driver bound, or simulated) and
 * unregistered on driver unbind and before the PCI device is deleted, so
 * one GPU may be registered several times in its life.
 */
int nvs_hwmon_register(struct nvs_gpu *gpu);
void nvs_hwmon_unregister(struct nvs_gpu *gpu);

/*
 * sysfs.c: /sys/class/nvsidecar/gpuN. add/remove are called once per GPU,
 * without gpu->lock; add sets gpu->classdev (or returns -errno, NULL),
 * remove is a no-op when gpu->classdev is NULL.
 */
int nvs_sysfs_init(void);
void nvs_sysfs_uninit(void);
int nvs_sysfs_add(struct nvs_gpu *gpu);
void nvs_sysfs_remove(struct nvs_gpu *gpu);

/* genl.c: may be called with gpu->lock held; never sleeps on it */
int nvs_genl_init(void);
void nvs_genl_uninit(void);
void nvs_genl_event_gpu(struct nvs_gpu *gpu, enum nvs_event ev);
void nvs_genl_event_threshold(struct nvs_gpu *gpu, unsigned int sensor,
			      bool crossed);

/* dmabuf.c: result of one import, filled step by step */
struct nvs_dmabuf_report {
	u32 step;			/* enum nvs_dmabuf_step reached */
	s32 err;			/* 0 or positive errno at step */
	char exporter[32];
	char importer[NVS_BUSID_LEN];
	u64 size;
	u32 nents;
	u64 mapped;
	u64 seg_min;
	u64 seg_max;
	u32 verdict;			/* enum nvs_dmabuf_verdict */
	u64 bar1_start;
	u64 bar1_len;
	u32 p2p;			/* enum nvs_p2p_state */
	s32 p2p_distance;
	u32 addr;			/* enum nvs_dmabuf_addr */
	u32 moved;			/* move_notify calls while attached */
};

/*
 * Imports the dma-buf behind fd (of the calling process) on the PCI device
 * named by importer ("0000:01:00.0"; NULL: the GPU's own device) and compares
 * the mapping with gpu's BAR1 (gpu may be NULL). Returns -errno, with an
 * extack message, when nothing could be probed (-EBADF, -EINVAL not a
 * dma-buf, -ENODEV no such importer); otherwise 0 with rep filled, rep->err
 * saying whether a later step failed. Records gpu->dmabuf_last.
 */
int nvs_dmabuf_probe(int fd, const char *importer, struct nvs_gpu *gpu,
		     struct nvs_dmabuf_report *rep, struct netlink_ext_ack *extack);

#ifdef NVS_SELFTEST
/* kmod/selftest/, built with `make module NVS_SELFTEST=1`, run at load */
bool nvs_selftest_decode(void);		/* chips.c */
bool nvs_selftest_ring(void);		/* sampler.c */
bool nvs_selftest_threshold(void);	/* sampler.c */
bool nvs_selftest_busid(void);		/* dmabuf.c */
bool nvs_selftest_walk(void);		/* dmabuf.c */
#endif

#endif /* _NVS_H */
