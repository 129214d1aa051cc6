// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/gpu.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s GPU [sample-hz N] [mem-hz N] [threshold SENSOR C | threshold SENSOR clear]\n"
		   "       %*s [reset-peaks] [--json]\n\n", PROG_NAME, name,
		(int)(strlen(PROG_NAME) + strlen(name) + 4), "");
	fprintf(f,
		"Changes the settings of one GPU (gpuN, N or a PCI bus id), all at once or\n"
		"nothing. Needs root (CAP_NET_ADMIN); a rate above the module's default (in\n"
		"/sys/module/nvsidecar/parameters/) reads more registers and needs\n"
		"CAP_SYS_ADMIN too.\n\n"
		"  sample-hz N           samples per second, 0 (read on demand) to %u\n"
		"  mem-hz N              memory-module passes per second, 1 to %u\n"
		"  threshold SENSOR C    alarm and event when SENSOR (a label such as hotspot,\n"
		"                        ch0 or mem3) exceeds C °C (%d to %d, e.g. 95.5)\n"
		"  threshold SENSOR clear  removes that threshold\n"
		"  reset-peaks           restarts the peak and low history of every sensor\n"
		"  --json                one JSON document: the GPU and what was set\n\n"
		"Exit codes: 0 success, 1 failure, 2 invalid arguments, 3 the module is\n"
		"not loaded or no such GPU, 4 permission denied (run as root); nvsidecar(8)\n"
		"has the table.\n",
		NVS_SAMPLE_HZ_MAX, NVS_MEM_HZ_MAX, NVS_THRESH_MIN_MC / 1000, NVS_THRESH_MAX_MC / 1000);
}

/* `sample-hz=50': the value is the next word, as for an option */
static int unknown_setting(const char *name, const char *a)
{
	const char *eq = strchr(a, '=');

	if (eq && eq > a)
		return nvs_arg_two_words(name, "Unknown setting: `%s': write the setting and its value as two words, `%s'",
					 a);
	return out_usage(name, "Unknown setting: `%s'", a);
}

/*
 * Every argument is checked before the kernel is asked anything. Returns 0,
 * or NVS_EX_USAGE with the message said.
 */
static int parse_args(int argc, const char *argv[], struct nvs_set_req *req, struct nvs_set_ext *ext)
{
	struct nvs_args_seen seen = { 0 };
	const char *name = argv[0];

	memset(req, 0, sizeof(*req));
	memset(ext, 0, sizeof(*ext));
	/* The dispatcher has seen --json already (out_set_json). */
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--json")) {
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i - 1) * sizeof(*argv));
			argc--;
			i--;
		}
	}
	if (argc < 3)
		return out_usage(name, argc < 2 ? "Missing the GPU" : "Nothing to change");
	if (!nvs_gpu_spec_ok(argv[1]))
		return out_usage(name, "Invalid GPU (gpuN, N or a PCI bus id such as 0000:01:00.0): `%s'", argv[1]);
	for (int i = 2; i < argc; ++i) {
		const char *a = argv[i];

		if ((!strcmp(a, "sample-hz") || !strcmp(a, "mem-hz")) && i + 1 < argc &&
		    nvs_arg_twice(&seen, name, a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "sample-hz") && i + 1 < argc) {
			if (nvs_parse_u32(argv[++i], 0, NVS_SAMPLE_HZ_MAX, &req->sample_hz) < 0)
				return out_usage(name, "Invalid sample rate (0 to %u): `%s'", NVS_SAMPLE_HZ_MAX, argv[i]);
			req->set_sample_hz = true;
		} else if (!strcmp(a, "mem-hz") && i + 1 < argc) {
			if (nvs_parse_u32(argv[++i], 1, NVS_MEM_HZ_MAX, &ext->mem_hz) < 0)
				return out_usage(name, "Invalid memory-sensor rate (1 to %u): `%s'", NVS_MEM_HZ_MAX, argv[i]);
			ext->set_mem_hz = true;
		} else if (!strcmp(a, "threshold") && i + 2 < argc) {
			const char *sensor = argv[++i], *val = argv[++i];

			if (req->thresh_sensor)
				return out_usage(name, "Only one threshold per command: run `%s set' once per sensor",
						 PROG_NAME);
			if (!*sensor || strlen(sensor) >= NVS_LABEL_LEN)
				return out_usage(name, "Invalid sensor label: `%s'", sensor);
			req->thresh_sensor = sensor;
			if (!strcmp(val, "clear")) {
				req->thresh_clear = true;
			} else if (nvs_parse_celsius(val, NVS_THRESH_MIN_MC, NVS_THRESH_MAX_MC,
						     &req->thresh_mc) < 0) {
				return out_usage(name, "Invalid threshold (%d to %d °C, or `clear'): `%s'",
						 NVS_THRESH_MIN_MC / 1000, NVS_THRESH_MAX_MC / 1000, val);
			}
		} else if (!strcmp(a, "reset-peaks")) {
			req->reset_peaks = true;
		} else if (!strcmp(a, "sample-hz") || !strcmp(a, "mem-hz") || !strcmp(a, "threshold")) {
			return out_usage(name, "Missing value for `%s'", a);
		} else if (!strncmp(a, "--", 2)) {
			return nvs_arg_invalid(name, a, "");
		} else {
			return unknown_setting(name, a);
		}
	}
	return 0;
}

