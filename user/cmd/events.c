// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "libnvsidecar.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/out.h"


static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s [--json] [--gpu GPU] [--count N] [--timeout S]\n\n", PROG_NAME, name);
	fprintf(f,
		"Prints events of the module as they arrive, one per line: thresholds\n"
		"crossed and cleared, GPUs added and removed, status changes (for\n"
		"example, the NVIDIA driver unbound). `Listening for events' on stderr\n"
		"means the subscription is in place.\n\n"
		"  --json       one JSON object per line\n"
		"  --gpu GPU    only events of this GPU (gpuN, N or a PCI bus id)\n"
		"  --count N    exit after N events\n"
		"  --timeout S  exit after S seconds (30, 1.5, 500ms, 2m)\n\n"
		"Exit codes: 0 success (N events seen, or the timeout passed without\n"
		"--count), 1 failure, events lost, or --timeout before --count events,\n"
		"2 invalid arguments, 3 the module is not loaded.\n");
}

static void print_event(const struct nvs_event_info *ev, bool as_json)
{
	const struct nvs_sensor_info *s = &ev->sensor;
	char a[16], b[16];

	if (as_json) {
		struct json j;

		json_init(&j, stdout, false);
		json_obj_open(&j, NULL);
		json_str(&j, "type", nvs_event_name(ev->type));
		json_uint(&j, "ts_ns", ev->ts_ns);
		if (ev->has_gpu)
			json_uint(&j, "gpu", ev->gpu);
		else
			json_null(&j, "gpu");
		json_str(&j, "busid", ev->busid[0] ? ev->busid : NULL);
		if (ev->has_status) {
			json_str(&j, "status", nvs_status_name(ev->status));
			json_str(&j, "reason", ev->reason[0] ? ev->reason : NULL);
		}
		if (ev->has_sensor) {
			json_obj_open(&j, "sensor");
			json_uint(&j, "id", s->id);
			json_str(&j, "label", s->label);
			json_bool(&j, "valid", s->valid);
			if (s->valid)
				json_int(&j, "mc", s->mc);
			else
				json_null(&j, "mc");
			if (s->has_max)
				json_int(&j, "max_mc", s->max);
			else
				json_null(&j, "max_mc");
			json_bool(&j, "alarm", s->alarm);
			json_obj_close(&j);
		}
		json_obj_close(&j);
		json_end(&j);
		return;
	}
	printf("[%5" PRIu64 ".%06" PRIu64 "] ", ev->ts_ns / 1000000000, ev->ts_ns / 1000 % 1000000);
	if (ev->has_gpu)
		printf("gpu%u ", ev->gpu);
	if (ev->busid[0])
		printf("%s ", ev->busid);
	printf("%s", nvs_event_name(ev->type));
	if (ev->has_status)
		printf(" %s%s%s", nvs_status_name(ev->status), ev->reason[0] ? ": " : "", ev->reason);
	if (ev->has_sensor) {
		printf(" %s %s °C", s->label, s->valid ? nvs_format_mc(a, sizeof(a), s->mc) : "n/a");
		if (s->has_max)
			printf(" %s %s °C", s->alarm ? ">" : "<=", nvs_format_mc(b, sizeof(b), s->max));
	}
	printf("\n");
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int events_main(int argc, const char *argv[])
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_handle *h = NULL;
	const char *gpu = NULL;
	char busid[NVS_BUSID_LEN] = "";
	uint64_t timeout_ms = 0;
	uint32_t count = 0, seen = 0;
	bool as_json = false, lost = false;
	int64_t deadline = -1;
	size_t n = 0;
	int ret = NVS_EX_USAGE;

	for (int i = 1; i < argc; ++i) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(argv[i], "--json")) {
			as_json = true;
		} else if (!strcmp(argv[i], "--gpu") && v) {
			gpu = v;
			++i;
		} else if (!strcmp(argv[i], "--count") && v) {
			if (nvs_parse_u32(v, 1, UINT32_MAX, &count) < 0) {
				fprintf(stderr, "Invalid --count (a positive number): `%s'\n", v);
				goto usage;
			}
			++i;
		} else if (!strcmp(argv[i], "--timeout") && v) {
			if (nvs_parse_duration_ms(v, 1, 7ULL * 24 * 3600 * 1000, &timeout_ms) < 0) {
				fprintf(stderr, "Invalid --timeout (1 ms to 7 days, e.g. 30, 1.5, "
					"500ms, 2m): `%s'\n", v);
				goto usage;
			}
			++i;
		} else {
			bool needs_value = !v && (!strcmp(argv[i], "--gpu") ||
						   !strcmp(argv[i], "--count") ||
						   !strcmp(argv[i], "--timeout"));

			fprintf(stderr, needs_value ? "Missing value for `%s'\n" :
				"Unknown argument: `%s'\n", argv[i]);
			goto usage;
		}
	}

	ret = NVS_EX_FAIL;
	if (nvs_open(&h) < 0) {
		fprintf(stderr, "%s\n", nvs_last_error(NULL));
		ret = errno == ENOENT ? NVS_EX_MISSING : NVS_EX_FAIL;
		goto cleanup;
	}
	if (gpu) {
		uint32_t idx;

		if (nvs_gpu_list(h, &gpus, &n) < 0) {
			fprintf(stderr, "Unable to list GPUs: %s\n", nvs_last_error(h));
			goto cleanup;
		}
		if (nvs_parse_gpu(gpu, gpus, n, &idx) < 0) {
			fprintf(stderr, "No such GPU: `%s' (see `%s status')\n", gpu, PROG_NAME);
			goto cleanup;
		}
		for (size_t i = 0; i < n; ++i)
			if (gpus[i].index == idx)
				memcpy(busid, gpus[i].busid, sizeof(busid));
	}
	if (nvs_events_subscribe(h) < 0) {
		fprintf(stderr, "Unable to subscribe to events: %s\n", nvs_last_error(h));
		goto cleanup;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "Listening for events\n");
	if (timeout_ms)
		deadline = now_ms() + (int64_t)timeout_ms;

	while (!stop && (!count || seen < count)) {
		struct nvs_event_info ev;
		int wait = -1;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				break;
			wait = left > 60000 ? 60000 : (int)left;
		}
		if (nvs_event_recv(h, &ev, wait) < 0) {
			if (errno == ETIMEDOUT || errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				fprintf(stderr, "%s\n", nvs_last_error(h));
				lost = true;
				continue;
			}
			fprintf(stderr, "Unable to receive events: %s\n", nvs_last_error(h));
			goto cleanup;
		}
		if (busid[0] && strcmp(ev.busid, busid))
			continue;
		print_event(&ev, as_json);
		++seen;
	}
	if (count && seen < count && !stop) {
		fprintf(stderr, "Timed out with %u of %u events\n", seen, count);
		goto cleanup;
	}
	ret = lost ? NVS_EX_FAIL : NVS_EX_OK;

cleanup:
	free(gpus);
	nvs_close(h);
	return ret;

usage:
	show_usage(stderr, argv[0]);
	return ret;
}
