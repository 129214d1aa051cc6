/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_REPORT_H
#define LIBCUDA_REPORT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcuda/elf.h"
#include "libcuda/gate.h"
#include "libcuda/known.h"
#include "libcuda/manifest.h"

/*
 * What one libcuda is, as a function that never prints: its hash and
 * driver version, the gate (libcuda/gate.c), a verdict with the reason,
 * the known-builds cross-check, and every manifest that says a patched
 * copy was made from it (or from the library it replaced) with whether
 * that copy is stale. `libcuda status' shows it; `doctor' judges with it.
 */
#define LC_DEFAULT_STATE "/var/lib/nvsidecar/libcuda"
#define LC_MAX_MANIFESTS 16

enum lc_verdict {
	LC_UNPATCHED,
	LC_PATCHED,
	LC_PARTIAL,
	LC_UNSUPPORTED,
	LC_NOT_NEEDED,
};

struct lc_stale {
	char manifest[4200];
	char reason[4200 + 256];
	bool stale;
};

struct lc_report {
	char path[PATH_MAX];
	char sha[65];
	char version[64];
	uint64_t size;
	struct lc_elf elf;
	bool elf_ok;
	struct lc_gate g;
	const struct lc_known *known;
	bool known_match;
	char known_note[256];
	enum lc_verdict v;
	char why[768];
	struct lc_manifest beside;	/* the manifest in the library's directory */
	bool have_beside;
	struct lc_stale stale[LC_MAX_MANIFESTS];
	size_t nstale;
};

/* "unpatched", "patched", "partially-patched", "unsupported-layout", "not-needed" */
const char *lc_verdict_name(enum lc_verdict v);

/*
 * The libcuda.so.1 to work on: lib as given (made absolute), else the one
 * the dynamic loader would pick. -ENOENT with err when the loader knows
 * none, -EINVAL when lib cannot be found.
 */
int lc_pick_lib(const char *lib, char *path, size_t len, char *err, size_t errlen);
/*
 * Analyses path, with in-place manifests in state. 0 when analysed
 * (whatever the verdict), -errno with err when it is not a usable ELF.
 */
int lc_analyse(const char *path, const char *state, struct lc_report *r, char *err, size_t errlen);
void lc_report_free(struct lc_report *r);
bool lc_report_stale(const struct lc_report *r);

/* Whether the copy a manifest describes still matches the driver and its source. */
void lc_check_manifest(const char *mpath, const struct lc_manifest *m, struct lc_stale *s);
/* Where `patch --in-place' records what it did to target. */
void lc_state_manifest_path(const char *state, const char *target, char *buf, size_t len);

#endif
