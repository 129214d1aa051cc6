// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/env.h"
#include "lib/parse.h"

const char *nvs_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A bounded count of milliseconds; anything else (junk, a sign, too much) is 0. */
static unsigned int env_ms(const char *name, uint32_t max)
{
	const char *v = nvs_env(name);
	uint32_t ms;

	return v && !nvs_parse_u32(v, 0, max, &ms) ? ms : 0;
}

const char *nvs_env_libcuda_state(const char *def)
{
	const char *v = nvs_env("NVS_LIBCUDA_STATE");

	return v ? v : def;
}

const char *nvs_env_doctor_root(void)
{
	return nvs_env("NVS_DOCTOR_ROOT");
}

const char *nvs_env_nvidia_version_file(void)
{
	return nvs_env("NVS_NVIDIA_VERSION_FILE");
}

const char *nvs_env_versions_libdir(void)
{
	return nvs_env("NVS_VERSIONS_LIBDIR");
}

const char *nvs_env_datadir(void)
{
	return nvs_env("NVSIDECAR_DATADIR");
}

const char *nvs_env_libcuda_debug(void)
{
	return nvs_env("NVS_LIBCUDA_DEBUG");
}

bool nvs_env_libcuda_timing(void)
{
	return nvs_env("NVS_LIBCUDA_TIMING") != NULL;
}

long nvs_env_test_libcuda_drop_rewrite(void)
{
	const char *v = nvs_env("NVS_TEST_LIBCUDA_DROP_REWRITE");
	uint32_t n;

	return v && !nvs_parse_u32(v, 0, 1u << 20, &n) ? (long)n : -1;
}

const char *nvs_env_ld_library_path(void)
{
	return nvs_env("LD_LIBRARY_PATH");
}

int nvs_env_color(void)
{
	const char *v = nvs_env("NVSIDECAR_COLOR");

	if (v && !strcmp(v, "always"))
		return 1;
	if (v && !strcmp(v, "never"))
		return 0;
	return -1;
}

bool nvs_env_no_color(void)
{
	return nvs_env("NO_COLOR");
}

unsigned int nvs_env_test_write_delay_ms(void)
{
	return env_ms("NVS_TEST_WRITE_DELAY_MS", 60000);
}

unsigned int nvs_env_test_verify_timeout_s(unsigned int def)
{
	const char *v = nvs_env("NVS_TEST_VERIFY_TIMEOUT_S");
	uint32_t s;

	return v && !nvs_parse_u32(v, 1, 3600, &s) ? s : def;
}

const char *nvs_env_test_full_runner(void)
{
	const char *v = nvs_env("NVS_TEST_FULL_RUNNER");

	return v && v[0] == '/' ? v : NULL;
}

bool nvs_env_test_unkillable(void)
{
	const char *v = nvs_env("NVS_TEST_UNKILLABLE");

	return v && !strcmp(v, "1");
}

unsigned int nvs_env_rdma_wake_delay_ms(void)
{
	return env_ms("NVS_RDMA_WAKE_DELAY_MS", 10000);
}

bool nvs_env_rdma_test_corrupt(void)
{
	const char *v = nvs_env("NVS_RDMA_TEST_CORRUPT");

	return v && !strcmp(v, "1");
}

const char *nvs_env_state_dir(void)
{
	const char *v = nvs_env("NVSIDECAR_STATE_DIR");

	/* a relative path would name another directory in every caller's cwd */
	return v && v[0] == '/' ? v : NULL;
}

const char *nvs_env_state_dir_bad(void)
{
	const char *v = getenv("NVSIDECAR_STATE_DIR");

	return v && v[0] != '/' ? v : NULL;
}

unsigned int nvs_env_verdict_max_age(unsigned int def)
{
	const char *v = nvs_env("NVSIDECAR_VERDICT_MAX_AGE");
	uint32_t s;

	return v && !nvs_parse_u32(v, 0, NVS_VERDICT_MAX_AGE_MAX, &s) ? s : def;
}

const char *nvs_env_verdict_max_age_bad(void)
{
	const char *v = getenv("NVSIDECAR_VERDICT_MAX_AGE");
	uint32_t s;

	return v && nvs_parse_u32(v, 0, NVS_VERDICT_MAX_AGE_MAX, &s) ? v : NULL;
}
