// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check/record.h"
#include "cli/args.h"
#include "cli/csv.h"
#include "cli/gpu.h"
#include "cli/out.h"
#include "cli/row_thermal.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/format.h"
#include "lib/io.h"
#include "lib/parse.h"
#include "libnvsidecar.h"


#define MAX_DURATION_MS (7ULL * 24 * 3600 * 1000)

struct opts {
	bool json, dump, watch, allow_loss;
	const char *gpu;
	const char *record;
	uint64_t duration_ms;
	uint64_t interval_ms;
	uint32_t count;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void catch_signals(void)
{
	/* No SA_RESTART: a signal must cut a sleep or a netlink wait short. */
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s [--gpu GPU] [--json | --dump]\n", PROG_NAME, name);
	fprintf(f, "       %s %s [--gpu GPU] --watch [--interval S] [--count N]\n", PROG_NAME, name);
	fprintf(f, "       %s %s [--gpu GPU] --record FILE.csv --duration S [--allow-loss]\n\n",
		PROG_NAME, name);
	fprintf(f,
		"Shows every sensor of every GPU (or of GPU: gpuN, N or a PCI bus id).\n\n"
		"  --json         one JSON document; temperatures in milli-degrees C\n"
		"  --dump         tab-separated, one line per sensor, columns:\n"
		"                 gpu busid id label valid mc peak low max alarm\n"
		"                 (m°C integers; `-' where there is no value)\n"
		"  --watch        redraw every --interval (default 1 s, 0.05 s to 1 h);\n"
		"                 a value at its peak is highlighted (`*'); --count N\n"
		"                 stops after N refreshes\n"
		"  --record FILE  write every sample taken during --duration S (30, 1.5,\n"
		"                 500ms, 2m; at most 7 days) as CSV: gpu,seq,timestamp_ns\n"
		"                 then one column per sensor label, values in m°C, empty\n"
		"                 when not valid. The file appears atomically at the end,\n"
		"                 also after Ctrl-C. Prints how many samples were lost.\n"
		"  --allow-loss   exit 0 even if samples were lost\n\n"
		"Exit codes: 0 success, 1 failure, 2 invalid arguments, 3 the module is\n"
		"not loaded, 4 permission denied (the --record file, or the module\n"
		"refused), 5 samples were lost during --record.\n");
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);	/* EINTR: the caller checks stop */
}

/*
 * A snapshot in mode m: the table (eol is "\e[K\n" while --watch redraws
 * in place; the peak mark shows then), JSON, or the --dump lines.
 */
static void show(const struct nvs_gpu_info *gpus, size_t n, bool watch, const char *eol, enum row_mode m)
{
	bool text = m == ROW_TEXT;

	if (text)
		out_text("%s%-6s %-9s %9s %9s %9s %9s%s%s", out_cfg(OUT_BOLD), "GPU", "SENSOR", "TEMP", "PEAK",
			 "LOW", "MAX", out_cfg(OUT_PLAIN), eol);
	out_arr(OUT_JSON, "gpus");
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];
		char gname[16];

		snprintf(gname, sizeof(gname), "gpu%u", g->index);
		out_obj(OUT_JSON, NULL);
		out_uint(OUT_JSON, "index", NULL, g->index);
		out_str(OUT_JSON, "busid", NULL, g->busid);
		out_str(OUT_JSON, "chip", NULL, g->chip);
		out_str(OUT_JSON, "name", NULL, g->name);
		out_str(OUT_JSON, "status", NULL, nvs_status_name(g->status));
		out_uint(OUT_JSON, "sample_hz", NULL, g->sample_hz);
		out_uint(OUT_JSON, "seq", NULL, g->seq);
		out_uint(OUT_JSON, "last_sample_ns", NULL, g->last_sample_ns);
		if (text && g->status != NVS_STATUS_OK) {
			out_text("%-6s %s%s%s", gname, out_cfg(OUT_DIM), nvs_status_name(g->status), g->reason[0] ? ": " : "");
			out_str(OUT_TEXT, NULL, "%s", g->reason);
			out_text("%s%s", out_cfg(OUT_PLAIN), eol);
		}
		out_arr(OUT_JSON, "sensors");
		for (unsigned int k = 0; k < g->nsensors; ++k) {
			struct thermal_row r = { .s = g->sensors[k], .gpu = g->index, .busid = g->busid,
						 .gname = k ? "" : gname };
			bool at_peak = watch && r.s.valid && r.s.has_peak && r.s.mc >= r.s.peak;

			r.color = r.s.alarm ? OUT_ALARM : at_peak ? OUT_PEAK : r.s.valid ? OUT_PLAIN : OUT_DIM;
			/* Without colour the mark is the only highlight. */
			r.mark = at_peak ? "*" : " ";
			out_obj(OUT_JSON, NULL);
			row_render(&thermal_sensor_row, &r, m, eol);
			out_obj_end(OUT_JSON);
		}
		out_arr_end(OUT_JSON);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	if (text && !n)
		out_text("No supported GPU found%s", eol);
}

