// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Unit tests of libnvsidecar's pure functions: argument parsing, m°C
 * formatting and the CSV recording format. Prints one line per failed
 * check and exits 1 if there was any.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/csv.h"
#include "cli/gpu.h"
#include "lib/busid.h"
#include "lib/env.h"
#include "lib/format.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

static int failures, checks;

#define CHECK(cond, ...) do {						\
	++checks;							\
	if (!(cond)) {							\
		++failures;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

static void u32_cases(void)
{
	static const struct { const char *s; uint32_t min, max; int ret; uint32_t v; } c[] = {
		{ "0", 0, 1000, 0, 0 }, { "1000", 0, 1000, 0, 1000 }, { "50", 0, 1000, 0, 50 },
		{ "1001", 0, 1000, -ERANGE, 0 }, { "-1", 0, 1000, -EINVAL, 0 },
		{ "+1", 0, 1000, -EINVAL, 0 }, { "", 0, 1000, -EINVAL, 0 },
		{ "abc", 0, 1000, -EINVAL, 0 }, { "12abc", 0, 1000, -EINVAL, 0 },
		{ " 12", 0, 1000, -EINVAL, 0 }, { "12 ", 0, 1000, -EINVAL, 0 },
		{ "4294967295", 0, UINT32_MAX, 0, UINT32_MAX },
		{ "4294967296", 0, UINT32_MAX, -ERANGE, 0 },
		{ "99999999999999999999999", 0, UINT32_MAX, -ERANGE, 0 },
		{ "0", 1, 10, -ERANGE, 0 }, { "0x10", 0, 100, -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		uint32_t v = 12345;
		int r = nvs_parse_u32(c[i].s, c[i].min, c[i].max, &v);

		CHECK(r == c[i].ret, "parse_u32(\"%s\") = %d, want %d", c[i].s, r, c[i].ret);
		CHECK(r || v == c[i].v, "parse_u32(\"%s\") gave %u, want %u", c[i].s, v, c[i].v);
		CHECK(!r || errno == -c[i].ret, "parse_u32(\"%s\") left errno %d", c[i].s, errno);
	}
}

static void u64_size_milli_cases(void)
{
	static const struct { const char *s; uint64_t min, max, align; int ret; uint64_t v; } z[] = {
		{ "4096", 1, UINT64_MAX, 0, 0, 4096 }, { "4K", 1, UINT64_MAX, 0, 0, 4096 },
		{ "4KiB", 1, UINT64_MAX, 0, 0, 4096 }, { "4KB", 1, UINT64_MAX, 0, 0, 4096 },
		{ "2m", 1, UINT64_MAX, 0, 0, 2 << 20 }, { "1G", 1, UINT64_MAX, 0, 0, 1ULL << 30 },
		{ "1T", 1, UINT64_MAX, 0, 0, 1ULL << 40 }, { "10B", 1, UINT64_MAX, 0, 0, 10 },
		/* 2^34 + 1 GiB used to wrap to 1 GiB */
		{ "17179869185G", 1, UINT64_MAX, 0, -ERANGE, 0 },
		{ "16777216T", 1, UINT64_MAX, 0, -ERANGE, 0 }, { "16777215T", 1, UINT64_MAX, 0, 0, 16777215ULL << 40 },
		{ "99999999999999999999999", 1, UINT64_MAX, 0, -ERANGE, 0 },
		{ "0", 1, UINT64_MAX, 0, -ERANGE, 0 }, { "3", 1, UINT64_MAX, 4096, -ERANGE, 0 },
		{ "8K", 1, UINT64_MAX, 4096, 0, 8192 }, { "-4096", 1, UINT64_MAX, 0, -EINVAL, 0 },
		{ "4096x", 1, UINT64_MAX, 0, -EINVAL, 0 }, { "4iB", 1, UINT64_MAX, 0, -EINVAL, 0 },
		{ "", 1, UINT64_MAX, 0, -EINVAL, 0 }, { " 4K", 1, UINT64_MAX, 0, -EINVAL, 0 },
		{ "0x10", 1, UINT64_MAX, 0, -EINVAL, 0 }, { "65G", 4, 64ULL << 30, 0, -ERANGE, 0 },
	};
	static const struct { const char *s; int ret; int64_t v; } m[] = {
		{ "0.6", 0, 600 }, { "1", 0, 1000 }, { ".5", 0, 500 }, { "0.001", 0, 1 },
		{ "nan", -EINVAL, 0 }, { "inf", -EINVAL, 0 }, { "1e-1", -EINVAL, 0 },
		{ "0x1p-1", -EINVAL, 0 }, { "0", -ERANGE, 0 }, { "1.001", -ERANGE, 0 }, { "", -EINVAL, 0 },
	};
	uint64_t v;

	CHECK(!nvs_parse_u64("010", 0, 100, &v) && v == 10, "parse_u64(\"010\") is not ten: %llu",
	      (unsigned long long)v);
	CHECK(nvs_parse_u64("18446744073709551616", 0, UINT64_MAX, &v) == -ERANGE, "parse_u64 wraps");
	CHECK(!nvs_parse_u64("18446744073709551615", 0, UINT64_MAX, &v) && v == UINT64_MAX, "parse_u64 max");
	for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); ++i) {
		int r;

		v = 12345;
		r = nvs_parse_size(z[i].s, z[i].min, z[i].max, z[i].align, &v);
		CHECK(r == z[i].ret, "parse_size(\"%s\") = %d, want %d", z[i].s, r, z[i].ret);
		CHECK(r || v == z[i].v, "parse_size(\"%s\") gave %llu, want %llu", z[i].s,
		      (unsigned long long)v, (unsigned long long)z[i].v);
	}
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); ++i) {
		int64_t w = 12345;
		int r = nvs_parse_milli(m[i].s, 1, 1000, &w);

		CHECK(r == m[i].ret, "parse_milli(\"%s\") = %d, want %d", m[i].s, r, m[i].ret);
		CHECK(r || w == m[i].v, "parse_milli(\"%s\") gave %lld, want %lld", m[i].s, (long long)w,
		      (long long)m[i].v);
	}
}

