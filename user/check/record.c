// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/record.h"
#include "lib/exit.h"

/*
 * The kernel keeps 1024 samples per GPU (at most 1000 Hz, so at least one
 * second); reading every 100 ms leaves a wide margin for a busy machine.
 */
#define RECORD_POLL_MS 100

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

static int add_columns(struct nvs_rec_gpu *r, const struct nvs_gpu_info *g,
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

static int failed(struct nvs_record *rec, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int failed(struct nvs_record *rec, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rec->err, sizeof(rec->err), fmt, ap);
	va_end(ap);
	return code;
}

int nvs_record_init(struct nvs_record *rec, struct nvs_handle *h, const struct nvs_gpu_info *gpus,
		    size_t n)
{
	rec->h = h;
	if (!n)
		return failed(rec, NVS_EX_MISSING, "No supported GPU found: nothing to record");
	rec->g = calloc(n, sizeof(*rec->g));
	if (!rec->g)
		return failed(rec, NVS_EX_FAIL, "Unable to allocate memory: %s", strerror(errno));
	rec->n = n;
	for (size_t i = 0; i < n; ++i) {
		rec->g[i].index = gpus[i].index;
		memcpy(rec->g[i].busid, gpus[i].busid, sizeof(rec->g[i].busid));
		rec->g[i].since = gpus[i].seq + 1;
		if (add_columns(&rec->g[i], &gpus[i], rec->labels, &rec->nlabels) < 0)
			return failed(rec, NVS_EX_FAIL, "Too many distinct sensor labels to record (more than %d)",
				      NVS_MAX_SENSORS);
	}
	return NVS_EX_OK;
}

/* A GPU that went away is looked up again by bus id after a rescan. */
static void find_again(struct nvs_record *rec, struct nvs_rec_gpu *r)
{
	struct nvs_gpu_info *gpus = NULL;
	size_t n = 0;

	if (nvs_gpu_list(rec->h, &gpus, &n) < 0)
		return;
	for (size_t i = 0; i < n; ++i) {
		if (strcmp(gpus[i].busid, r->busid))
			continue;
		r->gone = false;
		r->index = gpus[i].index;
		/* A new device starts counting again; take all it has. */
		if (gpus[i].seq < r->since)
			r->since = 0;
		if (rec->note)
			rec->note(rec->arg, r, true);
		break;
	}
	free(gpus);
}

/* Hands on what samples_get returned, up to end_ns. */
static int write_rows(struct nvs_record *rec, struct nvs_rec_gpu *r, const struct nvs_samples *s)
{
	for (size_t i = 0; i < s->count; ++i) {
		if (s->v[i].ts_ns >= rec->end_ns)
			continue;
		if (rec->row(rec->arg, r, &s->v[i], rec->nlabels) < 0)
			return -1;
		r->rows++;
	}
	return 0;
}

int nvs_record_run(struct nvs_record *rec, uint64_t duration_ms, volatile sig_atomic_t *stop)
{
	struct nvs_samples s = { 0 };
	int ret = NVS_EX_OK;

	rec->start_ns = now_ns();
	rec->end_ns = rec->start_ns + duration_ms * 1000000ULL;
	for (;;) {
		/* The pass after the deadline (or a signal) drains the rest. */
		bool last = *stop || now_ns() >= rec->end_ns;

		if (*stop && !rec->interrupted) {
			rec->interrupted = true;
			rec->end_ns = now_ns();
		}
		for (size_t i = 0; i < rec->n; ++i) {
			struct nvs_rec_gpu *r = &rec->g[i];

			if (r->gone)
				find_again(rec, r);
			if (r->gone)
				continue;
			if (nvs_samples_get(rec->h, r->index, r->since, &s) < 0) {
				if (errno == ENODEV) {
					r->gone = true;
					if (rec->note)
						rec->note(rec->arg, r, false);
					continue;
				}
				ret = failed(rec, nvs_exit_for_errno(errno), "Unable to read the samples of gpu%u: %s",
					     r->index, nvs_last_error(rec->h));
				goto out;
			}
			r->lost += s.lost;
			if (write_rows(rec, r, &s) < 0) {
				ret = NVS_RECORD_WRITE;
				goto out;
			}
			r->since = s.next;
		}
		if (last)
			break;
		sleep_ms(RECORD_POLL_MS);
	}
	rec->rows = rec->lost = 0;
	for (size_t i = 0; i < rec->n; ++i) {
		rec->lost += rec->g[i].lost;
		rec->rows += rec->g[i].rows;
	}
out:
	nvs_samples_free(&s);
	return ret;
}

void nvs_record_free(struct nvs_record *rec)
{
	free(rec->g);
	rec->g = NULL;
	rec->n = 0;
}
