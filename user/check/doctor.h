/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_DOCTOR_H
#define CHECK_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sys/pci.h"

/*
 * The doctor's checks: one record per check, grouped by layer (module,
 * gpu, driver, libcuda, gdr, topology, full), each OK, WARN, FAIL or SKIP
 * with the reason and what to do. Nothing here prints: cmd/doctor.c and
 * cli/prometheus.c render the checks.
 */
enum nvs_check_result { CK_OK, CK_WARN, CK_FAIL, CK_SKIP };

struct nvs_check {
	enum nvs_check_result res;
	char layer[16];		/* module, gpu, driver, libcuda, gdr, topology, full */
	char name[96];		/* stable: module-loaded, gpu0, topo-rebar-small@BDF ... */
	char msg[512];
	char fix[512];		/* "" when there is nothing to do */
};

/* One GPU the module watches, as the textfile names it. */
struct nvs_doctor_gpu {
	unsigned int index;		/* gpuN */
	char busid[32];
	char model[16];			/* the module's chip name: gb202 */
	char status[16];		/* ok, asleep, no-driver, unavailable, removed */
	char hwmon_chip[128];		/* node_exporter's "chip" label for its hwmon device */
	bool driver_temp_ok;		/* NVML answered for it */
	unsigned int driver_temp;	/* °C */
};

struct nvs_checks {
	struct nvs_check *v;
	size_t n, cap;
	bool oom;
	struct nvs_doctor_gpu *gpus;
	size_t ngpus;
	bool counted;			/* the module answered: ngpus is the real count */
	double started;			/* CLOCK_REALTIME, seconds */
	double seconds;			/* how long the run took */
	/* the libcuda the loader picks, asked once per run (nvs_doctor_libcuda_path) */
	bool lib_asked;
	int lib_ret;
	char lib_path[4096];
	char lib_err[4400];
	/* GPUs the topology scan found, for the known-issues table; -1: no scan */
	long pci_gpus, pci_gb20x;
	char gb20x_busids[256];		/* those GB20x GPUs, ", "-separated */
};

#define NVS_DOCTOR_MAX_LIMITS 32

/* A sensor over mc (milli-°C) fails: sensor is a label or a glob ("mem*"). */
struct nvs_doctor_limit {
	char sensor[32];
	int32_t mc;
};

enum nvs_doctor_mode {
	NVS_DOCTOR_DEFAULT,
	NVS_DOCTOR_QUICK,	/* the module's cached state only: no GPU, NVML, libcuda or PCI access */
	NVS_DOCTOR_FULL,	/* adds short verified P2P and RDMA loopback runs */
};

struct nvs_doctor_opts {
	enum nvs_doctor_mode mode;
	bool strict;			/* warnings fail too */
	int expect_gpus;		/* -1: not set */
	struct nvs_doctor_limit limits[NVS_DOCTOR_MAX_LIMITS];
	size_t nlimits;
	char driver_version[64];	/* "": not set */
	char patched[4096];		/* `libcuda patch --out' directory; "": none */
	char nvml[4096];		/* libnvidia-ml; "": libnvidia-ml.so.1 */
	char lib[4096];			/* libcuda; "": the one the loader picks */
	char textfile[4096];		/* write node_exporter's textfile here; "": no */
	struct nvs_pci_id ids[16];	/* also GPUs (tests) */
	size_t nids;
	const char *pci_dump;		/* judge this `lspci -xxxx' dump, not sysfs */
	/* prefix for /boot, /lib/modules, /var/lib/dkms, /sys/firmware (tests); NULL: "/" */
	const char *root;
	const char *self;		/* this program, for --full's runs */
};

/* The defaults: no expectations, no limits, default mode. */
void nvs_doctor_opts_init(struct nvs_doctor_opts *o);

/*
 * One setting, by the name a doctor.conf key and a long option share
 * ("expect-gpus", "limit", "driver-version", "patched", "nvml", "lib",
 * "gpu-ids", "textfile", "strict"). A limit for a sensor already limited
 * replaces it. Returns 0, -ENOENT for an unknown key, or -EINVAL with err.
 */
int nvs_doctor_set(struct nvs_doctor_opts *o, const char *key, const char *val, const char *shown, char *err,
		   size_t errlen);
