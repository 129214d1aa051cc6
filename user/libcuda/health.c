// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's view of libcuda: lc_analyse() boiled down to one state, the
 * stale copies first (a job would load a library from another driver), then
 * the gate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libcuda/health.h"
#include "libcuda/report.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

const char *lc_health_name(enum lc_health_state s)
{
	static const char *const n[] = { "open", "closed", "partial", "stale", "refused", "error" };

	return s <= LC_HEALTH_ERROR ? n[s] : "error";
}

int lc_health_check(const char *lib, const char *state, struct lc_health *h)
{
	char file[PATH_MAX + 16], path[PATH_MAX], err[PATH_MAX + 256];
	struct lc_report *r;
	struct stat st;
	int ret;

	memset(h, 0, sizeof(*h));
	h->state = LC_HEALTH_ERROR;
	if (lib && !stat(lib, &st) && S_ISDIR(st.st_mode)) {
		snprintf(file, sizeof(file), "%s/libcuda.so.1", lib);
		lib = file;
	}
	ret = lc_pick_lib(lib, path, sizeof(path), err, sizeof(err));
	if (ret) {
		snprintf(h->reason, sizeof(h->reason), "%s", err);
		return ret;
	}
	snprintf(h->lib, sizeof(h->lib), "%s", path);
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(h->reason, sizeof(h->reason), "Out of memory");
		return -ENOMEM;
	}
	ret = lc_analyse(path, state ? state : LC_DEFAULT_STATE, r, err, sizeof(err));
	if (ret) {
		snprintf(h->reason, sizeof(h->reason), "%s", err);
		goto out;
	}
	snprintf(h->driver_version, sizeof(h->driver_version), "%s", r->version);
	h->version_mismatch = r->version_mismatch[0];
	snprintf(h->verdict, sizeof(h->verdict), "%s", lc_verdict_name(r->v));
	snprintf(h->reason, sizeof(h->reason), "%s", r->why);
	h->seconds = r->g.seconds;
	h->manifests = r->nstale;
	for (size_t i = 0; i < r->nstale; ++i) {
		if (!r->stale[i].stale)
			continue;
		if (!h->stale++)
			snprintf(h->reason, sizeof(h->reason), "%s: %s", r->stale[i].manifest, r->stale[i].reason);
	}
	if (h->stale)
		h->state = LC_HEALTH_STALE;
	else if (r->v == LC_UNSUPPORTED)
		h->state = LC_HEALTH_REFUSED;
	else if (r->v == LC_PARTIAL)
		h->state = LC_HEALTH_PARTIAL;
	else if (r->v == LC_UNPATCHED)
		h->state = LC_HEALTH_CLOSED;
	else
		h->state = LC_HEALTH_OPEN;
out:
	lc_report_free(r);
	free(r);
	return ret;
}
