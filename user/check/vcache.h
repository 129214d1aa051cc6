/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_VCACHE_H
#define CHECK_VCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/doctor.h"

/*
 * The verdict cache: what `doctor --full' verified (the P2P copies, the
 * RDMA loopback, the libcuda and GDR results), stored with the key of
 * everything that can change those results and the time. A later doctor
 * (and through `doctor --quick', Slurm's health check) uses a result only
 * while the key read now equals the stored one: a cache keyed on device ids
 * alone survives a driver or BIOS upgrade that breaks P2P (vLLM's, see
 * club-3090 docs/PCIE_P2P.md section 7), which is what this avoids.
 *
 * One text file, NVS_VCACHE_FILE in the state directory, written
 * atomically; it is read as untrusted input (any line it does not expect
 * makes the whole file unusable, never a crash).
 */
#define NVS_VCACHE_FILE "verdict"
#define NVS_VCACHE_MAX 64
/* NVSIDECAR_VERDICT_MAX_AGE's default: two runs of the hourly timer */
#define NVS_VCACHE_MAX_AGE_DEF 7200

/* The key's fields, in file order. */
enum nvs_vkey_field {
	VK_DRIVER,	/* NVIDIA kernel driver version, "none" */
	VK_FLAVOUR,	/* open, proprietary, none */
	VK_KERNEL,	/* uname -r */
	VK_BIOS_VERSION,
	VK_BIOS_DATE,
	VK_BAR1,	/* BDF=bytes,... of every NVIDIA display controller */
	VK_ACS,		/* count and hash of the bridges' ACS control words, pcie_acs_override */
	VK_IOMMU,	/* IOMMU groups present, iommu parameters of the kernel command line */
	VK_NCCL,	/* "unknown" until the version readers fill it (vkey_stack_versions) */
	VK_UCX,
	VK_N
};

struct nvs_vkey {
	char v[VK_N][256];
};

struct nvs_vresult {
	enum nvs_check_result res;
	int64_t verified;	/* CLOCK_REALTIME seconds: when this result was found */
	int gpu;		/* the one GPU the check ran on (full-rdma); -1: not one, or not said */
	/*
	 * A SKIP because a GPU was busy verified nothing: the last real
	 * verification it carries (has_last), last_res at last; last_res
	 * CK_SKIP: none since last (every run from then on was skipped).
	 */
	bool has_last;
	enum nvs_check_result last_res;
	int64_t last;
	char layer[16];
	char name[96];
	char msg[512];
	char fix[512];
};

struct nvs_vcache {
	int64_t written;	/* when doctor --full stored it */
	struct nvs_vkey key;
	struct nvs_vresult r[NVS_VCACHE_MAX];
	size_t n;
};

/* The file's name for a field ("driver", "bios-version" ...). */
const char *nvs_vkey_name(enum nvs_vkey_field f);
/*
 * The key of this node now. root prefixes the /sys and /proc paths (tests;
 * NULL: "/"); the driver is read as sys/nvdriver.c reads it. Reads files
 * only: sysfs attributes and the config space of PCI bridges (never a
 * GPU's), so `doctor --quick' may call it.
 */
void nvs_vkey_read(struct nvs_vkey *k, const char *root);
/* The first field that differs, or VK_N when a and b are the same key. */
enum nvs_vkey_field nvs_vkey_diff(const struct nvs_vkey *a, const struct nvs_vkey *b);

/*
 * Reads dir/NVS_VCACHE_FILE. 0; -ENOENT when there is none; another -errno
 * with err (a bad line: -EINVAL naming it; -EPERM: the file or dir is
 * another user's, or writable by others, so not trusted).
 */
int nvs_vcache_load(struct nvs_vcache *v, const char *dir, char *err, size_t errlen);
/*
 * Writes it atomically, creating dir (0755); a link at the file's name is
 * replaced, not followed; a dir that is another user's or writable by
 * others is refused (-EPERM). 0 or -errno with err.
 */
int nvs_vcache_save(const struct nvs_vcache *v, const char *dir, char *err, size_t errlen);
/* The state directory: NVSIDECAR_STATE_DIR, else root + /var/lib/nvsidecar, into buf. */
const char *nvs_vcache_dir(const char *root, char *buf, size_t len);

#endif