static int snapshot(struct nvs_cli *c, const struct opts *o)
{
	const struct nvs_gpu_info *gpus;
	size_t n;
	int ret = nvs_cli_select(c, o->gpu);

	if (ret)
		return ret;
	gpus = nvs_cli_gpus(c, &n);
	out_begin(true);
	show(gpus, n, false, "\n", row_mode(o->dump));
	return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
}

static int watch(struct nvs_cli *c, const struct opts *o)
{
	bool tty = isatty(STDOUT_FILENO);
	const struct nvs_gpu_info *gpus;
	uint32_t frames = 0;
	size_t n = 0;
	int ret = NVS_EX_FAIL;

	catch_signals();
	if (tty)
		printf("\e[?25l\e[H\e[2J");
	while (!stop) {
		struct timespec wall;
		char stamp[32];

		ret = nvs_cli_select(c, o->gpu);
		if (ret)
			goto cleanup;
		gpus = nvs_cli_gpus(c, &n);
		clock_gettime(CLOCK_REALTIME, &wall);
		strftime(stamp, sizeof(stamp), "%F %T", localtime(&wall.tv_sec));
		if (tty)
			printf("\e[H");
		else if (frames)
			printf("\n");
		printf("%s  every %g s  (* at peak)%s", stamp, (double)o->interval_ms / 1000,
		       tty ? "\e[K\n" : "\n");
		show(gpus, n, true, tty ? "\e[K\n" : "\n", ROW_TEXT);
		if (tty)
			printf("\e[J");
		fflush(stdout);
		if (o->count && ++frames >= o->count)
			break;
		sleep_ms(o->interval_ms);
	}
	ret = NVS_EX_OK;

cleanup:
	if (tty)
		printf("\e[?25h");
	fflush(stdout);
	return ret;
}

static int csv_row(void *arg, const struct nvs_rec_gpu *g, const struct nvs_sample_entry *s, size_t nlabels)
{
	return nvs_csv_row(arg, g->index, s, g->nsensors, g->col, nlabels);
}

static void gpu_note(void *arg, const struct nvs_rec_gpu *g, bool back)
{
	(void)arg;
	if (back)
		out_note("gpu%u (%s) is back; recording it again", g->index, g->busid);
	else
		out_note("gpu%u (%s) went away; waiting for it to come back", g->index, g->busid);
}

/* The loop is check/record.c's; this writes its rows as CSV and says what happened. */
static int record(struct nvs_cli *c, const struct opts *o, struct nvs_ofile *rf)
{
	struct nvs_record rec = { .row = csv_row, .note = gpu_note, .arg = rf->f };
	const struct nvs_gpu_info *gpus;
	char err[4096 + 256];
	size_t n = 0;
	int ret;

	ret = nvs_cli_select(c, o->gpu);
	if (ret)
		return ret;
	gpus = nvs_cli_gpus(c, &n);
	ret = nvs_record_init(&rec, c->h, gpus, n);
	if (ret) {
		ret = out_fail(ret, "%s", rec.err);
		goto cleanup;
	}
	if (nvs_csv_header(rf->f, rec.labels, rec.nlabels) < 0)
		goto write_error;

	catch_signals();
	out_note("Recording %zu GPU%s for %.3f s to `%s'", n, n == 1 ? "" : "s",
		 (double)o->duration_ms / 1000, o->record);
	ret = nvs_record_run(&rec, o->duration_ms, &stop);
	if (ret == NVS_RECORD_WRITE)
		goto write_error;
	if (ret) {
		ret = out_fail(ret, "%s", rec.err);
		goto cleanup;
	}
	if (nvs_ofile_commit(rf, err, sizeof(err)) < 0) {
		ret = out_fail(NVS_EX_FAIL, "%s", err);
		goto cleanup;
	}

	out_note("%secorded %" PRIu64 " samples of %zu GPU%s to `%s' in %.3f s, lost %" PRIu64,
		 rec.interrupted ? "Interrupted: r" : "R", rec.rows, n, n == 1 ? "" : "s", o->record,
		 (double)(rec.end_ns - rec.start_ns) / 1e9, rec.lost);
	for (size_t i = 0; rec.lost && i < n; ++i)
		if (rec.g[i].lost)
			out_note("  gpu%u lost %" PRIu64 " samples", rec.g[i].index, rec.g[i].lost);
	if (rec.lost && !o->allow_loss) {
		ret = out_fail(NVS_EX_LOST, "Samples were lost: the recorder fell behind the kernel's ring; "
			       "lower the rate with `%s set GPU sample-hz N' or pass --allow-loss", PROG_NAME);
	} else {
		ret = NVS_EX_OK;
	}
	goto cleanup;

write_error:
	ret = out_fail(NVS_EX_FAIL, "Unable to write the recording `%s': %s", o->record, strerror(errno));
cleanup:
	nvs_record_free(&rec);
	return ret;
}

