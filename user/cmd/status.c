// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "libnvsidecar.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/out.h"
#include "common/color.h"

/* Exit codes shared by status, thermal, set and events (see --help). */

static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s [--json]\n\n", PROG_NAME, name);
	fprintf(f, "Shows the loaded module, every GPU it watches, its status, sample rate\n"
		   "and a summary of its sensors.\n\n"
		   "  --json   one JSON document instead of text\n\n"
		   "Exit codes: 0 success, 1 failure, 2 invalid arguments, 3 the module is\n"
		   "not loaded (its netlink family is missing).\n");
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

static void print_json(const char *modver, uint32_t famver,
		       const struct nvs_gpu_info *gpus, size_t n)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "module_version", modver[0] ? modver : NULL);
	json_uint(&j, "family_version", famver);
	json_str(&j, "tool_version", NVS_TOOL_VERSION);
	json_arr_open(&j, "gpus");
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];
		const struct nvs_sensor_info *hot;
		unsigned int valid, alarms = 0;

		hot = hottest(g, &valid);
		for (unsigned int k = 0; k < g->nsensors; ++k)
			alarms += g->sensors[k].alarm;
		json_obj_open(&j, NULL);
		json_uint(&j, "index", g->index);
		json_str(&j, "busid", g->busid);
		json_str(&j, "chip", g->chip);
		json_str(&j, "name", g->name);
		json_str(&j, "status", nvs_status_name(g->status));
		json_str(&j, "reason", g->reason[0] ? g->reason : NULL);
		json_bool(&j, "simulated", g->flags & NVS_GPU_F_SIMULATED);
		json_bool(&j, "driver_bound", g->flags & NVS_GPU_F_DRIVER_BOUND);
		json_uint(&j, "sample_hz", g->sample_hz);
		json_uint(&j, "samples", g->samples);
		json_uint(&j, "unavailable", g->unavailable);
		json_uint(&j, "crossings", g->crossings);
		json_uint(&j, "sensors", g->nsensors);
		json_uint(&j, "sensors_valid", valid);
		json_uint(&j, "alarms", alarms);
		if (hot) {
			json_str(&j, "hottest", hot->label);
			json_int(&j, "hottest_mc", hot->mc);
		} else {
			json_null(&j, "hottest");
			json_null(&j, "hottest_mc");
		}
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

static void print_human(const char *modver, uint32_t famver,
			const struct nvs_gpu_info *gpus, size_t n)
{
	bool c = want_color();
	const char *bold = c ? "\e[1m" : "", *red = c ? "\e[1;31m" : "",
		   *green = c ? "\e[32m" : "", *yellow = c ? "\e[33m" : "", *off = c ? "\e[0m" : "";
	char a[16], b[16];

	printf("%smodule%s: nvsidecar %s, netlink family version %u, tool %s\n", bold, off,
	       modver[0] ? modver : "(version unknown)", famver, NVS_TOOL_VERSION);
	if (!n)
		printf("No supported GPU found\n");
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];
		const struct nvs_sensor_info *hot;
		unsigned int valid;

		hot = hottest(g, &valid);
		printf("\n%sgpu%u%s: %s  %04x:%04x  %s  %s%s\n", bold, g->index, off, g->busid,
		       g->vendor, g->device, g->chip, g->name,
		       g->flags & NVS_GPU_F_SIMULATED ? " (simulated)" : "");
		printf("  status: %s%s%s%s%s%s\n", g->status == NVS_STATUS_OK ? green : yellow,
		       nvs_status_name(g->status), off, g->reason[0] ? " (" : "", g->reason,
		       g->reason[0] ? ")" : "");
		if (g->sample_hz)
			printf("  sampling: %u Hz, %llu samples, %llu unavailable\n", g->sample_hz,
			       (unsigned long long)g->samples, (unsigned long long)g->unavailable);
		else
			printf("  sampling: on demand, %llu samples, %llu unavailable\n",
			       (unsigned long long)g->samples, (unsigned long long)g->unavailable);
		printf("  sensors: %u of %u valid", valid, g->nsensors);
		if (hot)
			printf(", hottest %s %s °C%s%s%s", hot->label, nvs_format_mc(a, sizeof(a), hot->mc),
			       hot->has_peak ? " (peak " : "",
			       hot->has_peak ? nvs_format_mc(b, sizeof(b), hot->peak) : "",
			       hot->has_peak ? " °C)" : "");
		printf("\n  thresholds: %llu crossings", (unsigned long long)g->crossings);
		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];

			if (s->has_max)
				printf(", %s%s > %s °C%s%s", s->alarm ? red : "", s->label,
				       nvs_format_mc(a, sizeof(a), s->max), s->alarm ? " ALARM" : "",
				       s->alarm ? off : "");
		}
		printf("\n");
	}
}

int status_main(int argc, const char *argv[])
{
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_handle *h = NULL;
	char modver[64] = "";
	bool json = false;
	size_t n = 0;
	int ret = NVS_EX_FAIL;

	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else {
			fprintf(stderr, "Unknown argument: `%s'\n", argv[i]);
			show_usage(stderr, argv[0]);
			return NVS_EX_USAGE;
		}
	}

	if (nvs_open(&h) < 0) {
		fprintf(stderr, "%s\n", nvs_last_error(NULL));
		ret = errno == ENOENT ? NVS_EX_MISSING : NVS_EX_FAIL;
		goto cleanup;
	}
	if (nvs_gpu_list(h, &gpus, &n) < 0) {
		fprintf(stderr, "Unable to list GPUs: %s\n", nvs_last_error(h));
		goto cleanup;
	}
	nvs_module_version(modver, sizeof(modver));
	if (json)
		print_json(modver, nvs_family_version(h), gpus, n);
	else
		print_human(modver, nvs_family_version(h), gpus, n);
	ret = fflush(stdout) ? NVS_EX_FAIL : NVS_EX_OK;

cleanup:
	free(gpus);
	nvs_close(h);
	return ret;
}
