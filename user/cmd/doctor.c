// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar doctor: the node's verdict. Every layer's check (check/doctor*.c),
 * one line each with what to do, or one line in all (--brief) for Slurm,
 * NHC and node-problem-detector, or JSON; node_exporter's textfile with
 * --textfile. Settings come from /etc/nvsidecar/doctor.conf, with the same
 * names as the options, which win.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/doctor.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cli/prometheus.h"
#include "cmd/subcommands.h"
#include "lib/env.h"
#include "lib/exit.h"
#include "lib/io.h"
#include "sys/pci.h"

static const enum out_color colour[] = {
	[CK_OK] = OUT_GOOD, [CK_WARN] = OUT_WARN, [CK_FAIL] = OUT_ALARM, [CK_SKIP] = OUT_DIM,
};
static const char *const mode_name[] = { "default", "quick", "full" };

static void show(const struct nvs_checks *c, const struct nvs_doctor_opts *o, const size_t counts[4], int ret)
{
	out_str(OUT_JSON, "tool_version", NULL, NVS_TOOL_VERSION);
	out_bool(OUT_JSON, "ok", NULL, !ret);
	out_int(OUT_JSON, "exit", NULL, ret);
	out_bool(OUT_JSON, "healthy", NULL, !ret);
	out_bool(OUT_JSON, "strict", NULL, o->strict);
	out_str(OUT_JSON, "mode", NULL, mode_name[o->mode]);
	out_double(OUT_JSON, "duration_seconds", NULL, c->seconds, 6);
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
	out_arr(OUT_JSON, "gpus");
	for (size_t i = 0; i < c->ngpus; ++i) {
		const struct nvs_doctor_gpu *g = &c->gpus[i];

		out_obj(OUT_JSON, NULL);
		out_uint(OUT_JSON, "index", NULL, g->index);
		out_str(OUT_JSON, "busid", NULL, g->busid);
		out_str(OUT_JSON, "model", NULL, g->model);
		out_str(OUT_JSON, "status", NULL, g->status);
		out_str(OUT_JSON, "hwmon_chip", NULL, g->hwmon_chip);
		if (g->driver_temp_ok)
			out_uint(OUT_JSON, "driver_temperature_c", NULL, g->driver_temp);
		else
			out_null("driver_temperature_c");
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_text("%zu ok, %zu warning(s), %zu failed, %zu skipped: %s\n", counts[CK_OK], counts[CK_WARN],
		 counts[CK_FAIL], counts[CK_SKIP], ret ? "UNHEALTHY" : "healthy");
}

/*
 * --brief: one line, as node-problem-detector's custom plugins and Slurm
 * drain reasons want it: "OK: ..." or "FAIL: check: message (+N more)".
 * (Nagios takes its line and exit codes from nvsidecar-healthcheck --nagios.)
 */
static void show_brief(const struct nvs_checks *c, const struct nvs_doctor_opts *o, const size_t counts[4], int ret)
{
	const struct nvs_check *k = nvs_doctor_first(c, o->strict);
	size_t bad = counts[CK_FAIL] + (o->strict ? counts[CK_WARN] : 0);

	if (!ret || !k) {
		out_text("OK: %zu checks, %zu warning(s), %zu skipped (%s mode, %.3f s)\n", c->n, counts[CK_WARN],
			 counts[CK_SKIP], mode_name[o->mode], c->seconds);
		return;
	}
	out_text("%s: ", k->res == CK_FAIL ? "FAIL" : "WARN");
	out_safe(k->name);
	out_text(": ");
	out_safe(k->msg);
	if (bad > 1)
		out_text(" (+%zu more)", bad - 1);
	out_text("\n");
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--quick | --full] [--json | --brief] [--strict | --no-strict]\n"
		"          [--config FILE]"
		" [--expect-gpus N] [--limit SENSOR:C]... [--driver-version VER]\n"
		"          [--patched DIR] [--nvml LIB] [--lib LIB] [--textfile PATH]\n"
		"          [--pci-dump FILE] [--gpu-ids VID:DID[,...]]\n"
		"\n"
		"The node's verdict: every layer checked and reported separately, one line\n"
		"per check (OK, WARN, FAIL or SKIP) with the reason and what to do:\n"
		"  module    loaded, its version against this tool's (%s), the netlink\n"
		"            family, the DKMS build for the running kernel, the copy in the\n"
		"            initramfs, Secure Boot when it is not loaded\n"
		"  gpu       the count against expect-gpus (none is not healthy when a count\n"
		"            is expected), each GPU's status, that every sensor has a\n"
		"            reading, sensor limits, the hidden hotspot against the driver's\n"
		"  driver    the NVIDIA kernel driver, its version against driver-version\n"
		"            and libcuda's, NVML and each GPU's driver temperature\n"
		"  libcuda   the installed libcuda and the patched copy (stale?)\n"
		"  gdr       libcuda's dma-buf gate and nvidia-peermem, separately\n"
		"  topology  the `nvsidecar topo' findings (Resizable BAR, ACS, link, IOMMU)\n"
		"  full      with --full: short verified P2P copies and an RDMA loopback\n"
		"A layer that cannot run is skipped with the reason; the others still run.\n"
		"Slurm's HealthCheckProgram is nvsidecar-healthcheck, which runs\n"
		"`doctor --quick --brief' and drains the node itself (nvsidecar(8)).\n"
		"\n"
		"  --quick           only the module's state (module, gpu): no GPU register,\n"
		"                    NVML, libcuda or PCI access; well under a second\n"
		"  --full            also `p2p' and `rdma --loopback' runs, 60 s at most each\n"
		"  --json            one JSON document instead of text\n"
		"  --brief           one line: \"OK: ...\" or \"FAIL: CHECK: MESSAGE\" (Slurm, NHC,\n"
		"                    node-problem-detector)\n"
		"  --strict          warnings fail too (exit 1)\n"
		"  --no-strict       warnings do not fail, whatever `strict = yes' in the\n"
		"                    settings file says\n"
		"  --config FILE     settings file (default %s, if it exists);\n"
		"                    its keys are the long options below, `key = value'\n"
		"  --expect-gpus N   GPUs this node must have\n"
		"  --limit SENSOR:C  fail when SENSOR (a label or glob: hotspot, ch0, mem*) is\n"
		"                    over C °C; repeatable\n"
		"  --driver-version VER  the NVIDIA driver version this node must run\n"
		"  --patched DIR     the copy `nvsidecar libcuda patch --out DIR' wrote\n"
		"  --nvml LIB        NVML to load (default libnvidia-ml.so.1)\n"
		"  --lib LIB         libcuda to judge (default: the one the loader picks)\n"
		"  --textfile PATH   also write node_exporter's textfile (a directory gets\n"
		"                    nvsidecar.prom), atomically; - : standard output, after\n"
		"                    the report (not with --json)\n"
		"  --pci-dump FILE   judge an `lspci -xxxx' dump instead of this machine\n"
		"  --gpu-ids LIST    also treat these vendor:device ids as GPUs (tests)\n"
		"\n"
		"Exit status (the doctor's own; node-problem-detector reads it as it is):\n"
		"0 healthy (warnings allowed unless --strict), 1 unhealthy: a check failed\n"
		"(or warned, with --strict), drain the node; 2 unknown: usage or settings\n"
		"error, or the textfile could not be written.\n"
		"These are not Nagios plugin codes (Nagios reads 1 as WARNING, 2 as\n"
		"CRITICAL, 3 as UNKNOWN): for Nagios and Icinga run\n"
		"`nvsidecar-healthcheck --nagios', which maps 0 to OK (0), 1 and a doctor\n"
		"that timed out or is missing to CRITICAL (2), and 2 to UNKNOWN (3).\n",
		PROG_NAME, prog, NVS_TOOL_VERSION, NVS_DOCTOR_CONF);
}