static void celsius_cases(void)
{
	static const struct { const char *s; int ret; int32_t v; } c[] = {
		{ "95", 0, 95000 }, { "95.5", 0, 95500 }, { "95.001", 0, 95001 },
		{ "95.0010", 0, 95001 }, { "-40", 0, -40000 }, { "200", 0, 200000 },
		{ "200.001", -ERANGE, 0 }, { "-40.001", -ERANGE, 0 }, { "0", 0, 0 },
		{ "-0.5", 0, -500 }, { "95C", 0, 95000 }, { "95°C", 0, 95000 },
		{ "95.0001", -EINVAL, 0 }, { "", -EINVAL, 0 }, { ".", -EINVAL, 0 },
		{ "-", -EINVAL, 0 }, { "abc", -EINVAL, 0 }, { "95F", -EINVAL, 0 },
		{ "1e2", -EINVAL, 0 }, { "nan", -EINVAL, 0 }, { ".5", 0, 500 },
		{ "99999999999999999999999", -ERANGE, 0 }, { "95 ", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		int32_t v = 12345;
		int r = nvs_parse_celsius(c[i].s, NVS_THRESH_MIN_MC, NVS_THRESH_MAX_MC, &v);

		CHECK(r == c[i].ret, "parse_celsius(\"%s\") = %d, want %d", c[i].s, r, c[i].ret);
		CHECK(r || v == c[i].v, "parse_celsius(\"%s\") gave %d, want %d", c[i].s, v, c[i].v);
	}
}

static void duration_cases(void)
{
	static const struct { const char *s; int ret; uint64_t v; } c[] = {
		{ "30", 0, 30000 }, { "1.5", 0, 1500 }, { "250ms", 0, 250 }, { "2s", 0, 2000 },
		{ "5m", 0, 300000 }, { "1h", 0, 3600000 }, { "0.001", 0, 1 },
		{ "0", -ERANGE, 0 }, { "0ms", -ERANGE, 0 }, { "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 }, { "1.5ms", -EINVAL, 0 }, { "10x", -EINVAL, 0 },
		{ "", -EINVAL, 0 }, { "s", -EINVAL, 0 }, { "abc", -EINVAL, 0 },
		{ "604800", 0, 604800000 }, { "604801", -ERANGE, 0 }, { "169h", -ERANGE, 0 },
		{ "99999999999999999999h", -ERANGE, 0 }, { "0.0001", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		uint64_t v = 12345;
		int r = nvs_parse_duration_ms(c[i].s, 1, 7ULL * 24 * 3600 * 1000, &v);

		CHECK(r == c[i].ret, "parse_duration(\"%s\") = %d, want %d", c[i].s, r, c[i].ret);
		CHECK(r || v == c[i].v, "parse_duration(\"%s\") gave %llu, want %llu", c[i].s,
		      (unsigned long long)v, (unsigned long long)c[i].v);
	}
}

static void gpu_cases(void)
{
	struct nvs_gpu_info g[2] = { { .index = 0, .busid = "0000:03:00.0" },
				     { .index = 7, .busid = "0001:0a:00.0" } };
	static const struct { const char *s; int ret; uint32_t v; } c[] = {
		{ "0", 0, 0 }, { "gpu0", 0, 0 }, { "7", 0, 7 }, { "gpu7", 0, 7 },
		{ "0000:03:00.0", 0, 0 }, { "03:00.0", 0, 0 }, { "0001:0A:00.0", 0, 7 },
		{ "0a:00.0", -ENODEV, 0 }, { "1", -ENODEV, 0 }, { "gpu", -EINVAL, 0 },
		{ "", -EINVAL, 0 }, { "-1", -EINVAL, 0 }, { "3:00.0", -ENODEV, 0 },
		{ "gpu-1", -EINVAL, 0 }, { "foo", -EINVAL, 0 }, { "00.0", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		uint32_t v = 12345;
		int r = nvs_parse_gpu(c[i].s, g, 2, &v);

		CHECK(r == c[i].ret, "parse_gpu(\"%s\") = %d, want %d", c[i].s, r, c[i].ret);
		CHECK(r || v == c[i].v, "parse_gpu(\"%s\") gave %u, want %u", c[i].s, v, c[i].v);
	}
}

static void format_cases(void)
{
	static const struct { int32_t mc; const char *s; } c[] = {
		{ 0, "0.0" }, { 95000, "95.0" }, { 95500, "95.5" }, { 95001, "95.001" },
		{ 95010, "95.01" }, { -500, "-0.5" }, { -40000, "-40.0" },
		{ INT32_MIN, "-2147483.648" }, { INT32_MAX, "2147483.647" }, { 3906, "3.906" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		char buf[32];

		nvs_format_mc(buf, sizeof(buf), c[i].mc);
		CHECK(!strcmp(buf, c[i].s), "format_mc(%d) = \"%s\", want \"%s\"", c[i].mc, buf, c[i].s);
	}
}

static void csv_cases(void)
{
	const char *labels[] = { "hotspot", "ch0", "we,ird\"" };
	struct nvs_sample_entry s = { .seq = 42, .ts_ns = 123456789012ULL, .valid = 0x5 };
	int col[3] = { 0, 2, -1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	s.mc[0] = 63250;
	s.mc[1] = -1;		/* not valid: empty cell */
	s.mc[2] = -40000;	/* valid, but the GPU maps it to no column */
	CHECK(!nvs_csv_header(f, labels, 3), "csv_header failed");
	CHECK(!nvs_csv_row(f, 3, &s, 3, col, 3), "csv_row failed");
	col[2] = 1;
	CHECK(!nvs_csv_row(f, 3, &s, 3, col, 3), "csv_row failed");
	CHECK(nvs_csv_row(f, 3, &s, NVS_MAX_SENSORS + 1, col, 3) == -EINVAL,
	      "csv_row accepted too many sensors");
	fclose(f);
	CHECK(!strcmp(buf, "gpu,seq,timestamp_ns,hotspot,ch0,\"we,ird\"\"\"\n"
			   "3,42,123456789012,63250,,\n"
			   "3,42,123456789012,63250,-40000,\n"),
	      "csv output:\n%s", buf);
	free(buf);
}

/* The one bus-id reader: what sscanf("%x") let through must not pass. */
static void busid_cases(void)
{
	static const struct { const char *s; int ok; uint32_t d; unsigned int b, dev, fn; } c[] = {
		{ "0000:01:00.0", 1, 0, 1, 0, 0 }, { "01:00.0", 1, 0, 1, 0, 0 },
		{ "00000000:0A:1f.7", 1, 0, 0xa, 0x1f, 7 }, { "0001:ff:00.1", 1, 1, 0xff, 0, 1 },
		{ "0x1:00.0", 0, 0, 0, 0, 0 }, { " 01:00.0", 0, 0, 0, 0, 0 }, { "+1:00.0", 0, 0, 0, 0, 0 }, { "-1:00.0", 0, 0, 0, 0, 0 },
		{ "0000:01:00.0 ", 0, 0, 0, 0, 0 }, { "0000:01:00.0x", 0, 0, 0, 0, 0 }, { "0000:01:20.0", 0, 0, 0, 0, 0 },
		{ "0000:01:00.8", 0, 0, 0, 0, 0 }, { "0000:100:00.0", 0, 0, 0, 0, 0 }, { "000000000:01:00.0", 0, 0, 0, 0, 0 },
		{ "1:2:3:4.0", 0, 0, 0, 0, 0 }, { "0000:01:00", 0, 0, 0, 0, 0 }, { "01.0", 0, 0, 0, 0, 0 }, { "", 0, 0, 0, 0, 0 }, { ":01:00.0", 0, 0, 0, 0, 0 },
		{ "0000:01:00.", 0, 0, 0, 0, 0 }, { "0000::00.0", 0, 0, 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		struct nvs_busid b = { 0 };
		int r = nvs_busid_parse(c[i].s, &b);

		CHECK((r == 0) == c[i].ok, "busid_parse(\"%s\") = %d", c[i].s, r);
		CHECK(nvs_bdf_ok(c[i].s) == c[i].ok, "bdf_ok(\"%s\")", c[i].s);
		CHECK(r || (b.domain == c[i].d && b.bus == c[i].b && b.dev == c[i].dev && b.fn == c[i].fn),
		      "busid_parse(\"%s\") gave %x:%x:%x.%x", c[i].s, b.domain, b.bus, b.dev, b.fn);
	}
	/* CUDA's form against the kernel's; no domain is domain 0 */
	CHECK(nvs_same_busid("00000000:0A:00.0", "0000:0a:00.0"), "same_busid cuda/kernel");
	CHECK(nvs_same_busid("0a:00.0", "0000:0a:00.0"), "same_busid short");
	CHECK(!nvs_same_busid("0001:0a:00.0", "0000:0a:00.0"), "same_busid other domain");
	CHECK(!nvs_same_busid("0000:0a:00.0 junk", "0000:0a:00.0"), "same_busid trailing junk");
	CHECK(!nvs_same_busid("", ""), "same_busid empty");
	/* what reaches the module: the kernel's name, whatever form came in */
	{
		struct nvs_busid b = { 0 };
		char nm[16];

		CHECK(!nvs_busid_parse("00000000:0A:1f.7", &b) && !nvs_busid_name(&b, nm, sizeof(nm)) &&
		      !strcmp(nm, "0000:0a:1f.7"), "busid_name(cuda form) = \"%s\"", nm);
		CHECK(!nvs_busid_parse("0a:00.0", &b) && !nvs_busid_name(&b, nm, sizeof(nm)) &&
		      !strcmp(nm, "0000:0a:00.0"), "busid_name(short form) = \"%s\"", nm);
		CHECK(!nvs_busid_parse("1234567:ff:00.1", &b) && !nvs_busid_name(&b, nm, sizeof(nm)) &&
		      !strcmp(nm, "1234567:ff:00.1"), "busid_name(7-digit domain) = \"%s\"", nm);
		CHECK(!nvs_busid_parse("12345678:ff:00.1", &b) &&
		      nvs_busid_name(&b, nm, sizeof(nm)) == -ENAMETOOLONG, "busid_name(8 digits) fits 16 bytes");
	}
}

/* One reader per setting: empty is unset everywhere. */
static void env_cases(void)
{
	setenv("NVS_LIBCUDA_STATE", "", 1);
	CHECK(!strcmp(nvs_env_libcuda_state("/def"), "/def"), "empty NVS_LIBCUDA_STATE is not the default");
	setenv("NVS_LIBCUDA_STATE", "/st", 1);
	CHECK(!strcmp(nvs_env_libcuda_state("/def"), "/st"), "NVS_LIBCUDA_STATE ignored");
	unsetenv("NVS_LIBCUDA_STATE");
	CHECK(!strcmp(nvs_env_libcuda_state("/def"), "/def"), "unset NVS_LIBCUDA_STATE");
	setenv("NVS_DOCTOR_ROOT", "", 1);
	CHECK(!nvs_env_doctor_root(), "empty NVS_DOCTOR_ROOT is a root");
	setenv("NVSIDECAR_COLOR", "always", 1);
	CHECK(nvs_env_color() == 1, "NVSIDECAR_COLOR=always");
	setenv("NVSIDECAR_COLOR", "never", 1);
	CHECK(nvs_env_color() == 0, "NVSIDECAR_COLOR=never");
	setenv("NVSIDECAR_COLOR", "", 1);
	CHECK(nvs_env_color() == -1, "empty NVSIDECAR_COLOR");
	setenv("NO_COLOR", "", 1);
	CHECK(!nvs_env_no_color(), "empty NO_COLOR counts (no-color.org: set and not empty)");
	setenv("NVS_TEST_WRITE_DELAY_MS", "400", 1);
	CHECK(nvs_env_test_write_delay_ms() == 400, "write delay 400");
	setenv("NVS_TEST_WRITE_DELAY_MS", "-5", 1);
	CHECK(nvs_env_test_write_delay_ms() == 0, "negative write delay");
	setenv("NVS_RDMA_WAKE_DELAY_MS", "10001", 1);
	CHECK(nvs_env_rdma_wake_delay_ms() == 0, "wake delay over the bound");
	setenv("NVS_RDMA_TEST_CORRUPT", "1", 1);
	CHECK(nvs_env_rdma_test_corrupt(), "NVS_RDMA_TEST_CORRUPT=1");
	setenv("NVS_RDMA_TEST_CORRUPT", "yes", 1);
	CHECK(!nvs_env_rdma_test_corrupt(), "NVS_RDMA_TEST_CORRUPT=yes");
}

static void name_cases(void)
{
	CHECK(!strcmp(nvs_status_name(NVS_STATUS_OK), "ok"), "status ok");
	CHECK(!strcmp(nvs_status_name(__NVS_STATUS_LAST), "unknown"), "status out of range");
	CHECK(!strcmp(nvs_event_name(NVS_EVENT_THRESHOLD_CROSSED), "threshold-crossed"), "event");
	CHECK(!strcmp(nvs_event_name(0), "unknown"), "event 0");
	CHECK(!strcmp(nvs_event_name(UINT32_MAX), "unknown"), "event huge");
	CHECK(!strcmp(nvs_dmabuf_verdict_name(NVS_DMABUF_VERDICT_BAR1), "bar1"), "verdict");
	CHECK(!strcmp(nvs_p2p_name(NVS_P2P_NOT_APPLICABLE), "not-applicable"), "p2p");
	CHECK(!strcmp(nvs_dmabuf_step_name(NVS_DMABUF_STEP_DONE), "done"), "step");
}

int main(void)
{
	u32_cases();
	busid_cases();
	env_cases();
	u64_size_milli_cases();
	celsius_cases();
	duration_cases();
	gpu_cases();
	format_cases();
	csv_cases();
	name_cases();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
