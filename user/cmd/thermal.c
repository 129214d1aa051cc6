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

#include "common/json.h"
#include "libnvsidecar.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/io.h"
#include "common/out.h"
#include "common/color.h"


/*
 * The kernel keeps 1024 samples per GPU (at most 1000 Hz, so at least one
 * second); reading every 100 ms leaves a wide margin for a busy machine.
 */
#define RECORD_POLL_MS 100
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
		"not loaded, 5 samples were lost during --record.\n");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);	/* EINTR: the caller checks stop */
}

/* Keeps only the GPU the user named; errors if there is none such. */
static int select_gpu(const char *want, struct nvs_gpu_info *gpus, size_t *n)
{
	uint32_t idx;

	if (!want)
		return 0;
	if (nvs_parse_gpu(want, gpus, *n, &idx) < 0) {
		fprintf(stderr, "No such GPU: `%s' (see `%s status')\n", want, PROG_NAME);
		return -1;
	}
	for (size_t i = 0; i < *n; ++i) {
		if (gpus[i].index == idx) {
			gpus[0] = gpus[i];
			*n = 1;
			break;
		}
	}
	return 0;
}

static char *cell(char *buf, size_t len, bool has, int32_t mc)
{
	if (!has)
		snprintf(buf, len, "-");
	else
		nvs_format_mc(buf, len, mc);
	return buf;
}

static void print_dump(const struct nvs_gpu_info *gpus, size_t n)
{
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];

		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];
			char v[4][16];

			snprintf(v[0], sizeof(v[0]), s->valid ? "%" PRId32 : "-", s->mc);
			snprintf(v[1], sizeof(v[1]), s->has_peak ? "%" PRId32 : "-", s->peak);
			snprintf(v[2], sizeof(v[2]), s->has_low ? "%" PRId32 : "-", s->low);
			snprintf(v[3], sizeof(v[3]), s->has_max ? "%" PRId32 : "-", s->max);
			printf("%u\t%s\t%u\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", g->index, g->busid, s->id,
			       s->label, s->valid, v[0], v[1], v[2], v[3], s->alarm);
		}
	}
}

static void print_json(const struct nvs_gpu_info *gpus, size_t n)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_arr_open(&j, "gpus");
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];

		json_obj_open(&j, NULL);
		json_uint(&j, "index", g->index);
		json_str(&j, "busid", g->busid);
		json_str(&j, "chip", g->chip);
		json_str(&j, "name", g->name);
		json_str(&j, "status", nvs_status_name(g->status));
		json_uint(&j, "sample_hz", g->sample_hz);
		json_uint(&j, "seq", g->seq);
		json_uint(&j, "last_sample_ns", g->last_sample_ns);
		json_arr_open(&j, "sensors");
		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];

			json_obj_open(&j, NULL);
			json_uint(&j, "id", s->id);
			json_str(&j, "label", s->label);
			json_bool(&j, "valid", s->valid);
#define OPT(key, has, v) do { if (has) json_int(&j, key, v); else json_null(&j, key); } while (0)
			OPT("mc", s->valid, s->mc);
			OPT("peak_mc", s->has_peak, s->peak);
			OPT("low_mc", s->has_low, s->low);
			OPT("max_mc", s->has_max, s->max);
#undef OPT
			json_bool(&j, "alarm", s->alarm);
			json_obj_close(&j);
		}
		json_arr_close(&j);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

/* The table of a snapshot; eol is "\e[K\n" while redrawing in place. */
static void print_table(const struct nvs_gpu_info *gpus, size_t n, bool watch, bool color,
			const char *eol)
{
	const char *hi = color ? "\e[1;33m" : "", *red = color ? "\e[1;31m" : "",
		   *dim = color ? "\e[2m" : "", *bold = color ? "\e[1m" : "", *off = color ? "\e[0m" : "";

	printf("%s%-6s %-9s %9s %9s %9s %9s%s%s", bold, "GPU", "SENSOR", "TEMP", "PEAK", "LOW", "MAX",
	       off, eol);
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];
		char gname[16];

		snprintf(gname, sizeof(gname), "gpu%u", g->index);
		if (g->status != NVS_STATUS_OK)
			printf("%-6s %s%s%s%s%s%s", gname, dim, nvs_status_name(g->status),
			       g->reason[0] ? ": " : "", g->reason, off, eol);
		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];
			bool at_peak = watch && s->valid && s->has_peak && s->mc >= s->peak;
			char v[4][16];

			cell(v[0], sizeof(v[0]), s->valid, s->mc);
			cell(v[1], sizeof(v[1]), s->has_peak, s->peak);
			cell(v[2], sizeof(v[2]), s->has_low, s->low);
			cell(v[3], sizeof(v[3]), s->has_max, s->max);
			/* Without colour the mark is the only highlight. */
			printf("%-6s %-9s %s%s%9s%s%s %9s %9s %9s%s%s", k ? "" : gname, s->label,
			       s->alarm ? red : at_peak ? hi : s->valid ? "" : dim,
			       "", v[0], at_peak ? "*" : " ", off, v[1], v[2], v[3],
			       s->alarm ? "  ALARM" : "", eol);
		}
	}
	if (!n)
		printf("No supported GPU found%s", eol);
}

