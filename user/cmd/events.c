// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/gpu.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/format.h"
#include "lib/parse.h"
#include "libnvsidecar.h"


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
		"--count), 1 failure or --timeout before --count events, 2 invalid\n"
		"arguments, 3 the module is not loaded or no such GPU, 5 events were\n"
		"lost (nvsidecar(8) has the table).\n");
}

/* One event: a line of text, or one JSON document on its own line. */
static void show_event(const struct nvs_event_info *ev)
{
	const struct nvs_sensor_info *s = &ev->sensor;
	char a[16], b[16];

	out_begin(false);
	out_text("[%5" PRIu64 ".%06" PRIu64 "] ", ev->ts_ns / 1000000000, ev->ts_ns / 1000 % 1000000);
	out_str(OUT_JSON, "type", NULL, nvs_event_name(ev->type));
	out_uint(OUT_JSON, "ts_ns", NULL, ev->ts_ns);
	if (ev->has_gpu)
		out_uint(OUT_ANY, "gpu", "gpu%llu ", ev->gpu);
	else
		out_null("gpu");
	out_str(OUT_ANY, "busid", ev->busid[0] ? "%s " : NULL, ev->busid[0] ? ev->busid : NULL);
	out_str(OUT_TEXT, NULL, "%s", nvs_event_name(ev->type));
	if (ev->has_status) {
		out_str(OUT_ANY, "status", " %s", nvs_status_name(ev->status));
		out_str(OUT_ANY, "reason", ev->reason[0] ? ": %s" : NULL, ev->reason[0] ? ev->reason : NULL);
	}
	if (ev->has_sensor) {
		out_obj(OUT_JSON, "sensor");
		out_uint(OUT_JSON, "id", NULL, s->id);
		out_str(OUT_ANY, "label", " %s", s->label);
		out_bool(OUT_JSON, "valid", NULL, s->valid);
		if (s->valid)
			out_int(OUT_JSON, "mc", NULL, s->mc);
		else
			out_null("mc");
		out_text(" %s °C", s->valid ? nvs_format_mc(a, sizeof(a), s->mc) : "n/a");
		if (s->has_max) {
			out_int(OUT_JSON, "max_mc", NULL, s->max);
			out_text(" %s %s °C", s->alarm ? ">" : "<=", nvs_format_mc(b, sizeof(b), s->max));
		} else {
			out_null("max_mc");
		}
		out_bool(OUT_JSON, "alarm", NULL, s->alarm);
		out_obj_end(OUT_JSON);
	}
	out_text("\n");
	out_record_end();
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
	struct nvs_cli c = { 0 };
	const char *gpu = NULL;
	char busid[NVS_BUSID_LEN] = "";
	uint64_t timeout_ms = 0;
	uint32_t count = 0, seen = 0;
	bool lost = false;
	int64_t deadline = -1;
	struct nvs_args_seen once = { 0 };
	int ret;

	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (strcmp(a, "--gpu") && strcmp(a, "--count") && strcmp(a, "--timeout")) {
			return nvs_arg_invalid(argv[0], a, "--gpu= --count= --timeout=");
		} else if (!v) {
			return out_usage(argv[0], "Missing value for `%s'", a);
		} else if (nvs_arg_twice(&once, argv[0], a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "--gpu")) {
			if (!nvs_gpu_spec_ok(v))
				return out_usage(argv[0], "Invalid --gpu (gpuN, N or a PCI bus id): `%s'", v);
			gpu = argv[++i];
		} else if (!strcmp(a, "--count")) {
			if (nvs_parse_u32(v, 1, UINT32_MAX, &count) < 0)
				return out_usage(argv[0], "Invalid --count (a positive number): `%s'", v);
			++i;
		} else {
			if (nvs_parse_duration_ms(v, 1, 7ULL * 24 * 3600 * 1000, &timeout_ms) < 0)
				return out_usage(argv[0], "Invalid --timeout (1 ms to 7 days, e.g. 30, 1.5, 500ms, 2m): `%s'", v);
			++i;
		}
	}

	ret = nvs_cli_open(&c, false, gpu);
	if (ret)
		goto cleanup;
	if (c.sel)
		memcpy(busid, c.sel->busid, sizeof(busid));
	ret = NVS_EX_FAIL;
	if (nvs_events_subscribe(c.h) < 0) {
		ret = out_fail(nvs_exit_for_errno(errno), "Unable to subscribe to events: %s", nvs_last_error(c.h));
		goto cleanup;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	out_note("Listening for events");
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
		if (nvs_event_recv(c.h, &ev, wait) < 0) {
			if (errno == ETIMEDOUT || errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				out_note("%s", nvs_last_error(c.h));
				lost = true;
				continue;
			}
			/* a JSON consumer gets the failure as the stream's last document */
			ret = out_fail(NVS_EX_FAIL, "Unable to receive events: %s", nvs_last_error(c.h));
			goto cleanup;
		}
		if (busid[0] && strcmp(ev.busid, busid))
			continue;
		show_event(&ev);
		++seen;
	}
	if (count && seen < count && !stop) {
		ret = out_fail(NVS_EX_FAIL, "Timed out with %u of %u events", seen, count);
		goto cleanup;
	}
	ret = lost ? NVS_EX_LOST : NVS_EX_OK;

cleanup:
	nvs_cli_close(&c);
	return ret;
}
