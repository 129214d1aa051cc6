/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_IDLEFIX_H
#define CHECK_IDLEFIX_H

#include <stdbool.h>
#include <stddef.h>

/*
 * idle-fix: after P2P use on patched drivers some GPUs stay at full
 * utilisation and high power with no process left; creating a CUDA context
 * on such a GPU and destroying it at once brings it back to idle. Each run
 * takes one NVML sample per GPU; a GPU at or above the threshold with no
 * process, in `checks' consecutive runs (the count is kept in a state
 * file), gets that context, in a child process with a timeout. A GPU with
 * a process, or one that drops below the threshold in between (flapping),
 * is left alone and its count starts over.
 */
struct nvs_idlefix_opts {
	unsigned int threshold;		/* % utilisation (default 90) */
	unsigned int checks;		/* consecutive runs (default 3) */
	unsigned int timeout_s;		/* for the context child (default 30) */
	bool dry_run;			/* count and report, create no context */
	const char *state;		/* default NVS_IDLEFIX_STATE */
	const char *nvml;		/* NULL: libnvidia-ml.so.1 */
	const char *lib;		/* NULL: libcuda.so.1 */
};
#define NVS_IDLEFIX_STATE "/run/nvsidecar/idle-fix.state"

enum nvs_idlefix_action {
	NVS_IF_IDLE,			/* below the threshold */
	NVS_IF_BUSY,			/* a process uses it: left alone */
	NVS_IF_COUNTING,		/* stuck, count < checks */
	NVS_IF_WOULD_FIX,		/* --dry-run */
	NVS_IF_FIXED,			/* context created and destroyed */
	NVS_IF_FIX_FAILED,
	NVS_IF_UNKNOWN,			/* NVML could not say */
};

struct nvs_idlefix_gpu {
	char busid[32];
	unsigned int util, procs, power_mw;
	bool power_ok;
	unsigned int count;		/* consecutive stuck runs, this one included */
	enum nvs_idlefix_action action;
	char msg[320];			/* why, for UNKNOWN and FIX_FAILED */
};

struct nvs_idlefix_result {
	struct nvs_idlefix_gpu *v;
	size_t n;
	bool save_failed;	/* the error is writing the state: an I/O failure (exit 1) */
};

void nvs_idlefix_opts_init(struct nvs_idlefix_opts *o);
/*
 * One run. Returns 0 (r filled), or -errno with err: -ENOENT no NVML
 * (no NVIDIA driver), -EIO NVML failed, -EBUSY another run holds the state.
 */
int nvs_idlefix_run(const struct nvs_idlefix_opts *o, struct nvs_idlefix_result *r, char *err, size_t errlen);
void nvs_idlefix_free(struct nvs_idlefix_result *r);
const char *nvs_idlefix_action_name(enum nvs_idlefix_action a);

#endif
