// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's result for node_exporter's textfile collector, so that the
 * verdict reaches Prometheus beside the hwmon series of the same node
 * (docs/prometheus/: the alert rules and dashboard use these names):
 *
 *   nvsidecar_doctor_check_status{layer,check,status}   1 for the check's status
 *   nvsidecar_doctor_checks{status}                      checks per status
 *   nvsidecar_doctor_healthy                             1: exit status 0
 *   nvsidecar_doctor_last_run_timestamp_seconds, nvsidecar_doctor_duration_seconds
 *   nvsidecar_doctor_mode{mode}, nvsidecar_doctor_gpus, nvsidecar_doctor_expected_gpus
 *   nvsidecar_gpu_info{gpu,busid,model,status,chip}      chip: node_exporter's hwmon chip label
 *   nvsidecar_gpu_driver_temperature_celsius{gpu,busid,chip}   from NVML
 *
 * The file appears whole or not at all (lib/io.h: temporary file, fsync,
 * rename), so the collector never reads half a run.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/prometheus.h"
#include "lib/io.h"

static const char *const status_label[] = { "ok", "warn", "fail", "skip" };

/* A label value: backslash, double quote and newline escaped, as the exposition format wants. */
static void lv(FILE *f, const char *s)
{
	for (; *s; ++s) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void nvs_doctor_metrics(FILE *f, const struct nvs_checks *c, const struct nvs_doctor_opts *o, bool healthy)
{
	static const char *const mode[] = { "default", "quick", "full" };
	size_t counts[4] = { 0 };

	head(f, "nvsidecar_doctor_check_status", "Result of each nvsidecar doctor check: 1 for its status (ok, warn, fail, skip).");
	for (size_t i = 0; i < c->n; ++i) {
		counts[c->v[i].res]++;
		for (int s = CK_OK; s <= CK_SKIP; ++s) {
			fputs("nvsidecar_doctor_check_status{layer=\"", f);
			lv(f, c->v[i].layer);
			fputs("\",check=\"", f);
			lv(f, c->v[i].name);
			fprintf(f, "\",status=\"%s\"} %d\n", status_label[s], (int)c->v[i].res == s);
		}
	}
	head(f, "nvsidecar_doctor_checks", "Checks of the last nvsidecar doctor run, by status.");
	for (int s = CK_OK; s <= CK_SKIP; ++s)
		fprintf(f, "nvsidecar_doctor_checks{status=\"%s\"} %zu\n", status_label[s], counts[s]);
	head(f, "nvsidecar_doctor_healthy", "1 when the last nvsidecar doctor run found the node healthy (exit status 0).");
	fprintf(f, "nvsidecar_doctor_healthy %d\n", healthy);
	head(f, "nvsidecar_doctor_last_run_timestamp_seconds", "When the last nvsidecar doctor run started, in seconds since the epoch.");
	fprintf(f, "nvsidecar_doctor_last_run_timestamp_seconds %.3f\n", c->started);
	head(f, "nvsidecar_doctor_duration_seconds", "How long the last nvsidecar doctor run took.");
	fprintf(f, "nvsidecar_doctor_duration_seconds %.6f\n", c->seconds);
	head(f, "nvsidecar_doctor_mode", "The mode of the last run (quick: module state only; full: with P2P and RDMA runs).");
	fprintf(f, "nvsidecar_doctor_mode{mode=\"%s\"} 1\n", mode[o->mode]);
	if (c->counted) {
		head(f, "nvsidecar_doctor_gpus", "GPUs the nvsidecar module watches.");
		fprintf(f, "nvsidecar_doctor_gpus %zu\n", c->ngpus);
	}
	if (o->expect_gpus >= 0) {
		head(f, "nvsidecar_doctor_expected_gpus", "expect-gpus from doctor.conf: GPUs this node should have.");
		fprintf(f, "nvsidecar_doctor_expected_gpus %d\n", o->expect_gpus);
	}
	if (c->ngpus)
		head(f, "nvsidecar_gpu_info", "Each GPU the module watches; chip is node_exporter's hwmon chip label for it.");
	for (size_t i = 0; i < c->ngpus; ++i) {
		const struct nvs_doctor_gpu *g = &c->gpus[i];

		fprintf(f, "nvsidecar_gpu_info{gpu=\"gpu%u\",busid=\"", g->index);
		lv(f, g->busid);
		fputs("\",model=\"", f);
		lv(f, g->model);
		fprintf(f, "\",status=\"%s\",chip=\"", g->status);
		lv(f, g->hwmon_chip);
		fputs("\"} 1\n", f);
	}
	for (size_t i = 0, first = 1; i < c->ngpus; ++i) {
		const struct nvs_doctor_gpu *g = &c->gpus[i];

		if (!g->driver_temp_ok)
			continue;
		if (first)
			head(f, "nvsidecar_gpu_driver_temperature_celsius",
			     "The GPU temperature the NVIDIA driver reports (NVML), beside the hidden hotspot.");
		first = 0;
		fprintf(f, "nvsidecar_gpu_driver_temperature_celsius{gpu=\"gpu%u\",busid=\"", g->index);
		lv(f, g->busid);
		fputs("\",chip=\"", f);
		lv(f, g->hwmon_chip);
		fprintf(f, "\"} %u\n", g->driver_temp);
	}
}

int nvs_doctor_textfile(const struct nvs_checks *c, const struct nvs_doctor_opts *o, bool healthy,
			const char *path, char *err, size_t errlen)
{
	struct nvs_ofile of;
	char target[4200];
	struct stat st;
	int ret;

	/* a directory (node_exporter's --collector.textfile.directory) gets our file name */
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		snprintf(target, sizeof(target), "%s/nvsidecar.prom", path);
	else
		snprintf(target, sizeof(target), "%s", path);
	ret = nvs_ofile_open(&of, target, 0644, err, errlen);
	if (ret)
		return ret;
	nvs_doctor_metrics(of.f, c, o, healthy);
	if (ferror(of.f)) {
		snprintf(err, errlen, "Unable to write %s: %s", target, strerror(EIO));
		nvs_ofile_discard(&of);
		return -EIO;
	}
	return nvs_ofile_commit(&of, err, errlen);
}
