// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/env.h"
#include "libcuda/report.h"
#include "libcuda/sha256.h"
#include "sys/nvdriver.h"

/* Messages quote paths and versions into fixed buffers; truncating them is fine. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static const char *const vname[] = {
	[LC_UNPATCHED] = "unpatched",
	[LC_PATCHED] = "patched",
	[LC_PARTIAL] = "partially-patched",
	[LC_UNSUPPORTED] = "unsupported-layout",
	[LC_NOT_NEEDED] = "not-needed",
};

const char *lc_verdict_name(enum lc_verdict v)
{
	return v <= LC_NOT_NEEDED ? vname[v] : "unknown";
}

/* The libcuda.so.1 the dynamic loader would pick, from its cache. */
static int default_lib(char *buf, size_t len)
{
	const char *cmds[] = { "/sbin/ldconfig -p 2>/dev/null", "ldconfig -p 2>/dev/null" };
	char line[4608];

	for (size_t c = 0; c < 2; ++c) {
		FILE *p = popen(cmds[c], "re");
		bool found = false;

		if (!p)
			continue;
		while (fgets(line, sizeof(line), p)) {
			char *arrow = strstr(line, "=> ");

			if (!arrow || strncmp(line + strspn(line, " \t"), "libcuda.so.1 ", 13) ||
			    !strstr(line, "x86-64"))
				continue;
			arrow[3 + strcspn(arrow + 3, "\n")] = 0;
			if (!found)
				snprintf(buf, len, "%s", arrow + 3);
			found = true;
		}
		pclose(p);
		if (found)
			return 0;
	}
	return -ENOENT;
}

int lc_pick_lib(const char *lib, char *path, size_t len, char *err, size_t errlen)
{
	char tmp[PATH_MAX];

	if (lib) {
		snprintf(tmp, sizeof(tmp), "%s", lib);
	} else if (default_lib(tmp, sizeof(tmp))) {
		snprintf(err, errlen, "No libcuda.so.1 in the dynamic loader cache (is the NVIDIA driver installed?); pass --lib PATH");
		return -ENOENT;
	}
	if (len < PATH_MAX || !realpath(tmp, path)) {
		int e = len < PATH_MAX ? ENAMETOOLONG : errno;

		/* a --lib that is not there is an argument error, not a missing driver */
		snprintf(err, errlen, "Unable to find `%s': %s", tmp, strerror(e));
		return -EINVAL;
	}
	return 0;
}

void lc_check_manifest(const char *mpath, const struct lc_manifest *m, struct lc_stale *s)
{
	char kver[64], h[65];

	memset(s, 0, sizeof(*s));
	snprintf(s->manifest, sizeof(s->manifest), "%s", mpath);
	nvs_nvdriver_version(kver, sizeof(kver));
	if (kver[0] && strcmp(kver, m->driver_version)) {
		s->stale = true;
		snprintf(s->reason, sizeof(s->reason), "the loaded NVIDIA driver is %s but the copy was made from %s",
			 kver, m->driver_version);
		return;
	}
	if (!strcmp(m->mode, "in-place")) {
		if (lc_sha256_file(m->output, h)) {
			s->stale = true;
			snprintf(s->reason, sizeof(s->reason), "the patched library %.4000s is gone", m->output);
		} else if (strcmp(h, m->output_sha256)) {
			s->stale = true;
			snprintf(s->reason, sizeof(s->reason),
				 "%.4000s changed since it was patched in place (driver upgrade?)", m->output);
		}
		return;
	}
	if (lc_sha256_file(m->source, h)) {
		s->stale = true;
		snprintf(s->reason, sizeof(s->reason), "the source library %.4000s is gone (driver upgrade?)", m->source);
	} else if (strcmp(h, m->source_sha256)) {
		s->stale = true;
		snprintf(s->reason, sizeof(s->reason),
			 "the installed %.4000s no longer matches the one this copy was made from (driver upgrade?)",
			 m->source);
	}
}

/*
 * In-place manifests are named for the library's file name and a hash of
 * its full path, so libraries of the same name in different directories
 * (the host's and a container tree's) keep separate records. Manifests of
 * earlier versions were named for the file name alone; they are still read
 * when they are about this very path.
 */