static int snapshot(struct nvs_handle *h, const struct opts *o)
{
	struct nvs_gpu_info *gpus = NULL;
	size_t n = 0;
	int ret = NVS_EX_FAIL;

	if (nvs_gpu_list(h, &gpus, &n) < 0) {
		fprintf(stderr, "Unable to read the sensors: %s\n", nvs_last_error(h));
		goto cleanup;
	}
	if (select_gpu(o->gpu, gpus, &n) < 0)
		goto cleanup;
	if (o->json)
		print_json(gpus, n);
	else if (o->dump)
		print_dump(gpus, n);
	else
		print_table(gpus, n, false, want_color(), "\n");
	ret = fflush(stdout) ? NVS_EX_FAIL : NVS_EX_OK;

cleanup:
	free(gpus);
	return ret;
}

static int watch(struct nvs_handle *h, const struct opts *o)
{
	bool tty = isatty(STDOUT_FILENO), color = want_color();
	struct nvs_gpu_info *gpus = NULL;
	uint32_t frames = 0;
	size_t n = 0;
	int ret = NVS_EX_FAIL;

	catch_signals();
	if (tty)
		printf("\e[?25l\e[H\e[2J");
	while (!stop) {
		struct timespec wall;
		char stamp[32];

		free(gpus);
		gpus = NULL;
		if (nvs_gpu_list(h, &gpus, &n) < 0) {
			fprintf(stderr, "Unable to read the sensors: %s\n", nvs_last_error(h));
			goto cleanup;
		}
		if (select_gpu(o->gpu, gpus, &n) < 0)
			goto cleanup;
		clock_gettime(CLOCK_REALTIME, &wall);
		strftime(stamp, sizeof(stamp), "%F %T", localtime(&wall.tv_sec));
		if (tty)
			printf("\e[H");
		else if (frames)
			printf("\n");
		printf("%s  every %g s  (* at peak)%s", stamp, (double)o->interval_ms / 1000,
		       tty ? "\e[K\n" : "\n");
		print_table(gpus, n, true, color, tty ? "\e[K\n" : "\n");
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
	free(gpus);
	return ret;
}

struct rec_gpu {
	uint32_t index;
	char busid[NVS_BUSID_LEN];
	uint64_t since;
	uint64_t lost;
	uint64_t rows;
	bool gone;
	unsigned int nsensors;
	int col[NVS_MAX_SENSORS];
};

static int add_columns(struct rec_gpu *r, const struct nvs_gpu_info *g,
		       const char **labels, size_t *nlabels)
{
	r->nsensors = g->nsensors;
	for (unsigned int k = 0; k < g->nsensors; ++k) {
		const struct nvs_sensor_info *s = &g->sensors[k];
		size_t c;

		if (s->id >= NVS_MAX_SENSORS)
			return -1;
		for (c = 0; c < *nlabels && strcmp(labels[c], s->label); ++c)
			;
		if (c == *nlabels) {
			if (c == NVS_MAX_SENSORS)
				return -1;
			labels[(*nlabels)++] = s->label;
		}
		r->col[s->id] = (int)c;
	}
	return 0;
}

/* A GPU that went away is looked up again by bus id after a rescan. */
static void find_again(struct nvs_handle *h, struct rec_gpu *r)
{
	struct nvs_gpu_info *gpus = NULL;
	size_t n = 0;

	if (nvs_gpu_list(h, &gpus, &n) < 0)
		return;
	for (size_t i = 0; i < n; ++i) {
		if (strcmp(gpus[i].busid, r->busid))
			continue;
		r->gone = false;
		r->index = gpus[i].index;
		/* A new device starts counting again; take all it has. */
		if (gpus[i].seq < r->since)
			r->since = 0;
		fprintf(stderr, "gpu%u (%s) is back; recording it again\n", r->index, r->busid);
		break;
	}
	free(gpus);
}

/* Writes out what samples_get returned, up to end_ns. */
static int write_rows(FILE *f, struct rec_gpu *r, const struct nvs_samples *s, uint64_t end_ns,
		      size_t nlabels)
{
	for (size_t i = 0; i < s->count; ++i) {
		if (s->v[i].ts_ns >= end_ns)
			continue;
		if (nvs_csv_row(f, r->index, &s->v[i], r->nsensors, r->col, nlabels) < 0)
			return -1;
		r->rows++;
	}
	return 0;
}

static int record(struct nvs_handle *h, const struct opts *o, struct nvs_ofile *rf)
{
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_samples s = { 0 };
	struct rec_gpu *rg = NULL;
	const char *labels[NVS_MAX_SENSORS];
	uint64_t start_ns, end_ns, lost = 0, rows = 0;
	size_t n = 0, nlabels = 0;
	bool interrupted = false;
	char err[4096 + 256];
	int ret = NVS_EX_FAIL;

	if (nvs_gpu_list(h, &gpus, &n) < 0) {
		fprintf(stderr, "Unable to list GPUs: %s\n", nvs_last_error(h));
		goto cleanup;
	}
	if (select_gpu(o->gpu, gpus, &n) < 0)
		goto cleanup;
	if (!n) {
		fprintf(stderr, "No supported GPU found: nothing to record\n");
		goto cleanup;
	}
	rg = calloc(n, sizeof(*rg));
	if (!rg) {
		perror("Unable to allocate memory");
		goto cleanup;
	}
	for (size_t i = 0; i < n; ++i) {
		rg[i].index = gpus[i].index;
		memcpy(rg[i].busid, gpus[i].busid, sizeof(rg[i].busid));
		rg[i].since = gpus[i].seq + 1;
		if (add_columns(&rg[i], &gpus[i], labels, &nlabels) < 0) {
			fprintf(stderr, "Too many distinct sensor labels to record (more than %d)\n",
				NVS_MAX_SENSORS);
			goto cleanup;
		}
	}
	if (nvs_csv_header(rf->f, labels, nlabels) < 0)
		goto write_error;

	catch_signals();
	start_ns = now_ns();
	end_ns = start_ns + o->duration_ms * 1000000ULL;
	fprintf(stderr, "Recording %zu GPU%s for %.3f s to `%s'\n", n, n == 1 ? "" : "s",
		(double)o->duration_ms / 1000, o->record);
	for (;;) {
		/* The pass after the deadline (or a signal) drains the rest. */
		bool last = stop || now_ns() >= end_ns;

		if (stop && !interrupted) {
			interrupted = true;
			end_ns = now_ns();
		}
		for (size_t i = 0; i < n; ++i) {
			struct rec_gpu *r = &rg[i];

			if (r->gone)
				find_again(h, r);
			if (r->gone)
				continue;
			if (nvs_samples_get(h, r->index, r->since, &s) < 0) {
				if (errno == ENODEV) {
					fprintf(stderr, "gpu%u (%s) went away; waiting for it to "
						"come back\n", r->index, r->busid);
					r->gone = true;
					continue;
				}
				fprintf(stderr, "Unable to read the samples of gpu%u: %s\n",
					r->index, nvs_last_error(h));
				goto cleanup;
			}
			r->lost += s.lost;
			if (write_rows(rf->f, r, &s, end_ns, nlabels) < 0)
				goto write_error;
			r->since = s.next;
		}
		if (last)
			break;
		sleep_ms(RECORD_POLL_MS);
	}
	if (nvs_ofile_commit(rf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		goto cleanup;
	}

	for (size_t i = 0; i < n; ++i) {
		lost += rg[i].lost;
		rows += rg[i].rows;
	}
	fprintf(stderr, "%secorded %" PRIu64 " samples of %zu GPU%s to `%s' in %.3f s, lost %"
		PRIu64 "\n", interrupted ? "Interrupted: r" : "R", rows, n, n == 1 ? "" : "s",
		o->record, (double)(end_ns - start_ns) / 1e9, lost);
	for (size_t i = 0; lost && i < n; ++i)
		if (rg[i].lost)
			fprintf(stderr, "  gpu%u lost %" PRIu64 " samples\n", rg[i].index, rg[i].lost);
	if (lost && !o->allow_loss) {
		fprintf(stderr, "Samples were lost: the recorder fell behind the kernel's ring; "
			"lower the rate with `%s set GPU sample-hz N' or pass --allow-loss\n",
			PROG_NAME);
		ret = NVS_EX_LOST;
	} else {
		ret = NVS_EX_OK;
	}
	goto cleanup;

write_error:
	fprintf(stderr, "Unable to write the recording `%s': %s\n", o->record, strerror(errno));
cleanup:
	nvs_samples_free(&s);
	free(rg);
	free(gpus);
	return ret;
}

int thermal_main(int argc, const char *argv[])
{
	struct opts o = { .interval_ms = 1000 };
	struct nvs_handle *h = NULL;
	struct nvs_ofile rf = { 0 };
	char err[4096 + 256];
	bool have_duration = false;
	mode_t mask;
	int ret = NVS_EX_USAGE;

	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			show_usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(a, "--json")) {
			o.json = true;
		} else if (!strcmp(a, "--dump")) {
			o.dump = true;
		} else if (!strcmp(a, "--watch")) {
			o.watch = true;
		} else if (!strcmp(a, "--allow-loss")) {
			o.allow_loss = true;
		} else if (!strcmp(a, "--gpu") && v) {
			o.gpu = v;
			++i;
		} else if (!strcmp(a, "--record") && v) {
			if (!*v) {
				fprintf(stderr, "Empty file name for --record\n");
				goto usage;
			}
			o.record = v;
			++i;
		} else if (!strcmp(a, "--duration") && v) {
			if (nvs_parse_duration_ms(v, 1, MAX_DURATION_MS, &o.duration_ms) < 0) {
				fprintf(stderr, "Invalid --duration (1 ms to 7 days, e.g. 30, 1.5, "
					"500ms, 2m): `%s'\n", v);
				goto usage;
			}
			have_duration = true;
			++i;
		} else if (!strcmp(a, "--interval") && v) {
			if (nvs_parse_duration_ms(v, 50, 3600 * 1000, &o.interval_ms) < 0) {
				fprintf(stderr, "Invalid --interval (0.05 s to 1 h): `%s'\n", v);
				goto usage;
			}
			++i;
		} else if (!strcmp(a, "--count") && v) {
			if (nvs_parse_u32(v, 1, UINT32_MAX, &o.count) < 0) {
				fprintf(stderr, "Invalid --count (a positive number): `%s'\n", v);
				goto usage;
			}
			++i;
		} else {
			bool needs_value = !v && (!strcmp(a, "--gpu") || !strcmp(a, "--record") ||
						   !strcmp(a, "--duration") || !strcmp(a, "--interval") ||
						   !strcmp(a, "--count"));

			fprintf(stderr, needs_value ? "Missing value for `%s'\n" :
				"Unknown argument: `%s'\n", a);
			goto usage;
		}
	}
	if (o.json + o.dump + o.watch + !!o.record > 1) {
		fprintf(stderr, "Choose one of --json, --dump, --watch and --record\n");
		goto usage;
	}
	if (!!o.record != have_duration) {
		fprintf(stderr, "--record and --duration go together\n");
		goto usage;
	}
	if (o.allow_loss && !o.record) {
		fprintf(stderr, "--allow-loss only applies to --record\n");
		goto usage;
	}
	if (o.count && !o.watch) {
		fprintf(stderr, "--count only applies to --watch\n");
		goto usage;
	}

	ret = NVS_EX_FAIL;
	/* Made before talking to the kernel, so a bad path fails first and fast. */
	mask = umask(0);
	umask(mask);
	if (o.record) {
		int e = nvs_ofile_open(&rf, o.record, 0666 & ~mask, err, sizeof(err));

		if (e) {
			fprintf(stderr, "%s\n", err);
			ret = nvs_exit_for_path(-e);
			goto cleanup;
		}
	}
	if (o.record && !rf.is_stdout)
		setvbuf(rf.f, NULL, _IOFBF, 1 << 20);
	if (nvs_open(&h) < 0) {
		fprintf(stderr, "%s\n", nvs_last_error(NULL));
		ret = errno == ENOENT ? NVS_EX_MISSING : NVS_EX_FAIL;
		goto cleanup;
	}
	if (o.record)
		ret = record(h, &o, &rf);
	else if (o.watch)
		ret = watch(h, &o);
	else
		ret = snapshot(h, &o);

cleanup:
	nvs_ofile_discard(&rf);
	nvs_close(h);
	return ret;

usage:
	show_usage(stderr, argv[0]);
	return ret;
}