/* An argument doctor does not take; its options are doctor.conf's keys too. */
static int refuse(const char *sub, const char *a)
{
	const char *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
	char key[64], opts[512];

	if (!eq || (size_t)(eq - a) >= sizeof(key))
		return nvs_arg_refuse(sub, a, NVS_ARG_UNKNOWN);
	snprintf(key, sizeof(key), "%.*s", (int)(eq - a - 2), a + 2);
	if (nvs_doctor_key_known(key))
		return nvs_arg_refuse(sub, a, nvs_doctor_key_has_value(key) ? NVS_ARG_VALUE : NVS_ARG_FLAG);
	return nvs_arg_invalid(sub, a, nvs_doctor_opts_list(opts, sizeof(opts), true));
}

int doctor_main(int argc, const char *argv[])
{
	struct nvs_doctor_opts *o = malloc(sizeof(*o));
	const char *config = NULL;
	bool brief = false, config_given = false, strict_set = false;
	struct nvs_args_seen seen = { 0 };
	char err[4600], self[4096], dump_name[64];
	struct nvs_checks c;
	size_t counts[4] = { 0 };
	ssize_t n;
	int ret;

	if (!o)
		return out_fail(NVS_EX_USAGE, "Unable to allocate memory");
	nvs_doctor_opts_init(o);
	/* The settings file first, so that the command line overrides it. */
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			free(o);
			return NVS_EX_OK;
		}
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				free(o);
				return out_usage(argv[0], "Missing value for `--config'");
			}
			if (nvs_arg_twice(&seen, argv[0], argv[i])) {
				free(o);
				return NVS_EX_USAGE;
			}
			config = argv[++i];
			config_given = true;
		}
	}
	ret = nvs_doctor_conf_load(o, config ? config : NVS_DOCTOR_CONF, err, sizeof(err));
	if (ret && (ret != -ENOENT || config_given)) {
		free(o);
		/* a file's fault, not the command line's: no pointer to --help */
		return out_fail(ret == -EACCES || ret == -EPERM ? NVS_EX_PERM : NVS_EX_USAGE, "%s", err);
	}
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (!strcmp(a, "--brief")) {
			brief = true;
		} else if (!strcmp(a, "--quick") || !strcmp(a, "--full")) {
			enum nvs_doctor_mode m = a[2] == 'q' ? NVS_DOCTOR_QUICK : NVS_DOCTOR_FULL;

			if (o->mode != NVS_DOCTOR_DEFAULT && o->mode != m) {
				free(o);
				return out_usage(argv[0], "--quick and --full exclude each other");
			}
			/*
			 * A repeated --full is refused as a repeated option is
			 * (admin review L6). --quick and --brief may repeat:
			 * the Slurm health checks pass them before the admin's
			 * own arguments, which must not turn into exit 2.
			 */
			if (m == NVS_DOCTOR_FULL && nvs_arg_twice(&seen, argv[0], a)) {
				free(o);
				return NVS_EX_USAGE;
			}
			o->mode = m;
		} else if (!strcmp(a, "--strict") || !strcmp(a, "--no-strict")) {
			bool strict = a[2] == 's';

			/* the command line wins over doctor.conf's strict, so both here are a typo */
			if (strict_set && o->strict != strict) {
				free(o);
				return out_usage(argv[0], "--strict and --no-strict exclude each other");
			}
			if (nvs_arg_twice(&seen, argv[0], a)) {
				free(o);
				return NVS_EX_USAGE;
			}
			strict_set = true;
			o->strict = strict;
		} else if (!strcmp(a, "--config")) {
			i++;	/* read above */
		} else if (!strcmp(a, "--pci-dump")) {
			if (i + 1 >= argc) {
				free(o);
				return out_usage(argv[0], "Missing value for `%s'", a);
			}
			if (nvs_arg_twice(&seen, argv[0], a)) {
				free(o);
				return NVS_EX_USAGE;
			}
			o->pci_dump = argv[++i];
		} else if (!strncmp(a, "--", 2) && nvs_doctor_key_known(a + 2)) {
			const char *key = a + 2;
			const char *val = NULL;

			if (nvs_doctor_key_has_value(key)) {
				if (i + 1 >= argc) {
					free(o);
					return out_usage(argv[0], "Missing value for `%s'", a);
				}
				val = argv[++i];
			}
			/* --limit is repeatable, one per sensor; the rest are given once */
			if (strcmp(key, "limit") && nvs_arg_twice(&seen, argv[0], a)) {
				free(o);
				return NVS_EX_USAGE;
			}
			ret = nvs_doctor_set(o, key, val, a, err, sizeof(err));
			if (ret) {
				free(o);
				return out_usage(argv[0], "%s", err);
			}
		} else {
			free(o);
			return refuse(argv[0], a);
		}
	}
	if (brief && out_json()) {
		free(o);
		return out_usage(argv[0], "--brief and --json exclude each other");
	}
	/*
	 * A --pci-dump that names nothing is the admin's typo, not an
	 * unhealthy node: exit 2 before any check runs, as topo does, so that
	 * Slurm never drains a node for it. Only stat() and access() here:
	 * the dump is read once, below, so a pipe still works.
	 */
	if (o->pci_dump && strcmp(o->pci_dump, "-")) {
		struct stat st;
		int e = 0;

		if (stat(o->pci_dump, &st) < 0)
			e = errno;
		else if (S_ISDIR(st.st_mode))
			e = EISDIR;
		else if (faccessat(AT_FDCWD, o->pci_dump, R_OK, AT_EACCESS) < 0)
			e = errno;
		if (e) {
			char why[PATH_MAX + 96];

			nvs_open_error(o->pci_dump, e, why, sizeof(why));
			ret = out_fail(nvs_exit_for_path(e), "Unable to open `%s' (the --pci-dump given): %s",
				       o->pci_dump, why);
			free(o);
			return ret;
		}
	}
	/*
	 * --quick reads only the module and the GPUs: these would be ignored
	 * without a word (review T3-20). Only the command line is judged: the
	 * same doctor.conf serves --quick and full runs.
	 */
	if (o->mode == NVS_DOCTOR_QUICK) {
		static const char *const full_only[] = { "--pci-dump", "--lib", "--nvml", "--patched",
							 "--driver-version", "--gpu-ids" };

		for (size_t k = 0; k < sizeof(full_only) / sizeof(*full_only); ++k)
			if (nvs_arg_given(&seen, full_only[k])) {
				free(o);
				return out_usage(argv[0], "--quick and %s exclude each other: --quick checks only the module and the GPUs, so %s would be ignored; drop one of them",
						 full_only[k], full_only[k]);
			}
	}
	/* both on standard output would be neither valid JSON nor a textfile */
	if (out_json() && !strcmp(o->textfile, "-")) {
		free(o);
		return out_usage(argv[0], "--textfile - (standard output) and --json exclude each other; pass a file or directory");
	}
	/*
	 * Read and judged now, once (a pipe has no second reading): a FIFO
	 * that reads as empty, or a file that is no lspci output, is the
	 * admin's input too, and exits 2 like a missing one, never a node
	 * FAIL (admin review L5). The checks read the copy kept in memory.
	 */
	if (o->pci_dump) {
		int fd = nvs_pci_dump_load(o->pci_dump, dump_name, sizeof(dump_name), err, sizeof(err));

		if (fd < 0) {
			ret = out_fail(nvs_exit_for_path(-fd) == NVS_EX_PERM ? NVS_EX_PERM : NVS_EX_USAGE, "%s", err);
			free(o);
			return ret;
		}
		o->pci_dump = dump_name;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		o->self = self;
	}
	o->root = nvs_env_doctor_root();
	/* A dead pipe reader (head, a killed Slurm script) must not kill us mid-report. */
	signal(SIGPIPE, SIG_IGN);

	if (nvs_doctor_run(o, &c)) {
		free(o);
		return out_fail(NVS_EX_USAGE, "Unable to record the checks: %s", strerror(ENOMEM));
	}
	for (size_t i = 0; i < c.n; ++i)
		counts[c.v[i].res]++;
	ret = counts[CK_FAIL] || (o->strict && counts[CK_WARN]) ? NVS_EX_FAIL : NVS_EX_OK;
	out_begin(true);
	if (brief)
		show_brief(&c, o, counts, ret);
	else
		show(&c, o, counts, ret);
	out_end();
	if (o->textfile[0] && nvs_doctor_textfile(&c, o, !ret, o->textfile, err, sizeof(err))) {
		out_note("%s", err);
		ret = NVS_EX_USAGE;
	}
	nvs_checks_free(&c);
	free(o);
	return ret;
}
