// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar doctor: every layer's check (check/doctor.c), one line each,
 * with what to do; exit status fit for a node health check.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/doctor.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/out.h"
#include "sys/pci.h"

#define MAX_IDS 16

static const enum out_color colour[] = {
	[CK_OK] = OUT_GOOD, [CK_WARN] = OUT_WARN, [CK_FAIL] = OUT_ALARM, [CK_SKIP] = OUT_DIM,
};

static void show(const struct nvs_checks *c, const size_t counts[4], int ret, bool strict)
{
	out_str(OUT_JSON, "tool_version", NULL, NVS_TOOL_VERSION);
	out_bool(OUT_JSON, "ok", NULL, !ret);
	out_int(OUT_JSON, "exit", NULL, ret);
	out_bool(OUT_JSON, "healthy", NULL, !ret);
	out_bool(OUT_JSON, "strict", NULL, strict);
	out_obj(OUT_JSON, "counts");
	out_uint(OUT_JSON, "ok", NULL, counts[CK_OK]);
	out_uint(OUT_JSON, "warn", NULL, counts[CK_WARN]);
	out_uint(OUT_JSON, "fail", NULL, counts[CK_FAIL]);
	out_uint(OUT_JSON, "skip", NULL, counts[CK_SKIP]);
	out_obj_end(OUT_JSON);
	out_arr(OUT_JSON, "checks");
	for (size_t i = 0; i < c->n; ++i) {
		const struct nvs_check *k = &c->v[i];

		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "layer", NULL, k->layer);
		out_str(OUT_JSON, "name", NULL, k->name);
		out_cstr(OUT_ANY, colour[k->res], "result", "%-4s", nvs_check_result_name(k->res));
		out_str(OUT_TEXT, NULL, " %-8s", k->layer);
		out_str(OUT_TEXT, NULL, " %s", k->name);
		out_str(OUT_ANY, "message", ": %s\n", k->msg);
		out_str(OUT_JSON, "fix", NULL, k->fix[0] ? k->fix : NULL);
		if (k->fix[0] && (k->res == CK_WARN || k->res == CK_FAIL))
			out_str(OUT_TEXT, NULL, "              fix: %s\n", k->fix);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_text("%zu ok, %zu warning(s), %zu failed, %zu skipped: %s\n", counts[CK_OK], counts[CK_WARN],
		 counts[CK_FAIL], counts[CK_SKIP], ret ? "UNHEALTHY" : "healthy");
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--json] [--strict] [--pci-dump FILE] [--gpu-ids VID:DID[,...]]\n"
		"          [--patched DIR]\n"
		"\n"
		"Checks every layer and reports each separately, one line per check\n"
		"(OK, WARN, FAIL or SKIP) with the reason and what to do:\n"
		"  module    /sys/module/nvsidecar, its version against this tool's (%s),\n"
		"            the generic netlink family\n"
		"  gpu       each GPU's status (ok, no-driver, asleep, unavailable, removed),\n"
		"            that every sensor has a reading, sensors over their threshold,\n"
		"            the hotspot reading\n"
		"  topology  the `nvsidecar topo' findings (Resizable BAR, ACS, link, IOMMU)\n"
		"  libcuda   with --patched: whether that patched copy is stale\n"
		"A layer that cannot run is skipped with the reason; the others still run.\n"
		"Fit for Slurm's HealthCheckProgram and the nvsidecar-doctor.timer unit.\n"
		"\n"
		"  --json            one JSON document instead of text\n"
		"  --strict          warnings fail too (exit 1)\n"
		"  --pci-dump FILE   judge an `lspci -xxxx' dump instead of this machine\n"
		"  --gpu-ids LIST    also treat these vendor:device ids as GPUs (tests)\n"
		"  --patched DIR     check the copy `nvsidecar libcuda patch --out DIR' wrote,\n"
		"                    by running `nvsidecar libcuda status' on it\n"
		"\n"
		"Exit status: 0 every check passed (warnings allowed unless --strict),\n"
		"1 a check failed (or warned, with --strict): drain the node, 2 usage error\n"
		"(nvsidecar(8) has the table).\n",
		PROG_NAME, prog, NVS_TOOL_VERSION);
}

int doctor_main(int argc, const char *argv[])
{
	struct nvs_pci_id ids[MAX_IDS] = { 0 };
	struct nvs_doctor_opts o = { .ids = ids };
	struct nvs_checks c;
	bool strict = false;
	size_t counts[4] = { 0 };
	int nids, ret;

	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (!strcmp(a, "--strict")) {
			strict = true;
		} else if (!v && (!strcmp(a, "--pci-dump") || !strcmp(a, "--patched") || !strcmp(a, "--gpu-ids"))) {
			return out_usage(argv[0], "Missing value for `%s'", a);
		} else if (!strcmp(a, "--pci-dump")) {
			o.pci_dump = argv[++i];
		} else if (!strcmp(a, "--patched")) {
			o.patched = argv[++i];
			if (!*o.patched)
				return out_usage(argv[0], "Invalid --patched: empty directory name");
		} else if (!strcmp(a, "--gpu-ids")) {
			nids = nvs_pci_parse_ids(argv[++i], ids, MAX_IDS);
			if (nids < 0)
				return out_usage(argv[0], "Invalid --gpu-ids (expected VID:DID[,VID:DID...]): `%s'",
						 argv[i]);
			o.nids = (size_t)nids;
		} else {
			return out_usage(argv[0], "Invalid argument: `%s'", a);
		}
	}
	/* A dead pipe reader (head, a killed Slurm script) must not kill us mid-report. */
	signal(SIGPIPE, SIG_IGN);

	if (nvs_doctor_run(&o, &c))
		return out_fail(NVS_EX_FAIL, "Unable to record the checks: %s", strerror(ENOMEM));
	for (size_t i = 0; i < c.n; ++i)
		counts[c.v[i].res]++;
	ret = counts[CK_FAIL] || (strict && counts[CK_WARN]) ? NVS_EX_FAIL : NVS_EX_OK;
	out_begin(true);
	show(&c, counts, ret, strict);
	out_end();
	nvs_checks_free(&c);
	return ret;
}
