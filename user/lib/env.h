/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_ENV_H
#define LIB_ENV_H

#include <stdbool.h>

/*
 * Every environment setting the helper reads, one reader each, so each
 * has one meaning. The rule for all of them: an empty value is the same
 * as not set (`NVS_X= cmd' in a script must not mean "the empty path").
 */

/* A setting by name: NULL when unset or empty. The readers below use it. */
const char *nvs_env(const char *name);

/* NVS_LIBCUDA_STATE: where `libcuda patch' keeps its state (def when unset). */
const char *nvs_env_libcuda_state(const char *def);
/* NVS_DOCTOR_ROOT: the prefix doctor reads /boot, /lib/modules... under (tests); NULL: "/". */
const char *nvs_env_doctor_root(void);
/* LD_LIBRARY_PATH, for `libcuda env'; NULL when unset or empty. */
const char *nvs_env_ld_library_path(void);
/* NVS_NVIDIA_VERSION_FILE: a file read instead of /proc/driver/nvidia/version (tests). */
const char *nvs_env_nvidia_version_file(void);
/* NVS_VERSIONS_LIBDIR: the directory sys/versions.c loads NCCL, UCX... from, not the loader's path (tests). */
const char *nvs_env_versions_libdir(void);
/* NVSIDECAR_DATADIR: where the doctor's data (known-issues.tsv) is, before the installed copy. */
const char *nvs_env_datadir(void);
/* NVS_LIBCUDA_DEBUG: the gate analysis explains itself on stderr; the value, if hex, names one store. */
const char *nvs_env_libcuda_debug(void);
/* NVS_LIBCUDA_TIMING: the gate analysis prints its phase times on stderr. */
bool nvs_env_libcuda_timing(void);
/* NVSIDECAR_COLOR: 1 always, 0 never, -1 unset or anything else (decide by terminal). */
int nvs_env_color(void);
/* NO_COLOR (no-color.org): set and not empty. */
bool nvs_env_no_color(void);
/* Test hooks, read once per use; invalid or out-of-range values are 0. */
/* NVS_TEST_WRITE_DELAY_MS: pause before an atomic rename, [0, 60000]. */
unsigned int nvs_env_test_write_delay_ms(void);
/* NVS_TEST_LIBCUDA_DROP_REWRITE: the planned rewrite `patch' leaves out (re-check tests); -1 unset. */
long nvs_env_test_libcuda_drop_rewrite(void);
/* NVS_RDMA_WAKE_DELAY_MS: delay before a completion wake-up, [0, 10000]. */
unsigned int nvs_env_rdma_wake_delay_ms(void);
/* NVS_RDMA_TEST_CORRUPT=1: flip a byte to prove verification fails. */
bool nvs_env_rdma_test_corrupt(void);
/*
 * NVS_TEST_VERIFY_TIMEOUT_S: the time limit of `libcuda verify''s child in
 * seconds, [1, 3600]; def when unset or invalid.
 */
unsigned int nvs_env_test_verify_timeout_s(unsigned int def);
/*
 * NVS_TEST_UNKILLABLE=1: doctor --full sends a child past its time signal 0
 * instead of SIGKILL, so that it outlives the kill as one stuck in the
 * kernel (state D) does (tests).
 */
bool nvs_env_test_unkillable(void);
/* NVS_TEST_FULL_RUNNER: an absolute path doctor --full runs as `p2p' and `rdma' instead of itself (tests). */
const char *nvs_env_test_full_runner(void);
/*
 * NVSIDECAR_STATE_DIR: the per-node writable directory for the verdict
 * cache (default /var/lib/nvsidecar); NULL when unset, empty or not an
 * absolute path (nvs_env_state_dir_bad() says which).
 */
const char *nvs_env_state_dir(void);
/* NVSIDECAR_STATE_DIR's value when it is set but empty or relative, else NULL. */
const char *nvs_env_state_dir_bad(void);
/*
 * NVSIDECAR_VERDICT_MAX_AGE: seconds after which the last `doctor --full''s
 * verdict is too old to be used, [0, NVS_VERDICT_MAX_AGE_MAX]; def when
 * unset or invalid (nvs_env_verdict_max_age_bad() says which).
 */
#define NVS_VERDICT_MAX_AGE_MAX (100u * 86400)
unsigned int nvs_env_verdict_max_age(unsigned int def);
/* NVSIDECAR_VERDICT_MAX_AGE's value when it is set (empty too) but not a valid age, else NULL. */
const char *nvs_env_verdict_max_age_bad(void);

#endif