void lc_state_manifest_path(const char *state, const char *target, char *buf, size_t len)
{
	const char *b = strrchr(target, '/');
	char h[65];

	lc_sha256_hex((const uint8_t *)target, strlen(target), h);
	snprintf(buf, len, "%s/inplace-%s-%.12s.manifest", state, b ? b + 1 : target, h);
}

int lc_state_manifest_find(const char *state, const char *target, char *path, size_t len,
			   struct lc_manifest *m, char *err, size_t errlen)
{
	const char *b = strrchr(target, '/');
	int r;

	for (int old = 0; old < 2; ++old) {
		if (old)
			snprintf(path, len, "%s/inplace-%s.manifest", state, b ? b + 1 : target);
		else
			lc_state_manifest_path(state, target, path, len);
		r = lc_manifest_read(path, m, err, errlen);
		if (!r && strcmp(m->output, target)) {
			lc_manifest_free(m);
			r = -ENOENT;
		}
		if (r != -ENOENT)
			return r;
	}
	return -ENOENT;
}

/* Manifests that concern this library: beside it, in-place ones, on LD_LIBRARY_PATH. */
static size_t find_manifests(const char *lib, const char *state, struct lc_stale *out, size_t max,
			     struct lc_manifest *beside, bool *have_beside)
{
	char dirs[64][4096], path[4200], tmp[4096], *save = NULL, *tok;
	size_t nd = 0, n = 0;
	const char *llp = nvs_env_ld_library_path();
	char err[256];

	*have_beside = false;
	snprintf(tmp, sizeof(tmp), "%s", lib);
	snprintf(dirs[nd++], sizeof(dirs[0]), "%s", dirname(tmp));
	if (llp) {
		snprintf(tmp, sizeof(tmp), "%s", llp);
		for (tok = strtok_r(tmp, ":", &save); tok && nd < 64; tok = strtok_r(NULL, ":", &save))
			if (*tok && strcmp(tok, dirs[0]))
				snprintf(dirs[nd++], sizeof(dirs[0]), "%s", tok);
	}
	for (size_t i = 0; i < nd && n < max; ++i) {
		struct lc_manifest m;

		snprintf(path, sizeof(path), "%s/%s", dirs[i], LC_MANIFEST_NAME);
		if (lc_manifest_read(path, &m, err, sizeof(err)))
			continue;
		lc_check_manifest(path, &m, &out[n++]);
		if (i == 0) {
			*beside = m;
			*have_beside = true;
		} else {
			lc_manifest_free(&m);
		}
	}
	struct lc_manifest m;

	if (n < max && !lc_state_manifest_find(state, lib, path, sizeof(path), &m, err, sizeof(err))) {
		lc_check_manifest(path, &m, &out[n++]);
		if (!*have_beside && !strcmp(m.output, lib)) {
			*beside = m;
			*have_beside = true;
		} else {
			lc_manifest_free(&m);
		}
	}
	return n;
}

/* ---- analysis ---- */

void lc_report_free(struct lc_report *r)
{
	lc_gate_free(&r->g);
	if (r->elf_ok)
		lc_elf_close(&r->elf);
	if (r->have_beside)
		lc_manifest_free(&r->beside);
}

static void cross_check(struct lc_report *r)
{
	const struct lc_known *k = r->known;
	uint64_t got[64];
	size_t n = 0;

	for (size_t i = 0; i < r->g.nplan; ++i)
		for (int b = 0; b < r->g.plan[i].len && n < 64; ++b)
			if (r->g.plan[i].old[b] != r->g.plan[i].new[b])
				got[n++] = r->g.plan[i].off + b;
	r->known_match = k->field == r->g.field && k->mask == r->g.mask && n == k->nbytes;
	for (size_t i = 0; i < n && r->known_match; ++i) {
		bool f = false;

		for (size_t j = 0; j < k->nbytes; ++j)
			f |= k->bytes[j] == got[i];
		r->known_match = f;
	}
	snprintf(r->known_note, sizeof(r->known_note), "%s build %s (%s): %s", r->known_match ? "matches" : "DISAGREES WITH",
		 k->version, k->source, r->known_match ? "same field, mask and changed bytes" :
		 "the derived field, mask or changed bytes differ from the table");
}

