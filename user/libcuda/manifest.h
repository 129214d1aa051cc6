/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_MANIFEST_H
#define LIBCUDA_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

/*
 * What `libcuda patch` did, beside its output: one "key<TAB>value" per
 * line, "site" lines repeated. Written atomically.
 */
#define LC_MANIFEST_NAME "nvsidecar-libcuda.manifest"

struct lc_msite {
	uint64_t off;
	uint8_t len;
	uint8_t old[16], new[16];
	char desc[176];
};

struct lc_manifest {
	char tool_version[32];
	char mode[16];			/* "copy" or "in-place" */
	char source[4096];
	char source_sha256[65];
	char driver_version[64];	/* embedded in the library (else from its name) */
	char name_version[64];		/* from the file name, when it has one */
	char version_mismatch[192];	/* why the two differ; empty when they agree */
	char output[4096];
	char output_sha256[65];
	char backup[4096];		/* in-place only */
	uint32_t field;
	uint8_t mask;
	char created[40];
	struct lc_msite *sites;
	size_t nsites;
};

/* 0, -ENOENT when absent, -EINVAL (with err) when malformed. */
int lc_manifest_read(const char *path, struct lc_manifest *m, char *err, size_t errlen);
/* Atomic (lib/io.h): whole or not at all. */
int lc_manifest_write(const char *path, const struct lc_manifest *m, char *err, size_t errlen);
void lc_manifest_free(struct lc_manifest *m);

#endif