/* shown: the name for messages ("--limit" or "limit"). */
bool nvs_doctor_key_known(const char *key);
/* Whether key takes a value (every known key but "strict"). */
bool nvs_doctor_key_has_value(const char *key);

/*
 * doctor's options that choose one run and are not doctor.conf keys
 * ("quick", "pci-dump", ...; value: it takes one), the table the error
 * hints are made from (review L5): the keys above are options too.
 */
struct nvs_doctor_opt {
	const char *name;
	bool value;
};
extern const struct nvs_doctor_opt nvs_doctor_run_opts[];
extern const size_t nvs_doctor_run_nopts;
/*
 * Every option doctor takes, run options and keys, from the two tables:
 * as nvs_arg_invalid() wants them ("--brief ... --expect-gpus= ...") when
 * as_options, else the keys alone ("expect-gpus, limit, ..."). Returns buf.
 */
const char *nvs_doctor_opts_list(char *buf, size_t len, bool as_options);
/*
 * Reads a doctor.conf: "key = value" lines, '#' comments. A missing file is
 * -ENOENT (the caller decides whether that matters); a bad line -EINVAL
 * with err naming the file and line.
 */
int nvs_doctor_conf_load(struct nvs_doctor_opts *o, const char *path, char *err, size_t errlen);
#define NVS_DOCTOR_CONF "/etc/nvsidecar/doctor.conf"

/* Runs every layer. 0, or -ENOMEM (c is then empty). */
int nvs_doctor_run(const struct nvs_doctor_opts *o, struct nvs_checks *c);
void nvs_checks_free(struct nvs_checks *c);
const char *nvs_check_result_name(enum nvs_check_result r);
/* The check that decides the verdict: the first FAIL (or WARN with strict); NULL if none. */
const struct nvs_check *nvs_doctor_first(const struct nvs_checks *c, bool strict);

/* ---- layers, one file each (check/doctor_*.c); c gets their checks ---- */
struct nvs_handle;

/* module-loaded; when it is not, why (no module for this kernel, Secure Boot). */
void nvs_doctor_module_loaded(struct nvs_checks *c, const struct nvs_doctor_opts *o, bool loaded);
/* The DKMS build for the running kernel against the loaded version; the initramfs copy. */
void nvs_doctor_module_install(struct nvs_checks *c, const struct nvs_doctor_opts *o, bool loaded,
			       const char *loaded_version);
/* nvidia loaded, its version against driver-version and libcuda's, the GPUs' driver temperature. */
void nvs_doctor_driver(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/*
 * The installed libcuda and the patched copy, by library call (one
 * analysis each), then the two GDR gates separately: libcuda's dma-buf
 * gate and nvidia-peermem.
 */
void nvs_doctor_libcuda(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/* Known problems of neighbouring components (known-issues.tsv) that match this node. */
void nvs_doctor_known(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/* A GPU driving a display (DRM connector connected), and what it does to P2P. */
void nvs_doctor_display(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/* The Slurm hang from hwloc's gl plugin probing X on TCP 6000-6009 (docs/slurm-hwloc.md). */
void nvs_doctor_slurm(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/* --full: short verified P2P copies and an RDMA loopback into GPU memory. */
void nvs_doctor_full(struct nvs_checks *c, const struct nvs_doctor_opts *o);
/* Without --full: the last --full verdict, while its key is unchanged (check/vcache.h). */
void nvs_doctor_cached(struct nvs_checks *c, const struct nvs_doctor_opts *o);

/* Records a check; the fix of the one added last. Shared by the layer files. */
void nvs_check_add(struct nvs_checks *c, enum nvs_check_result res, const char *layer, const char *name,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void nvs_check_fix(struct nvs_checks *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The libcuda to judge (lib, else the dynamic loader's), asked once per run:
 * finding the loader's runs `ldconfig -p'. 0 with the path, or lc_pick_lib's
 * error with its message.
 */
int nvs_doctor_libcuda_path(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char **path,
			    const char **err);
/* root-prefixed path into buf */
const char *nvs_doctor_path(const struct nvs_doctor_opts *o, const char *path, char *buf, size_t len);

#endif