/*
 * The driver version: the one embedded in the library (lc_elf_driver_version),
 * cross-checked against the file name. A library renamed to another
 * version is reported, and patched and recorded under its real one.
 */
static void version_of(struct lc_report *r)
{
	char emb[64];
	bool conflict = false;
	bool named = nvs_nvdriver_libcuda_version(r->path, r->name_version, sizeof(r->name_version));
	int n = lc_elf_driver_version(&r->elf, emb, sizeof(emb), &conflict);

	if (!named)
		r->name_version[0] = 0;
	if (n) {
		snprintf(r->version, sizeof(r->version), "%s", emb);
		r->version_source = "embedded";
		if (named && strcmp(emb, r->name_version))
			snprintf(r->version_mismatch, sizeof(r->version_mismatch),
				 "the file is named for driver %s but the library inside is %s", r->name_version, emb);
		else if (conflict)
			snprintf(r->version_mismatch, sizeof(r->version_mismatch),
				 "the library names more than one driver version; %s comes first", emb);
	} else if (named) {
		snprintf(r->version, sizeof(r->version), "%s", r->name_version);
		r->version_source = "file name";
	} else {
		snprintf(r->version, sizeof(r->version), "%s", r->known ? r->known->version : "unknown");
		r->version_source = r->known ? "known table" : "none";
	}
}

int lc_analyse(const char *path, const char *state, struct lc_report *r, char *err, size_t errlen)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	int ret = lc_elf_open(&r->elf, path, err, errlen);

	if (ret)
		return ret;
	r->elf_ok = true;
	if (!stat(path, &st))
		r->size = st.st_size;
	lc_sha256_mapped(r->elf.map, r->elf.size, r->sha);
	r->known = lc_known_by_hash(r->sha);
	version_of(r);
	lc_gate_analyse(&r->elf, &r->g);
	r->nstale = find_manifests(path, state, r->stale, LC_MAX_MANIFESTS, &r->beside, &r->have_beside);
	if (r->have_beside && strcmp(r->beside.output_sha256, r->sha) &&
	    strcmp(r->beside.source_sha256, r->sha)) {
		/* A manifest for some other file in the same directory. */
	}
	bool ours = r->have_beside && !strcmp(r->beside.output_sha256, r->sha);

	if (!r->g.located || !r->g.ok) {
		r->v = LC_UNSUPPORTED;
		snprintf(r->why, sizeof(r->why), "%s", r->g.reason);
		return 0;
	}
	if (r->known) {
		cross_check(r);
		if (!r->known_match) {
			r->v = LC_UNSUPPORTED;
			snprintf(r->why, sizeof(r->why), "the locator %s", r->known_note);
			return 0;
		}
	}
	if (!r->g.nplan) {
		if (ours) {
			r->v = LC_PATCHED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear; patched by nvsidecar (%s)",
				 r->g.mask, r->g.field, r->beside.created);
		} else if (r->g.already_set) {
			r->v = LC_PATCHED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear: %zu initialiser(s) already or in the bit; no nvsidecar manifest, so another tool or a hand edit patched it",
				 r->g.mask, r->g.field, r->g.already_set);
		} else {
			r->v = LC_NOT_NEEDED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear in this build: the gate is already open",
				 r->g.mask, r->g.field);
		}
		return 0;
	}
	if (ours || r->g.already_set) {
		r->v = LC_PARTIAL;
		snprintf(r->why, sizeof(r->why), "%zu initialiser(s) already set bit 0x%02x but %zu more rewrite(s) are needed; `patch' completes it",
			 r->g.already_set, r->g.mask, r->g.nplan);
	} else {
		r->v = LC_UNPATCHED;
		snprintf(r->why, sizeof(r->why), "bit 0x%02x of +0x%x is never set by the initialisers; %zu proven same-length rewrite(s) set it",
			 r->g.mask, r->g.field, r->g.nplan);
	}
	return 0;
}

bool lc_report_stale(const struct lc_report *r)
{
	for (size_t i = 0; i < r->nstale; ++i)
		if (r->stale[i].stale)
			return true;
	return false;
}
