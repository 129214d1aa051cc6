/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_PATCH_H
#define LIBCUDA_PATCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "libcuda/manifest.h"

/*
 * Writing what the analysis proved, as functions that never print: a
 * patched copy in a directory (with the libcuda.so.1 and libcuda.so links
 * and a manifest), or the library itself patched in place after a backup
 * named by its SHA-256, and the undo of that. Every file is written
 * atomically and re-analysed before it is published.
 */
struct lc_patch_result {
	bool up_to_date;		/* the copy was current: nothing written */
	bool in_place;
	bool bad_out;			/* the error is about --out (the admin's to fix) */
	char source[PATH_MAX];
	char source_sha256[65];
	char driver_version[64];
	char output[PATH_MAX + 160];
	char output_sha256[65];
	char outdir[PATH_MAX];		/* copies only */
	char backup[PATH_MAX];		/* in place only */
	char created[40];		/* -EEXIST: when the in-place patch was made */
	const char *verdict;		/* -EALREADY: "patched" or "not-needed" */
	char reason[768];		/* -EALREADY: why the analysis says so */
	char version_mismatch[192];	/* the file name names another driver version */
	char removed[PATH_MAX + 160];	/* copies: the previous driver's copy, removed */
	struct lc_msite *sites;
	size_t nsites;
};

/*
 * Patches the library at path (absolute, as lc_pick_lib() gives it) into
 * the directory out, or in place when out is NULL (state: where backups and
 * in-place manifests live). Returns 0, or with a message in err:
 * -EEXIST (in place: already patched in place by nvsidecar; res says when
 * and where the backup is), -EALREADY (the gate is already open: patched
 * otherwise, or not needed; nothing was written, err says so and res has
 * the source, verdict and reason), -EPROTONOSUPPORT (no proven patch for
 * this layout), -EINVAL (the driver version cannot be told, or the output
 * would overwrite the source), another -errno (I/O).
 */
int lc_patch(const char *path, const char *out, const char *state, struct lc_patch_result *res,
	     char *err, size_t errlen);
void lc_patch_result_free(struct lc_patch_result *res);

struct lc_restore_result {
	char lib[PATH_MAX];
	char sha256[65];
	char backup[4096];
	bool backup_removed;	/* no other in-place record uses it */
	/* a kept backup: the record that still names it, and its library */
	char kept_by[PATH_MAX];
	char kept_for[PATH_MAX];
	char kept_why[PATH_MAX + 256];	/* kept otherwise: why (unreadable, not removable) */
};

/*
 * Undoes `patch --in-place' of path after checking that it is still the
 * patched file and the backup still the original. -ENOENT when nothing is
 * recorded, -ESTALE when a file no longer matches, another -errno (I/O).
 * Once the original is written and synced, the backup is removed unless
 * another in-place record in state names it (res->backup_removed; kept_by
 * and kept_for name that record and its library, kept_why says why a
 * backup was kept otherwise).
 */
int lc_restore(const char *path, const char *state, struct lc_restore_result *res, char *err, size_t errlen);

#endif