/* Returns 0, or the exit code of an argument error (reported). */
static int parse(int argc, const char *argv[], struct opts *o)
{
	bool have_duration = false, have_interval = false;
	struct nvs_args_seen seen = { 0 };
	const char *name = argv[0];

	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			o->json = true;
			out_set_json(true);
		} else if (!strcmp(a, "--dump")) {
			o->dump = true;
		} else if (!strcmp(a, "--watch")) {
			o->watch = true;
		} else if (!strcmp(a, "--allow-loss")) {
			o->allow_loss = true;
		} else if (strcmp(a, "--gpu") && strcmp(a, "--record") && strcmp(a, "--duration") &&
			   strcmp(a, "--interval") && strcmp(a, "--count")) {
			return nvs_arg_invalid(name, a, "--dump --watch --allow-loss --gpu= --record= --duration= --interval= --count=");
		} else if (!v) {
			return out_usage(name, "Missing value for `%s'", a);
		} else if (nvs_arg_twice(&seen, name, a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "--gpu")) {
			/* checked before the module is asked: a typo is an argument error */
			if (!nvs_gpu_spec_ok(v))
				return out_usage(name, "Invalid --gpu (gpuN, N or a PCI bus id such as 0000:01:00.0): `%s'", v);
			o->gpu = argv[++i];
		} else if (!strcmp(a, "--record")) {
			if (!*v)
				return out_usage(name, "Empty file name for --record (- writes to standard output)");
			o->record = argv[++i];
		} else if (!strcmp(a, "--duration")) {
			if (nvs_parse_duration_ms(v, 1, MAX_DURATION_MS, &o->duration_ms) < 0)
				return out_usage(name, "Invalid --duration (1 ms to 7 days, e.g. 30, 1.5, 500ms, 2m): `%s'", v);
			have_duration = true;
			++i;
		} else if (!strcmp(a, "--interval")) {
			if (nvs_parse_duration_ms(v, 50, 3600 * 1000, &o->interval_ms) < 0)
				return out_usage(name, "Invalid --interval (0.05 s to 1 h): `%s'", v);
			have_interval = true;
			++i;
		} else {
			if (nvs_parse_u32(v, 1, UINT32_MAX, &o->count) < 0)
				return out_usage(name, "Invalid --count (a positive number): `%s'", v);
			++i;
		}
	}
	if (o->json + o->dump + o->watch + !!o->record > 1)
		return out_usage(name, "Choose one of --json, --dump, --watch and --record");
	if (!!o->record != have_duration)
		return out_usage(name, "--record and --duration go together");
	if (o->allow_loss && !o->record)
		return out_usage(name, "--allow-loss only applies to --record");
	if (o->count && !o->watch)
		return out_usage(name, "--count only applies to --watch");
	if (have_interval && !o->watch)
		return out_usage(name, "--interval only applies to --watch");
	return 0;
}

int thermal_main(int argc, const char *argv[])
{
	struct opts o = { .interval_ms = 1000 };
	struct nvs_ofile rf = { 0 };
	struct nvs_cli c = { 0 };
	char err[4096 + 256];
	mode_t mask;
	int ret;

	for (int i = 1; i < argc; ++i)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		}
	ret = parse(argc, argv, &o);
	if (ret)
		return ret;

	/*
	 * Made before talking to the kernel, so a bad path fails first and
	 * fast; a target that is not a regular file (/dev/null) is refused.
	 */
	mask = umask(0);
	umask(mask);
	if (o.record) {
		ret = nvs_ofile_open(&rf, o.record, 0666 & ~mask, err, sizeof(err));
		if (ret) {
			ret = out_fail(nvs_exit_for_path(-ret), "%s", err);
			goto cleanup;
		}
		if (!rf.is_stdout)
			setvbuf(rf.f, NULL, _IOFBF, 1 << 20);
	}
	ret = nvs_cli_open(&c, false, NULL);
	if (ret)
		goto cleanup;
	if (o.record)
		ret = record(&c, &o, &rf);
	else if (o.watch)
		ret = watch(&c, &o);
	else
		ret = snapshot(&c, &o);

cleanup:
	nvs_ofile_discard(&rf);
	nvs_cli_close(&c);
	return ret;
}
