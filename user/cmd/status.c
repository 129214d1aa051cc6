// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/gpu.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/format.h"
#include "libnvsidecar.h"

static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s [--json]\n\n", PROG_NAME, name);
	fprintf(f, "Shows the loaded module, every GPU it watches, its status, sample rate\n"
		   "and a summary of its sensors.\n\n"
		   "  --json   one JSON document instead of text\n\n"
		   "Exit codes: 0 success, 1 failure, 2 invalid arguments, 3 the module is\n"
		   "not loaded (its netlink family is missing); nvsidecar(8) has the table.\n");
}

static const struct nvs_sensor_info *hottest(const struct nvs_gpu_info *g, unsigned int *valid)
{
	const struct nvs_sensor_info *best = NULL;

	*valid = 0;
	for (unsigned int i = 0; i < g->nsensors; ++i) {
		const struct nvs_sensor_info *s = &g->sensors[i];

		if (!s->valid)
			continue;
		++*valid;
		if (!best || s->mc > best->mc)
			best = s;
	}
	return best;
}

static void show(const char *modver, uint32_t famver, const struct nvs_gpu_info *gpus, size_t n)
{
	char a[16], b[16];

	out_text("%smodule%s: nvsidecar ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "module_version", "%s", modver[0] ? modver : NULL);
	out_text("%s", modver[0] ? "" : "(version unknown)");
	out_uint(OUT_ANY, "family_version", ", netlink family version %llu", famver);
	out_str(OUT_ANY, "tool_version", ", tool %s\n", NVS_TOOL_VERSION);
	if (!n)
		out_text("No supported GPU found\n");
	out_arr(OUT_JSON, "gpus");
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];
		const struct nvs_sensor_info *hot;
		unsigned int valid, alarms = 0;

		hot = hottest(g, &valid);
		for (unsigned int k = 0; k < g->nsensors; ++k)
			alarms += g->sensors[k].alarm;
		out_obj(OUT_JSON, NULL);
		out_text("\n%s", out_cfg(OUT_BOLD));
		out_uint(OUT_ANY, "index", "gpu%llu", g->index);
		out_text("%s: ", out_cfg(OUT_PLAIN));
		out_str(OUT_ANY, "busid", "%s", g->busid);
		out_text("  %04x:%04x  ", g->vendor, g->device);
		out_str(OUT_ANY, "chip", "%s  ", g->chip);
		out_str(OUT_ANY, "name", "%s", g->name);
		out_bool(OUT_JSON, "simulated", NULL, g->flags & NVS_GPU_F_SIMULATED);
		out_bool(OUT_JSON, "driver_bound", NULL, g->flags & NVS_GPU_F_DRIVER_BOUND);
		out_text("%s\n", g->flags & NVS_GPU_F_SIMULATED ? " (simulated)" : "");
		out_cstr(OUT_ANY, g->status == NVS_STATUS_OK ? OUT_GOOD : OUT_WARN, "status", "  status: %s",
			 nvs_status_name(g->status));
		out_str(OUT_ANY, "reason", g->reason[0] ? " (%s)" : NULL, g->reason[0] ? g->reason : NULL);
		out_text("\n");
		out_uint(OUT_JSON, "sample_hz", NULL, g->sample_hz);
		if (g->sample_hz)
			out_text("  sampling: %u Hz, ", g->sample_hz);
		else
			out_text("  sampling: on demand, ");
		out_uint(OUT_ANY, "samples", "%llu samples, ", g->samples);
		out_uint(OUT_ANY, "unavailable", "%llu unavailable\n", g->unavailable);
		out_uint(OUT_JSON, "crossings", NULL, g->crossings);
		out_uint(OUT_JSON, "sensors", NULL, g->nsensors);
		out_uint(OUT_ANY, "sensors_valid", "  sensors: %llu", valid);
		out_text(" of %u valid", g->nsensors);
		out_uint(OUT_JSON, "alarms", NULL, alarms);
		if (hot) {
			out_str(OUT_ANY, "hottest", ", hottest %s", hot->label);
			out_int(OUT_JSON, "hottest_mc", NULL, hot->mc);
			out_text(" %s °C", nvs_format_mc(a, sizeof(a), hot->mc));
			if (hot->has_peak)
				out_text(" (peak %s °C)", nvs_format_mc(b, sizeof(b), hot->peak));
		} else {
			out_null("hottest");
			out_null("hottest_mc");
		}
		out_text("\n  thresholds: %llu crossings", (unsigned long long)g->crossings);
		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];

			if (!s->has_max)
				continue;
			out_text(", %s", s->alarm ? out_cfg(OUT_ALARM) : "");
			out_str(OUT_TEXT, NULL, "%s", s->label);
			out_text(" > %s °C%s%s", nvs_format_mc(a, sizeof(a), s->max), s->alarm ? " ALARM" : "",
				 s->alarm ? out_cfg(OUT_PLAIN) : "");
		}
		out_text("\n");
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
}

int status_main(int argc, const char *argv[])
{
	struct nvs_cli c;
	char modver[64] = "";
	int ret;

	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(argv[i], "--json")) {
			out_set_json(true);
		} else {
			return nvs_arg_invalid(argv[0], argv[i], "");
		}
	}
	ret = nvs_cli_open(&c, true, NULL);
	if (!ret) {
		nvs_module_version(modver, sizeof(modver));
		out_begin(true);
		show(modver, nvs_family_version(c.h), c.gpus, c.n);
		ret = out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
	}
	nvs_cli_close(&c);
	return ret;
}
