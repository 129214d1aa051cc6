/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_RECORD_H
#define CHECK_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libnvsidecar.h"

/*
 * The recording loop of `thermal --record': every sample the kernel keeps
 * for each GPU, read often enough that its ring (1024 samples, at least
 * a second) does not overwrite any, through hot-unplug (a GPU that goes
 * away is found again by bus id). The engine does not print or format:
 * it hands each GPU's columns and each sample to the caller's callbacks
 * (cmd/thermal.c writes CSV through cli/csv.h) and counts rows and losses.
 */
struct nvs_rec_gpu {
	uint32_t index;
	char busid[NVS_BUSID_LEN];
	uint64_t since;
	uint64_t lost;
	uint64_t rows;
	bool gone;
	unsigned int nsensors;
	int col[NVS_MAX_SENSORS];	/* column of sensor i among the labels */
};

struct nvs_record {
	struct nvs_handle *h;
	size_t n;
	struct nvs_rec_gpu *g;
	const char *labels[NVS_MAX_SENSORS];	/* the columns: every distinct label */
	size_t nlabels;
	uint64_t start_ns, end_ns;
	bool interrupted;		/* stopped by a signal before the end */
	uint64_t rows, lost;		/* totals, after nvs_record_run */
	/* 0 or -1 (errno set): a sample as a row of the recording */
	int (*row)(void *arg, const struct nvs_rec_gpu *g, const struct nvs_sample_entry *s,
		   size_t nlabels);
	/* a GPU went away or came back */
	void (*note)(void *arg, const struct nvs_rec_gpu *g, bool back);
	void *arg;
	char err[512];			/* why, when a call returns an exit code */
};

/*
 * Takes the GPUs to record (labels point into gpus: keep them). 0, or an
 * exit code with rec->err (no GPU, no memory, too many labels).
 */
int nvs_record_init(struct nvs_record *rec, struct nvs_handle *h, const struct nvs_gpu_info *gpus,
		    size_t n);
/*
 * Records for duration_ms, or until *stop: the pass after either drains
 * what the kernel still holds. 0, an exit code with rec->err, or
 * NVS_RECORD_WRITE when rec->row failed (errno says why).
 */
#define NVS_RECORD_WRITE (-1)
int nvs_record_run(struct nvs_record *rec, uint64_t duration_ms, volatile sig_atomic_t *stop);
void nvs_record_free(struct nvs_record *rec);

#endif