/* What was set, for --json; text stays silent on success, like ip(8). */
static void show(const struct nvs_gpu_info *g, const struct nvs_set_req *req,
		 const struct nvs_set_ext *ext)
{
	out_begin(true);
	out_uint(OUT_JSON, "gpu", NULL, g->index);
	out_str(OUT_JSON, "busid", NULL, g->busid);
	if (req->set_sample_hz)
		out_uint(OUT_JSON, "sample_hz", NULL, req->sample_hz);
	if (ext->set_mem_hz)
		out_uint(OUT_JSON, "mem_hz", NULL, ext->mem_hz);
	if (req->thresh_sensor) {
		out_obj(OUT_JSON, "threshold");
		out_str(OUT_JSON, "sensor", NULL, req->thresh_sensor);
		if (req->thresh_clear)
			out_null("max_mc");
		else
			out_int(OUT_JSON, "max_mc", NULL, req->thresh_mc);
		out_obj_end(OUT_JSON);
	}
	out_bool(OUT_JSON, "reset_peaks", NULL, req->reset_peaks);
}

int set_main(int argc, const char *argv[])
{
	struct nvs_set_req req;
	struct nvs_set_ext ext;
	struct nvs_cli c = { 0 };
	int ret;

	/* --help anywhere (`set --json --help', `set 0 --help'): no value of set is `--help' */
	for (int i = 1; i < argc; ++i)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		}
	ret = parse_args(argc, argv, &req, &ext);
	if (ret)
		return ret;
	ret = nvs_cli_open(&c, false, argv[1]);
	if (ret)
		goto cleanup;
	req.gpu = c.sel->index;
	if (nvs_gpu_set_ext(c.h, &req, &ext) < 0) {
		int err = errno;

		ret = out_fail(err == EPERM || err == EACCES ? NVS_EX_PERM : NVS_EX_FAIL, "Unable to change gpu%u: %s",
			       req.gpu, nvs_last_error(c.h));
		if (err == ENOENT && req.thresh_sensor)
			out_note("Sensor labels of gpu%u: see `%s thermal --gpu %u'", req.gpu, PROG_NAME, req.gpu);
		goto cleanup;
	}
	ret = NVS_EX_OK;
	if (out_json()) {
		show(c.sel, &req, &ext);
		if (out_end() < 0)
			ret = NVS_EX_FAIL;
	}

cleanup:
	nvs_cli_close(&c);
	return ret;
}
