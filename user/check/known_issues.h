/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_KNOWN_ISSUES_H
#define CHECK_KNOWN_ISSUES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The known-issues table (scripts/nvsidecar/known-issues.tsv, whose header
 * comment is the format's reference): problems of neighbouring components
 * that break GPUDirect and P2P, one row each, read at run time so that a
 * row can be added without rebuilding. This file reads and judges; the
 * doctor (check/doctor_known.c) collects the facts and reports.
 */

/* The columns of a row, in file order. */
struct nvs_ki_row {
	unsigned int line;
	char id[48];
	char component[32];		/* a version fact, or "-" */
	char versions[128];		/* "*" or ">=1.21.0,<1.21.2" */
	char cond[512];			/* the predicate; "-" for none */
	bool fail;			/* FAIL, else WARN */
	char consequence[320];
	char fix[320];
	char source[160];
};

#define NVS_KI_MAX_ERRS 8
#define NVS_KI_MAX_ROWS 1000
/* the table is a few dozen rows: anything larger is another file, or a damaged one */
#define NVS_KI_MAX_BYTES (1024 * 1024)

struct nvs_ki_table {
	struct nvs_ki_row *v;
	size_t n;
	/* "file:line: what is wrong" for the first bad rows; nerr counts them all */
	char errs[NVS_KI_MAX_ERRS][640];
	size_t nerr;
	/* why the file could not be read, when nvs_ki_load() fails; kept by nvs_ki_free() */
	char why[600];
};

/*
 * What the predicates ask of the node. version: a component's version,
 * NULL when it was not found. atom: module:NAME, path:/P, reg:KEY=VAL,
 * flavour:open|proprietary, have:COMPONENT, by kind ("module") and arg.
 * gpus: how many GPUs of a family (nvs_ki_gpu_families) the node has, -1
 * unknown; NULL is unknown too (gpus:FAMILY>=N is then false).
 */
struct nvs_ki_facts {
	const char *(*version)(void *ctx, const char *name);
	bool (*atom)(void *ctx, const char *kind, const char *arg);
	long (*gpus)(void *ctx, const char *family);
	void *ctx;
};

/*
 * Reads the table at path. 0, with each bad row left out and named in
 * t->errs (the good ones still count); -errno when the file cannot be read
 * at all, with the reason in t->why: -ENOENT; -EISDIR for a directory;
 * -EINVAL for anything but a regular file (a FIFO, a device: it is never
 * opened blocking, so it cannot hang the doctor); -EFBIG past
 * NVS_KI_MAX_BYTES; -ENOMEM. A UTF-8 byte order mark is skipped.
 */
int nvs_ki_load(struct nvs_ki_table *t, const char *path);
void nvs_ki_free(struct nvs_ki_table *t);

/*
 * Whether row r matches the node: its component's version is known and in
 * the row's range, and its condition holds. A comparison with a version
 * the node did not show is false.
 */
bool nvs_ki_match(const struct nvs_ki_row *r, const struct nvs_ki_facts *f);

/* Compares dotted versions by number ("6.12.118+deb12" reads as 6.12.118): <0, 0, >0. */
int nvs_ki_vercmp(const char *a, const char *b);

/* The version facts a row can name: kernel, driver, libcuda, nccl, ucx, libfabric, rdma-core. */
extern const char *const nvs_ki_components[];

/* The GPU families gpus:FAMILY counts: gb20x (GeForce RTX 50), nvidia (any NVIDIA GPU). */
extern const char *const nvs_ki_gpu_families[];

#endif
