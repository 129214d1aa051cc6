// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar idle-fix: GPUs stuck at full utilisation with no process get a
 * CUDA context created and destroyed (check/idlefix.c). Run by
 * nvsidecar-idle-fix.timer every minute; fixes go to syslog (the journal).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/idlefix.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--threshold PCT] [--checks K] [--dry-run] [--state FILE]\n"
		"          [--timeout S] [--nvml LIB] [--lib LIB] [--json]\n"
		"\n"
		"After P2P use on patched drivers some GPUs stay at full utilisation and\n"
		"high power with no process left; creating a CUDA context on them and\n"
		"destroying it at once clears that. Each run reads every GPU once through\n"
		"NVML; a GPU at or above PCT%% utilisation with no compute or graphics\n"
		"process in K consecutive runs gets that context, in a child process.\n"
		"A GPU with a process, or one that drops below PCT%% in between, is left\n"
		"alone and counts from zero again. Fixes are logged to syslog (the\n"
		"journal) as nvsidecar-idle-fix; nvsidecar-idle-fix.timer runs it every\n"
		"minute.\n"
		"\n"
		"  --threshold PCT  utilisation that counts as stuck (1-100, default 90)\n"
		"  --checks K       consecutive runs before the fix (1-1000, default 3)\n"
		"  --dry-run        report what this run would do from the saved\n"
		"                   counts; writes nothing, creates no context\n"
		"  --state FILE     where the counts are kept between runs\n"
		"                   (default %s);\n"
		"                   a file there that is not a state file is\n"
		"                   refused (exit 2), never replaced\n"
		"  --timeout S      seconds the context may take (default 30)\n"
		"  --nvml LIB       NVML to load (default libnvidia-ml.so.1)\n"
		"  --lib LIB        libcuda to load (default libcuda.so.1)\n"
		"  --json           one JSON document\n"
		"\n"
		"Exit status: 0 done (nothing to fix, fixed, or --dry-run), 1 a fix\n"
		"failed or the state could not be saved (a full file system), 2 usage\n"
		"error, an unusable --nvml, a --state that is not a state file or is\n"
		"on a read-only file system, or another run holds the state, 3 no\n"
		"NVML (no NVIDIA driver) or NVML failed, 4 permission denied (the\n"
		"state file's directory: run as root or pass --state).\n",
		PROG_NAME, prog, NVS_IDLEFIX_STATE);
}

static bool number(const char *s, unsigned int lo, unsigned int hi, unsigned int *v)
{
	uint32_t n;

	if (nvs_parse_u32(s, lo, hi, &n))
		return false;
	*v = n;
	return true;
}

int idle_fix_main(int argc, const char *argv[])
{
	struct nvs_idlefix_opts o;
	struct nvs_idlefix_result r;
	char err[4600];
	struct nvs_args_seen seen = { 0 };
	int ret, failed = 0;

	nvs_idlefix_opts_init(&o);
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (!strcmp(a, "--dry-run")) {
			o.dry_run = true;
		} else if (!strcmp(a, "--threshold") || !strcmp(a, "--checks") || !strcmp(a, "--timeout") ||
			   !strcmp(a, "--state") || !strcmp(a, "--nvml") || !strcmp(a, "--lib")) {
			if (!v)
				return out_usage(argv[0], "Missing value for `%s'", a);
			if (nvs_arg_twice(&seen, argv[0], a))
				return NVS_EX_USAGE;
			i++;
			if (!strcmp(a, "--threshold") && !number(v, 1, 100, &o.threshold))
				return out_usage(argv[0], "Invalid --threshold `%s': a utilisation in %%, 1 to 100", v);
			if (!strcmp(a, "--checks") && !number(v, 1, 1000, &o.checks))
				return out_usage(argv[0], "Invalid --checks `%s': 1 to 1000 consecutive runs", v);
			if (!strcmp(a, "--timeout") && !number(v, 1, 3600, &o.timeout_s))
				return out_usage(argv[0], "Invalid --timeout `%s': 1 to 3600 seconds", v);
			if ((!strcmp(a, "--state") || !strcmp(a, "--nvml") || !strcmp(a, "--lib")) && !*v)
				return out_usage(argv[0], "Invalid %s: empty path", a);
			if (!strcmp(a, "--state"))
				o.state = v;
			else if (!strcmp(a, "--nvml"))
				o.nvml = v;
			else if (!strcmp(a, "--lib"))
				o.lib = v;
		} else {
			return nvs_arg_invalid(argv[0], a, "--dry-run --threshold= --checks= --timeout= --state= --nvml= --lib=");
		}
	}

	ret = nvs_idlefix_run(&o, &r, err, sizeof(err));
	if (ret && r.save_failed)	/* the work was done, its record could not be written */
		return out_fail(ret == -EACCES || ret == -EPERM ? NVS_EX_PERM : NVS_EX_FAIL, "%s", err);
	if ((ret == -ENOENT || ret == -ENOEXEC) && o.nvml)	/* the --nvml named is unusable */
		return out_fail(NVS_EX_USAGE, "%s", err);
	if (ret == -EACCES || ret == -EPERM)
		return out_fail(NVS_EX_PERM, "%s", err);
	if (ret == -ENOENT || ret == -ENOEXEC || ret == -EIO)
		return out_fail(NVS_EX_MISSING, "%s", err);
	if (ret)
		return out_fail(NVS_EX_USAGE, "%s", err);

	out_begin(true);
	out_bool(OUT_JSON, "dry_run", NULL, o.dry_run);
	out_uint(OUT_JSON, "threshold", NULL, o.threshold);
	out_uint(OUT_JSON, "checks", NULL, o.checks);
	out_arr(OUT_JSON, "gpus");
	for (size_t i = 0; i < r.n; ++i) {
		const struct nvs_idlefix_gpu *g = &r.v[i];

		out_obj(OUT_JSON, NULL);
		out_str(OUT_ANY, "busid", "%s", g->busid);
		out_uint(OUT_ANY, "utilization", "  %3u%%", g->util);
		out_uint(OUT_ANY, "processes", "  %u process(es)", g->procs);
		if (g->power_ok)
			out_double(OUT_ANY, "power_w", "  %.0f W", g->power_mw / 1000.0, 1);
		else
			out_null("power_w");
		out_str(OUT_ANY, "action", "  %s", nvs_idlefix_action_name(g->action));
		out_uint(OUT_JSON, "count", NULL, g->count);
		switch (g->action) {
		case NVS_IF_COUNTING:
			out_text(" %u/%u", g->count, o.checks);
			break;
		case NVS_IF_BUSY:
			out_text(": left alone");
			break;
		case NVS_IF_WOULD_FIX:
			out_text(": would create and destroy a CUDA context");
			break;
		case NVS_IF_FIXED:
			out_text(": created and destroyed a CUDA context");
			break;
		default:
			break;
		}
		out_str(OUT_ANY, "message", g->msg[0] ? ": %s" : NULL, g->msg[0] ? g->msg : NULL);
		out_text("\n");
		out_obj_end(OUT_JSON);
		failed += g->action == NVS_IF_FIX_FAILED;
	}
	out_arr_end(OUT_JSON);
	if (!r.n)
		out_text("NVML lists no GPU\n");
	out_end();
	nvs_idlefix_free(&r);
	return failed ? NVS_EX_FAIL : NVS_EX_OK;
}
