/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_HEALTH_H
#define LIBCUDA_HEALTH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * One answer for `doctor' and other callers: can jobs get dma-buf from this
 * libcuda, and is a patched copy still right for the loaded driver? Judged
 * from the binary (the library is never loaded), in the calling process,
 * printing nothing.
 */
enum lc_health_state {
	LC_HEALTH_OPEN,		/* patched (by nvsidecar or otherwise), or not needed */
	LC_HEALTH_CLOSED,	/* unpatched: `libcuda patch' would open the gate */
	LC_HEALTH_PARTIAL,	/* some initialisers set the bit, not all: `patch' completes it */
	LC_HEALTH_STALE,	/* the patch no longer matches the loaded driver or its source */
	LC_HEALTH_REFUSED,	/* the gate cannot be proven patchable (unsupported layout) */
	LC_HEALTH_ERROR,	/* no such library, or not a usable libcuda */
};

struct lc_health {
	enum lc_health_state state;
	char lib[PATH_MAX];		/* the file analysed */
	char driver_version[64];	/* embedded in it (else from its name) */
	bool version_mismatch;		/* its file name names another driver */
	char verdict[24];		/* as `libcuda status' says it */
	char reason[768];		/* why: the verdict's reason, the stale copy, the error */
	size_t manifests;		/* patched copies and in-place patches found for it */
	size_t stale;			/* ... of which stale */
	double seconds;			/* analysis time */
};

/*
 * lib: a libcuda file, a `libcuda patch --out' directory (its libcuda.so.1
 * is judged), or NULL for the libcuda.so.1 the dynamic loader picks.
 * state: where in-place patches are recorded (NULL: the default,
 * /var/lib/nvsidecar/libcuda). Returns 0 with h filled, or -errno with
 * h->state LC_HEALTH_ERROR and the reason in h->reason.
 */
int lc_health_check(const char *lib, const char *state, struct lc_health *h);
/* "open", "closed", "partial", "stale", "refused", "error" */
const char *lc_health_name(enum lc_health_state s);

#endif
