// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar libcuda status|patch|verify|restore|env: find the GeForce
 * dma-buf / GPUDirect RDMA gate in a libcuda, write a patched copy (or,
 * with an explicit flag, patch in place with a backup), check the result
 * through the CUDA driver API, and notice when a driver upgrade has made a
 * patched copy stale.
 */
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "libnvsidecar.h"
#include "libcuda_elf.h"
#include "libcuda_gate.h"
#include "libcuda_known.h"
#include "libcuda_manifest.h"
#include "libcuda_sha256.h"
#include "libcuda_verify.h"
#include "subcommands.h"

/*
 * Messages embed paths of up to PATH_MAX into fixed buffers; a truncated
 * message is acceptable, so GCC's truncation analysis is off for this file.
 */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* Exit codes, documented in every --help. */
#define EX_OK		0
#define EX_ERR		1	/* bad input, I/O error, usage */
#define EX_REFUSED	2	/* unsupported layout / not provable / already patched */
#define EX_STALE	3	/* a patched copy no longer matches the driver */
#define EX_CLOSED	4	/* verify: the gate is closed (attributes 0, export refused) */

#define DEFAULT_STATE "/var/lib/nvsidecar/libcuda"

struct opts {
	const char *lib, *out, *state;
	bool json, dump, in_place, probe;
	const char *importer;
	int device;
	uint64_t bytes;
};

static const char *c_red = "", *c_grn = "", *c_yel = "", *c_bold = "", *c_off = "";

static void colours(void)
{
	if (isatty(1) && !getenv("NO_COLOR")) {
		c_red = "\033[31m";
		c_grn = "\033[32m";
		c_yel = "\033[33m";
		c_bold = "\033[1m";
		c_off = "\033[0m";
	}
}

static const char *exit_codes =
	"Exit codes: 0 done; 1 bad input or I/O error; 2 refused (unsupported or\n"
	"unprovable layout, or input already patched); 3 a patched copy is stale;\n"
	"4 (verify) the gate is closed.\n";

static void usage(FILE *f, const char *sub)
{
	if (!sub || !strcmp(sub, "libcuda")) {
		fprintf(f, "Usage: %s libcuda <status|patch|verify|restore|env> [--lib PATH] [--json] ...\n\n"
			   "Finds the GeForce dma-buf / GPUDirect RDMA gate in libcuda, writes a patched\n"
			   "copy, verifies it and detects stale copies after driver upgrades.\n"
			   "`%s libcuda <cmd> --help' describes each command.\n\n%s",
			PROG_NAME, PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "status")) {
		fprintf(f, "Usage: %s libcuda status [--lib PATH] [--state-dir DIR] [--json | --dump]\n\n"
			   "Analyses the library (default: the libcuda.so.1 the dynamic loader picks) and\n"
			   "prints the gate, every store to the capability byte with its effect, the\n"
			   "planned rewrites and a verdict: unpatched, patched, partially-patched,\n"
			   "unsupported-layout (with the reason) or not-needed. Patched copies whose\n"
			   "driver or source library changed since patching are reported as STALE.\n\n%s",
			PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "patch")) {
		fprintf(f, "Usage: %s libcuda patch --out DIR [--lib PATH] [--json]\n"
			   "       %s libcuda patch --in-place [--lib PATH] [--state-dir DIR] [--json]\n\n"
			   "Writes DIR/libcuda.so.<version> with the proven rewrites, the libcuda.so.1 and\n"
			   "libcuda.so links and %s, atomically. Running it again is a\n"
			   "no-op when the copy is current and rewrites it otherwise. --in-place replaces\n"
			   "the library itself, after a backup named by its SHA-256 in the state directory\n"
			   "(default %s); undo with `restore'.\n\n%s",
			PROG_NAME, PROG_NAME, LC_MANIFEST_NAME, DEFAULT_STATE, exit_codes);
	} else if (!strcmp(sub, "verify")) {
		fprintf(f, "Usage: %s libcuda verify [--lib DIR|PATH] [--device N] [--size BYTES]\n"
			   "          [--probe [--importer BDF]] [--json]\n\n"
			   "Loads the library in a child process, reads attributes 103, 110, 116, 117,\n"
			   "118, 124 and 146, allocates device memory and exports it as a dma-buf\n"
			   "(cuMemGetHandleForAddressRange, flags 0), and reports the fd and its size.\n"
			   "--probe hands the fd to the kernel module's dma-buf probe (needs root and\n"
			   "the nvsidecar module), attached on --importer (default: the GPU itself).\n\n%s",
			PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "restore")) {
		fprintf(f, "Usage: %s libcuda restore [--lib PATH] [--state-dir DIR] [--json]\n\n"
			   "Undoes `patch --in-place': puts the backup back after checking that the\n"
			   "library is still the patched file and the backup is the original.\n\n%s",
			PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "env")) {
		fprintf(f, "Usage: %s libcuda env (--out DIR | --lib PATH) [--json]\n\n"
			   "Prints the LD_LIBRARY_PATH line that makes programs load the patched copy.\n"
			   "Refuses (exit 3) when the copy is stale.\n\n%s",
			PROG_NAME, exit_codes);
	}
}

static int parse(int argc, const char *argv[], struct opts *o, const char *sub)
{
	memset(o, 0, sizeof(*o));
	o->bytes = 2 << 20;
	o->state = getenv("NVS_LIBCUDA_STATE") ? getenv("NVS_LIBCUDA_STATE") : DEFAULT_STATE;
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];
		bool more = i + 1 < argc;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, sub);
			return 1;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--dump") && !strcmp(sub, "status")) {
			o->dump = true;
		} else if (!strcmp(a, "--probe") && !strcmp(sub, "verify")) {
			o->probe = true;
		} else if (!strcmp(a, "--importer") && more && !strcmp(sub, "verify")) {
			o->importer = argv[++i];
		} else if (!strcmp(a, "--in-place") && !strcmp(sub, "patch")) {
			o->in_place = true;
		} else if (!strcmp(a, "--lib") && more) {
			o->lib = argv[++i];
		} else if (!strcmp(a, "--out") && more) {
			o->out = argv[++i];
		} else if (!strcmp(a, "--state-dir") && more) {
			o->state = argv[++i];
		} else if (!strcmp(a, "--device") && more) {
			char *end;

			o->device = strtol(argv[++i], &end, 10);
			if (*end || o->device < 0) {
				fprintf(stderr, "Invalid device ordinal: `%s'\n", argv[i]);
				return -1;
			}
		} else if (!strcmp(a, "--size") && more) {
			char *end;

			o->bytes = strtoull(argv[++i], &end, 0);
			if (*end || !o->bytes || o->bytes > (1ULL << 40)) {
				fprintf(stderr, "Invalid size: `%s'\n", argv[i]);
				return -1;
			}
		} else {
			fprintf(stderr, "Invalid argument: `%s'\n", a);
			usage(stderr, sub);
			return -1;
		}
	}
	return 0;
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

static int pick_lib(const struct opts *o, char *path, size_t len)
{
	char tmp[PATH_MAX];

	if (o->lib) {
		snprintf(tmp, sizeof(tmp), "%s", o->lib);
	} else if (default_lib(tmp, sizeof(tmp))) {
		fprintf(stderr, "No libcuda.so.1 in the dynamic loader cache (is the NVIDIA driver installed?); pass --lib PATH\n");
		return -ENOENT;
	}
	if (!realpath(tmp, path)) {
		int e = errno;

		fprintf(stderr, "Unable to find `%s': %s\n", tmp, strerror(e));
		return -e;
	}
	(void)len;
	return 0;
}

/* "535.261.03" from ".../libcuda.so.535.261.03". */
static bool version_from_name(const char *path, char *ver, size_t len)
{
	const char *b = strrchr(path, '/'), *p;

	b = b ? b + 1 : path;
	if (strncmp(b, "libcuda.so.", 11))
		return false;
	p = b + 11;
	if (!*p || strspn(p, "0123456789.") != strlen(p) || !strchr(p, '.'))
		return false;
	snprintf(ver, len, "%s", p);
	return true;
}

/* The running kernel driver's version, or "" when no NVIDIA driver is loaded. */
static void kernel_driver_version(char *ver, size_t len)
{
	const char *file = getenv("NVS_NVIDIA_VERSION_FILE") ? getenv("NVS_NVIDIA_VERSION_FILE") :
							      "/proc/driver/nvidia/version";
	char line[512];
	FILE *f = fopen(file, "re");

	ver[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, "Kernel Module");

		if (!k)
			continue;
		k += 13;
		k += strspn(k, " \t");
		if (k[0] == 'f' && !strncmp(k, "for ", 4))	/* "Kernel Module for aarch64" */
			continue;
		snprintf(ver, len, "%.*s", (int)strcspn(k, " \t\n"), k);
		break;
	}
	fclose(f);
}

static void now_iso(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- stale detection ---- */

struct stale {
	char manifest[4200];
	char reason[4200 + 256];
	bool stale;
};

static void check_manifest(const char *mpath, const struct lc_manifest *m, struct stale *s)
{
	char kver[64], h[65];

	memset(s, 0, sizeof(*s));
	snprintf(s->manifest, sizeof(s->manifest), "%s", mpath);
	kernel_driver_version(kver, sizeof(kver));
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

static void state_manifest_path(const char *state, const char *target, char *buf, size_t len)
{
	const char *b = strrchr(target, '/');

	snprintf(buf, len, "%s/inplace-%s.manifest", state, b ? b + 1 : target);
}

/* Manifests that concern this library: beside it, in-place ones, on LD_LIBRARY_PATH. */
static size_t find_manifests(const char *lib, const char *state, struct stale *out, size_t max,
			     struct lc_manifest *beside, bool *have_beside)
{
	char dirs[64][4096], path[4200], tmp[4096], *save = NULL, *tok;
	size_t nd = 0, n = 0;
	const char *llp = getenv("LD_LIBRARY_PATH");
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
		check_manifest(path, &m, &out[n++]);
		if (i == 0) {
			*beside = m;
			*have_beside = true;
		} else {
			lc_manifest_free(&m);
		}
	}
	state_manifest_path(state, lib, path, sizeof(path));
	struct lc_manifest m;

	if (n < max && !lc_manifest_read(path, &m, err, sizeof(err))) {
		check_manifest(path, &m, &out[n++]);
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

enum verdict { V_UNPATCHED, V_PATCHED, V_PARTIAL, V_UNSUPPORTED, V_NOT_NEEDED };
static const char *const vname[] = { "unpatched", "patched", "partially-patched", "unsupported-layout",
				     "not-needed" };

struct report {
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
	enum verdict v;
	char why[768];
	struct lc_manifest beside;
	bool have_beside;
	struct stale stale[16];
	size_t nstale;
};

static void report_free(struct report *r)
{
	lc_gate_free(&r->g);
	if (r->elf_ok)
		lc_elf_close(&r->elf);
	if (r->have_beside)
		lc_manifest_free(&r->beside);
}

static void cross_check(struct report *r)
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

/* Returns 0 when analysed (whatever the verdict), -errno on bad input. */
static int analyse(const char *path, const char *state, struct report *r, char *err, size_t errlen)
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
	lc_sha256_hex(r->elf.map, r->elf.size, r->sha);
	r->known = lc_known_by_hash(r->sha);
	if (!version_from_name(path, r->version, sizeof(r->version)))
		snprintf(r->version, sizeof(r->version), "%s", r->known ? r->known->version : "unknown");
	lc_gate_analyse(&r->elf, &r->g);
	r->nstale = find_manifests(path, state, r->stale, 16, &r->beside, &r->have_beside);
	if (r->have_beside && strcmp(r->beside.output_sha256, r->sha) &&
	    strcmp(r->beside.source_sha256, r->sha)) {
		/* A manifest for some other file in the same directory. */
	}
	bool ours = r->have_beside && !strcmp(r->beside.output_sha256, r->sha);

	if (!r->g.located || !r->g.ok) {
		r->v = V_UNSUPPORTED;
		snprintf(r->why, sizeof(r->why), "%s", r->g.reason);
		return 0;
	}
	if (r->known) {
		cross_check(r);
		if (!r->known_match) {
			r->v = V_UNSUPPORTED;
			snprintf(r->why, sizeof(r->why), "the locator %s", r->known_note);
			return 0;
		}
	}
	if (!r->g.nplan) {
		if (ours) {
			r->v = V_PATCHED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear; patched by nvsidecar (%s)",
				 r->g.mask, r->g.field, r->beside.created);
		} else if (r->g.already_set) {
			r->v = V_PATCHED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear: %zu initialiser(s) already or in the bit; no nvsidecar manifest, so another tool or a hand edit patched it",
				 r->g.mask, r->g.field, r->g.already_set);
		} else {
			r->v = V_NOT_NEEDED;
			snprintf(r->why, sizeof(r->why), "no store can leave bit 0x%02x of +0x%x clear in this build: the gate is already open",
				 r->g.mask, r->g.field);
		}
		return 0;
	}
	if (ours || r->g.already_set) {
		r->v = V_PARTIAL;
		snprintf(r->why, sizeof(r->why), "%zu initialiser(s) already set bit 0x%02x but %zu more rewrite(s) are needed; `patch' completes it",
			 r->g.already_set, r->g.mask, r->g.nplan);
	} else {
		r->v = V_UNPATCHED;
		snprintf(r->why, sizeof(r->why), "bit 0x%02x of +0x%x is never set by the initialisers; %zu proven same-length rewrite(s) set it",
			 r->g.mask, r->g.field, r->g.nplan);
	}
	return 0;
}

static bool any_stale(const struct report *r)
{
	for (size_t i = 0; i < r->nstale; ++i)
		if (r->stale[i].stale)
			return true;
	return false;
}

static void json_report(struct json *j, const struct report *r)
{
	const struct lc_gate *g = &r->g;
	char buf[64];

	json_str(j, "lib", r->path);
	json_str(j, "sha256", r->sha);
	json_uint(j, "size", r->size);
	json_str(j, "driver_version", r->version);
	json_str(j, "verdict", vname[r->v]);
	json_str(j, "reason", r->why);
	json_obj_open(j, "path");
#define HX(k, v) do { snprintf(buf, sizeof(buf), "0x%" PRIx64, (uint64_t)(v)); json_str(j, k, buf); } while (0)
	HX("cuDeviceGetAttribute", g->api);
	if (g->slot)
		HX("slot", g->slot);
	HX("implementation", g->impl);
	if (g->located) {
		HX("dispatcher", g->dispatcher);
		HX("jump_table", g->table);
		json_int(j, "table_entries", g->table_max + 1);
		if (g->branch[0])
			HX("attr110_branch", g->branch[0]);
		HX("attr116_branch", g->branch[1]);
		HX("attr124_branch", g->branch[2]);
	}
	json_obj_close(j);
	if (g->located) {
		json_obj_open(j, "capability");
		HX("field", g->field);
		HX("mask", g->mask);
		if (g->global)
			HX("global", g->global);
		else
			json_null(j, "global");
		json_str(j, "attr124_also_requires", g->extra);
		json_obj_close(j);
	}
	json_arr_open(j, "stores");
	for (size_t i = 0; i < g->nstores; ++i) {
		const struct lc_store *s = &g->stores[i];

		json_obj_open(j, NULL);
		HX("addr", s->addr);
		json_str(j, "insn", s->text);
		json_str(j, "effect", lc_effect_name(s->orig));
		json_str(j, "after_patch", lc_effect_name(s->now));
		HX("window", s->win_start);
		json_str(j, "note", s->note);
		json_obj_close(j);
	}
	json_arr_close(j);
	json_arr_open(j, "rewrites");
	for (size_t i = 0; i < g->nplan; ++i) {
		const struct lc_rewrite *w = &g->plan[i];
		char o[33], n[33];

		for (int b = 0; b < w->len; ++b) {
			sprintf(o + 2 * b, "%02x", w->old[b]);
			sprintf(n + 2 * b, "%02x", w->new[b]);
		}
		json_obj_open(j, NULL);
		HX("offset", w->off);
		HX("for_store", w->store);
		json_str(j, "old", o);
		json_str(j, "new", n);
		json_str(j, "from", w->from);
		json_str(j, "to", w->to);
		json_obj_close(j);
	}
	json_arr_close(j);
	if (r->known)
		json_str(j, "known_table", r->known_note);
	else
		json_null(j, "known_table");
	json_arr_open(j, "manifests");
	for (size_t i = 0; i < r->nstale; ++i) {
		json_obj_open(j, NULL);
		json_str(j, "path", r->stale[i].manifest);
		json_bool(j, "stale", r->stale[i].stale);
		json_str(j, "reason", r->stale[i].reason);
		json_obj_close(j);
	}
	json_arr_close(j);
	json_double(j, "analysis_seconds", g->seconds, 3);
#undef HX
}

static void human_report(const struct report *r)
{
	const struct lc_gate *g = &r->g;
	const char *vc = r->v == V_UNSUPPORTED ? c_red : r->v == V_PATCHED || r->v == V_NOT_NEEDED ? c_grn : c_yel;

	printf("%slibcuda%s: %s\n", c_bold, c_off, r->path);
	printf("  driver version: %s   size: %" PRIu64 " bytes\n  sha256: %s\n", r->version, r->size, r->sha);
	printf("  path: cuDeviceGetAttribute 0x%" PRIx64, g->api);
	if (g->slot)
		printf(" -> slot 0x%" PRIx64 " (R_X86_64_RELATIVE)", g->slot);
	printf(" -> 0x%" PRIx64, g->impl);
	if (g->located)
		printf(" -> dispatcher 0x%" PRIx64 " (jump table 0x%" PRIx64 ", %d entries)\n"
		       "  branches: attribute 110 at 0x%" PRIx64 ", 116 at 0x%" PRIx64 ", 124 at 0x%" PRIx64 "\n"
		       "  capability: byte +0x%x, mask 0x%02x; global GDR byte: ",
		       g->dispatcher, g->table, g->table_max + 1, g->branch[0], g->branch[1], g->branch[2],
		       g->field, g->mask);
	else
		printf("\n");
	if (g->located) {
		if (g->global)
			printf("0x%" PRIx64 " (cmpb $0x0)", g->global);
		else
			printf("none found");
		if (g->extra[0])
			printf("; attribute 124 also requires %s", g->extra);
		printf("\n  stores to the byte: %zu\n", g->nstores);
	}
	for (size_t i = 0; i < g->nstores; ++i) {
		const struct lc_store *s = &g->stores[i];

		printf("    0x%-8" PRIx64 " %-40s %-15s -> %-15s %s\n", s->addr, s->text, lc_effect_name(s->orig),
		       lc_effect_name(s->now), s->note);
	}
	for (size_t i = 0; i < g->nplan; ++i) {
		const struct lc_rewrite *w = &g->plan[i];

		printf("  rewrite at file offset 0x%" PRIx64 ":", w->off);
		for (int b = 0; b < w->len; ++b)
			printf(" %02x", w->old[b]);
		printf(" ->");
		for (int b = 0; b < w->len; ++b)
			printf(" %02x", w->new[b]);
		printf("   (%s -> %s)\n", w->from, w->to);
	}
	if (r->known)
		printf("  known-versions table: %s\n", r->known_note);
	printf("  analysis: %.3f s\n", g->seconds);
	printf("  %sverdict: %s%s: %s\n", vc, vname[r->v], c_off, r->why);
	for (size_t i = 0; i < r->nstale; ++i) {
		if (r->stale[i].stale)
			printf("  %s%sSTALE PATCHED COPY%s: %s: %s; run `%s libcuda patch' again\n", c_bold, c_red, c_off,
			       r->stale[i].manifest, r->stale[i].reason, PROG_NAME);
		else
			printf("  manifest %s: current\n", r->stale[i].manifest);
	}
}

static void dump_report(const struct report *r)
{
	const struct lc_gate *g = &r->g;

	printf("lib\t%s\nsha256\t%s\nversion\t%s\nverdict\t%s\nreason\t%s\n", r->path, r->sha, r->version,
	       vname[r->v], r->why);
	if (g->located)
		printf("field\t0x%x\nmask\t0x%02x\nglobal\t0x%" PRIx64 "\ndispatcher\t0x%" PRIx64 "\nbranch116\t0x%" PRIx64
		       "\nbranch124\t0x%" PRIx64 "\n", g->field, g->mask, g->global, g->dispatcher, g->branch[1], g->branch[2]);
	for (size_t i = 0; i < g->nstores; ++i)
		printf("store\t0x%" PRIx64 "\t%s\t%s\t%s\n", g->stores[i].addr, lc_effect_name(g->stores[i].orig),
		       lc_effect_name(g->stores[i].now), g->stores[i].text);
	for (size_t i = 0; i < g->nplan; ++i)
		printf("rewrite\t0x%" PRIx64 "\t%s\t%s\n", g->plan[i].off, g->plan[i].from, g->plan[i].to);
	for (size_t i = 0; i < r->nstale; ++i)
		printf("manifest\t%s\t%s\t%s\n", r->stale[i].manifest, r->stale[i].stale ? "stale" : "current",
		       r->stale[i].reason);
}

static int cmd_status(const struct opts *o)
{
	char path[PATH_MAX], err[512];
	struct report *r = calloc(1, sizeof(*r));
	int ret = EX_ERR;

	if (!r || pick_lib(o, path, sizeof(path)))
		goto out;
	if (analyse(path, o->state, r, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	if (o->json) {
		struct json j;

		json_init(&j, stdout, isatty(1));
		json_obj_open(&j, NULL);
		json_report(&j, r);
		json_obj_close(&j);
		json_end(&j);
	} else if (o->dump) {
		dump_report(r);
	} else {
		human_report(r);
	}
	ret = any_stale(r) ? EX_STALE : r->v == V_UNSUPPORTED ? EX_REFUSED : EX_OK;
	if (r->v == V_UNSUPPORTED)
		fprintf(stderr, "Unsupported libcuda layout in `%s': %s\n", path, r->why);
	if (any_stale(r))
		for (size_t i = 0; i < r->nstale; ++i)
			if (r->stale[i].stale)
				fprintf(stderr, "STALE patched libcuda: %s: %s\n", r->stale[i].manifest, r->stale[i].reason);
	report_free(r);
out:
	free(r);
	return ret;
}

/* ---- writing files ---- */

/*
 * Writes buf as dir/name: an unnamed O_TMPFILE in dir (a crash leaves
 * nothing behind), fsync, link under a temporary name, rename over the
 * target, fsync the directory.
 */
static int write_atomic(const char *dir, const char *name, const uint8_t *buf, size_t len, mode_t mode,
			char *err, size_t errlen)
{
	char tmp[PATH_MAX], final[PATH_MAX], proc[64];
	long delay = getenv("NVS_LIBCUDA_WRITE_DELAY_MS") ? atol(getenv("NVS_LIBCUDA_WRITE_DELAY_MS")) : 0;
	bool named = false;
	int fd, ret;

	snprintf(final, sizeof(final), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.nvsidecar-%d", dir, name, (int)getpid());
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
		named = true;
	}
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to create a file in `%s': %s%s", dir, strerror(errno),
			 errno == EROFS || errno == EACCES || errno == EPERM ? "; choose a writable --out directory" : "");
		return ret;
	}
	for (size_t done = 0; done < len;) {
		size_t chunk = len - done > (1 << 20) ? 1 << 20 : len - done;
		ssize_t n = write(fd, buf + done, chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			snprintf(err, errlen, "Unable to write `%s': %s%s", final, strerror(-ret),
				 ret == -ENOSPC ? "; free space there or choose another --out directory" : "");
			goto fail;
		}
		done += n;
		if (delay)	/* tests: widen the window for an interrupted write */
			usleep(delay * 1000);
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to write `%s': %s", final, strerror(errno));
		goto fail;
	}
	if (!named) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		unlink(tmp);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0) {
			ret = -errno;
			snprintf(err, errlen, "Unable to create `%s': %s", tmp, strerror(errno));
			goto fail;
		}
		named = true;
	}
	if (rename(tmp, final) < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to rename `%s' to `%s': %s", tmp, final, strerror(errno));
		goto fail;
	}
	close(fd);
	return lc_fsync_dir(dir);
fail:
	close(fd);
	if (named)
		unlink(tmp);
	return ret;
}

static int symlink_atomic(const char *dir, const char *name, const char *target, char *err, size_t errlen)
{
	char tmp[PATH_MAX], final[PATH_MAX], cur[PATH_MAX];
	ssize_t n;

	snprintf(final, sizeof(final), "%s/%s", dir, name);
	n = readlink(final, cur, sizeof(cur) - 1);
	if (n > 0 && (cur[n] = 0, !strcmp(cur, target)))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/.%s.nvsidecar-%d", dir, name, (int)getpid());
	unlink(tmp);
	if (symlink(target, tmp) < 0 || rename(tmp, final) < 0) {
		int e = errno;

		unlink(tmp);
		snprintf(err, errlen, "Unable to link `%s' to %s: %s", final, target, strerror(e));
		return -e;
	}
	return 0;
}

/* Removes temporaries a killed earlier run left (named only in a tiny window). */
static void clean_stale_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		const char *t = strstr(de->d_name, ".nvsidecar-");

		if (de->d_name[0] != '.' || !t || strspn(t + 11, "0123456789") != strlen(t + 11))
			continue;
		pid_t pid = atoi(t + 11);

		if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
}

static uint8_t *patched_image(const struct report *r, char *err, size_t errlen)
{
	uint8_t *buf = malloc(r->elf.size);

	if (!buf) {
		snprintf(err, errlen, "Out of memory for a %zu-byte copy", r->elf.size);
		return NULL;
	}
	memcpy(buf, r->elf.map, r->elf.size);
	for (size_t i = 0; i < r->g.nplan; ++i) {
		const struct lc_rewrite *w = &r->g.plan[i];

		if (w->off < 0 || (uint64_t)w->off + w->len > r->elf.size || memcmp(buf + w->off, w->old, w->len)) {
			snprintf(err, errlen, "Internal error: rewrite at 0x%" PRIx64 " does not match the file", w->off);
			free(buf);
			return NULL;
		}
		memcpy(buf + w->off, w->new, w->len);
	}
	return buf;
}

static void fill_manifest(struct lc_manifest *m, const struct report *r, const char *mode, const char *out,
			  const char *out_sha)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->tool_version, sizeof(m->tool_version), "%s", NVS_TOOL_VERSION);
	snprintf(m->mode, sizeof(m->mode), "%s", mode);
	snprintf(m->source, sizeof(m->source), "%s", r->path);
	snprintf(m->source_sha256, sizeof(m->source_sha256), "%s", r->sha);
	snprintf(m->driver_version, sizeof(m->driver_version), "%s", r->version);
	snprintf(m->output, sizeof(m->output), "%s", out);
	snprintf(m->output_sha256, sizeof(m->output_sha256), "%s", out_sha);
	m->field = r->g.field;
	m->mask = r->g.mask;
	now_iso(m->created, sizeof(m->created));
}

static void manifest_sites(struct lc_manifest *m, const struct report *r, struct lc_msite *sites)
{
	for (size_t i = 0; i < r->g.nplan; ++i) {
		const struct lc_rewrite *w = &r->g.plan[i];

		sites[i].off = w->off;
		sites[i].len = w->len;
		memcpy(sites[i].old, w->old, w->len);
		memcpy(sites[i].new, w->new, w->len);
		snprintf(sites[i].desc, sizeof(sites[i].desc), "%s -> %s (for the store at 0x%" PRIx64 ")", w->from,
			 w->to, w->store);
	}
	m->sites = sites;
	m->nsites = r->g.nplan;
}

/* The written file must analyse as fully patched before it is published. */
static int reverify(const char *path, const char *state, char *err, size_t errlen)
{
	struct report *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	ret = analyse(path, state, r, err, errlen);
	if (!ret && (r->g.nplan || !r->g.ok)) {
		snprintf(err, errlen, "The patched image does not analyse as patched (%s); nothing was published",
			 r->g.ok ? "rewrites still planned" : r->g.reason);
		ret = -EPROTO;
	}
	report_free(r);
	free(r);
	return ret;
}

static int cmd_patch(const struct opts *o)
{
	char path[PATH_MAX], err[1024], out_sha[65], name[128], outdir[PATH_MAX], final[PATH_MAX + 160];
	struct report *r = calloc(1, sizeof(*r));
	uint8_t *img = NULL;
	struct lc_manifest m;
	struct lc_msite *sites = NULL;
	struct stat st;
	int ret = EX_ERR;
	bool up_to_date = false;

	if (!r)
		goto out;
	if (!o->out == !o->in_place) {
		fprintf(stderr, "Pass exactly one of --out DIR (write a patched copy) and --in-place (replace the library, keeping a backup)\n");
		goto out;
	}
	if (pick_lib(o, path, sizeof(path)))
		goto out;
	if (analyse(path, o->state, r, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	if (r->v == V_UNSUPPORTED) {
		fprintf(stderr, "Refusing to patch `%s': %s\n", path, r->why);
		ret = EX_REFUSED;
		goto out;
	}
	if (r->v == V_PATCHED || r->v == V_NOT_NEEDED) {
		fprintf(stderr, "Refusing to patch `%s': it is already %s (%s); patch the original library instead%s%s\n",
			path, vname[r->v], r->why, r->have_beside ? ": " : "", r->have_beside ? r->beside.source : "");
		ret = EX_REFUSED;
		goto out;
	}
	if (!strcmp(r->version, "unknown")) {
		fprintf(stderr, "Unable to tell the driver version of `%s' (expected a name like libcuda.so.535.261.03); pass the versioned file, not a link\n",
			path);
		goto out;
	}
	img = patched_image(r, err, sizeof(err));
	if (!img) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	lc_sha256_hex(img, r->elf.size, out_sha);
	sites = calloc(r->g.nplan ? r->g.nplan : 1, sizeof(*sites));
	if (!sites)
		goto out;
	if (stat(path, &st) < 0)
		st.st_mode = 0644;

	if (o->out) {
		char cur[65], mpath[PATH_MAX + 64];

		if (!realpath(o->out, outdir)) {
			fprintf(stderr, "Unable to use the output directory `%s': %s\n", o->out, strerror(errno));
			goto out;
		}
		snprintf(name, sizeof(name), "libcuda.so.%s", r->version);
		snprintf(final, sizeof(final), "%s/%s", outdir, name);
		if (!strcmp(final, path)) {
			fprintf(stderr, "The output would overwrite the source `%s'; use --in-place for that, or another --out directory\n",
				path);
			goto out;
		}
		clean_stale_temps(outdir);
		snprintf(mpath, sizeof(mpath), "%s/%s", outdir, LC_MANIFEST_NAME);
		if (!lc_sha256_file(final, cur) && !strcmp(cur, out_sha)) {
			struct lc_manifest old;

			if (!lc_manifest_read(mpath, &old, err, sizeof(err))) {
				up_to_date = !strcmp(old.source_sha256, r->sha) && !strcmp(old.output_sha256, out_sha);
				lc_manifest_free(&old);
			}
		}
		if (!up_to_date) {
			if (write_atomic(outdir, name, img, r->elf.size, st.st_mode & 0777, err, sizeof(err)) ||
			    reverify(final, o->state, err, sizeof(err))) {
				fprintf(stderr, "%s\n", err);
				goto out;
			}
		}
		if (symlink_atomic(outdir, "libcuda.so.1", name, err, sizeof(err)) ||
		    symlink_atomic(outdir, "libcuda.so", "libcuda.so.1", err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			goto out;
		}
		fill_manifest(&m, r, "copy", final, out_sha);
		manifest_sites(&m, r, sites);
		if (!up_to_date && lc_manifest_write(mpath, &m, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			goto out;
		}
		lc_fsync_dir(outdir);
	} else {
		char backup[PATH_MAX], mpath[PATH_MAX], dir[PATH_MAX], bsha[65];
		const char *b = strrchr(path, '/') + 1;

		if (mkdir(o->state, 0755) < 0 && errno != EEXIST) {
			/* parents too: /var/lib/nvsidecar/libcuda */
			char p[PATH_MAX];

			snprintf(p, sizeof(p), "%s", o->state);
			for (char *s = p + 1; *s; ++s)
				if (*s == '/') {
					*s = 0;
					mkdir(p, 0755);
					*s = '/';
				}
			if (mkdir(o->state, 0755) < 0 && errno != EEXIST) {
				fprintf(stderr, "Unable to create the state directory `%s': %s\n", o->state, strerror(errno));
				goto out;
			}
		}
		snprintf(name, sizeof(name), "backup-%s.so", r->sha);
		snprintf(backup, sizeof(backup), "%s/%s", o->state, name);
		if (lc_sha256_file(backup, bsha) || strcmp(bsha, r->sha)) {
			if (write_atomic(o->state, name, r->elf.map, r->elf.size, 0444, err, sizeof(err))) {
				fprintf(stderr, "Unable to back up `%s': %s\n", path, err);
				goto out;
			}
		}
		if (lc_sha256_file(backup, bsha) || strcmp(bsha, r->sha)) {
			fprintf(stderr, "The backup `%s' does not match `%s'; not patching\n", backup, path);
			goto out;
		}
		state_manifest_path(o->state, path, mpath, sizeof(mpath));
		fill_manifest(&m, r, "in-place", path, out_sha);
		snprintf(m.backup, sizeof(m.backup), "%s", backup);
		manifest_sites(&m, r, sites);
		/* The manifest goes first: `restore' needs it if we die below. */
		if (lc_manifest_write(mpath, &m, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			goto out;
		}
		snprintf(dir, sizeof(dir), "%s", path);
		snprintf(dir, sizeof(dir), "%.*s", (int)(b - 1 - path), path);
		if (write_atomic(dir, b, img, r->elf.size, st.st_mode & 0777, err, sizeof(err))) {
			fprintf(stderr, "%s (the library is unchanged)\n", err);
			unlink(mpath);
			goto out;
		}
		snprintf(final, sizeof(final), "%s", path);
	}
	if (o->json) {
		struct json j;

		json_init(&j, stdout, isatty(1));
		json_obj_open(&j, NULL);
		json_str(&j, "result", up_to_date ? "up-to-date" : "patched");
		json_str(&j, "mode", o->in_place ? "in-place" : "copy");
		json_str(&j, "source", path);
		json_str(&j, "source_sha256", r->sha);
		json_str(&j, "output", final);
		json_str(&j, "output_sha256", out_sha);
		json_str(&j, "driver_version", r->version);
		json_arr_open(&j, "sites");
		for (size_t i = 0; i < m.nsites; ++i) {
			char off[32];

			snprintf(off, sizeof(off), "0x%" PRIx64, m.sites[i].off);
			json_obj_open(&j, NULL);
			json_str(&j, "offset", off);
			json_str(&j, "change", m.sites[i].desc);
			json_obj_close(&j);
		}
		json_arr_close(&j);
		json_obj_close(&j);
		json_end(&j);
	} else {
		printf("%s%s%s: %s\n", c_grn, up_to_date ? "Up to date" : "Patched", c_off, final);
		for (size_t i = 0; i < m.nsites; ++i)
			printf("  0x%-8" PRIx64 " %s\n", m.sites[i].off, m.sites[i].desc);
		if (o->out)
			printf("Use it with:\n  export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n", outdir);
		else
			printf("Backup: %s (undo with `%s libcuda restore --lib %s')\n", m.backup, PROG_NAME, path);
	}
	ret = EX_OK;
out:
	free(sites);
	free(img);
	if (r)
		report_free(r);
	free(r);
	return ret;
}

static int cmd_restore(const struct opts *o)
{
	char path[PATH_MAX], mpath[PATH_MAX], err[1024], cur[65], bsha[65], dir[PATH_MAX];
	struct lc_manifest m;
	struct lc_elf e;
	struct stat st;
	int ret = EX_ERR, r;

	if (pick_lib(o, path, sizeof(path)))
		return EX_ERR;
	state_manifest_path(o->state, path, mpath, sizeof(mpath));
	r = lc_manifest_read(mpath, &m, err, sizeof(err));
	if (r) {
		if (r == -ENOENT)
			fprintf(stderr, "No in-place patch of `%s' is recorded in `%s'; nothing to restore\n", path, o->state);
		else
			fprintf(stderr, "%s\n", err);
		return EX_ERR;
	}
	if (strcmp(m.output, path)) {
		fprintf(stderr, "The manifest `%s' is for `%s', not `%s'\n", mpath, m.output, path);
		goto out;
	}
	if (lc_sha256_file(path, cur) || strcmp(cur, m.output_sha256)) {
		fprintf(stderr, "`%s' is not the file nvsidecar patched (hash differs: a driver upgrade may have replaced it); refusing to overwrite it with the old backup\n",
			path);
		goto out;
	}
	if (lc_sha256_file(m.backup, bsha) || strcmp(bsha, m.source_sha256)) {
		fprintf(stderr, "The backup `%s' is missing or does not match the recorded original (sha256 %s); not restoring\n",
			m.backup, m.source_sha256);
		goto out;
	}
	if (lc_elf_open(&e, m.backup, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	if (stat(path, &st) < 0)
		st.st_mode = 0644;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	if (write_atomic(dir, strrchr(path, '/') + 1, e.map, e.size, st.st_mode & 0777, err, sizeof(err))) {
		fprintf(stderr, "%s (the library is unchanged)\n", err);
		lc_elf_close(&e);
		goto out;
	}
	lc_elf_close(&e);
	unlink(mpath);
	lc_fsync_dir(o->state);
	if (o->json) {
		struct json j;

		json_init(&j, stdout, isatty(1));
		json_obj_open(&j, NULL);
		json_str(&j, "result", "restored");
		json_str(&j, "lib", path);
		json_str(&j, "sha256", m.source_sha256);
		json_str(&j, "backup", m.backup);
		json_obj_close(&j);
		json_end(&j);
	} else {
		printf("Restored %s from %s (sha256 %s)\n", path, m.backup, m.source_sha256);
	}
	ret = EX_OK;
out:
	lc_manifest_free(&m);
	return ret;
}

static int cmd_env(const struct opts *o)
{
	char dir[PATH_MAX], tmp[PATH_MAX], mpath[PATH_MAX + 64], err[512];
	struct lc_manifest m;
	struct stale s;
	int r;

	if (o->out) {
		snprintf(tmp, sizeof(tmp), "%s", o->out);
	} else if (o->lib) {
		struct stat st;

		if (!stat(o->lib, &st) && S_ISDIR(st.st_mode))
			snprintf(tmp, sizeof(tmp), "%s", o->lib);
		else {
			char t2[PATH_MAX];

			snprintf(t2, sizeof(t2), "%s", o->lib);
			snprintf(tmp, sizeof(tmp), "%s", dirname(t2));
		}
	} else {
		fprintf(stderr, "Which patched copy? Pass --out DIR (the directory given to `patch --out')\n");
		return EX_ERR;
	}
	if (!realpath(tmp, dir)) {
		fprintf(stderr, "Unable to find `%s': %s\n", tmp, strerror(errno));
		return EX_ERR;
	}
	snprintf(mpath, sizeof(mpath), "%s/%s", dir, LC_MANIFEST_NAME);
	r = lc_manifest_read(mpath, &m, err, sizeof(err));
	if (r) {
		fprintf(stderr, r == -ENOENT ? "No patched copy in `%s' (no %s); run `%s libcuda patch --out %s' first\n" :
					      "%s\n", r == -ENOENT ? dir : err, LC_MANIFEST_NAME, PROG_NAME, dir);
		return EX_ERR;
	}
	check_manifest(mpath, &m, &s);
	lc_manifest_free(&m);
	if (s.stale) {
		fprintf(stderr, "STALE patched libcuda in %s: %s; run `%s libcuda patch --out %s' again\n", dir,
			s.reason, PROG_NAME, dir);
		return EX_STALE;
	}
	if (o->json) {
		struct json j;
		char v[PATH_MAX + 64];
		const char *llp = getenv("LD_LIBRARY_PATH");

		snprintf(v, sizeof(v), "%s%s%s", dir, llp && *llp ? ":" : "", llp ? llp : "");
		json_init(&j, stdout, isatty(1));
		json_obj_open(&j, NULL);
		json_str(&j, "LD_LIBRARY_PATH", v);
		json_str(&j, "dir", dir);
		json_obj_close(&j);
		json_end(&j);
	} else {
		printf("export LD_LIBRARY_PATH='%s'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n", dir);
	}
	return EX_OK;
}

/* Same PCI function? CUDA prints "00000000:0A:00.0", the kernel "0000:0a:00.0". */
static bool same_busid(const char *a, const char *b)
{
	unsigned int d1, b1, s1, f1, d2, b2, s2, f2;

	return sscanf(a, "%x:%x:%x.%x", &d1, &b1, &s1, &f1) == 4 &&
	       sscanf(b, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) == 4 &&
	       d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}

/*
 * Runs in the verify child while the CUDA allocation is alive: the kernel
 * imports the fd exactly as an RDMA driver would and says where it maps.
 */
static int probe_hook(int fd, uint64_t size, int device, const char *busid, void *arg,
		      char *msg, size_t len)
{
	const char *importer = arg;
	struct nvs_dmabuf_result res;
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_handle *h;
	int gpu = NVS_GPU_ANY;
	size_t n = 0;
	int rc;

	(void)size;
	(void)device;
	rc = nvs_open(&h);
	if (rc) {
		snprintf(msg, len, "%s", nvs_last_error(NULL));
		return rc;
	}
	/* Compare against BAR1 of the GPU that exported the memory. */
	if (busid[0] && !nvs_gpu_list(h, &gpus, &n))
		for (size_t i = 0; i < n; ++i)
			if (same_busid(gpus[i].busid, busid))
				gpu = (int)gpus[i].index;
	free(gpus);
	rc = nvs_dmabuf_probe(h, fd, importer, gpu, &res);
	if (rc)
		snprintf(msg, len, "probe refused: %s", nvs_last_error(h));
	else if (res.err)
		snprintf(msg, len, "failed at %s: %s", nvs_dmabuf_step_name(res.step), strerror(res.err));
	else
		snprintf(msg, len, "exporter %s, importer %s, %u entries, %" PRIu64 " bytes mapped, verdict %s, p2p %s",
			 res.exporter, res.importer, res.nents, res.mapped,
			 nvs_dmabuf_verdict_name(res.verdict), nvs_p2p_name(res.p2p));
	nvs_close(h);
	return rc ? rc : -res.err;
}

static int cmd_verify(const struct opts *o)
{
	struct lc_verify_opts vo = { .device = o->device, .bytes = o->bytes };
	struct lc_verify_result *r = calloc(1, sizeof(*r));
	char path[PATH_MAX];
	int ret = EX_ERR, rc;
	bool gate_open;

	if (!r)
		return EX_ERR;
	if (o->lib) {
		vo.lib = o->lib;
	} else {
		if (pick_lib(o, path, sizeof(path))) {
			free(r);
			return EX_ERR;
		}
		vo.lib = path;
	}
	if (o->probe) {
		vo.hook = probe_hook;
		vo.hook_arg = (void *)o->importer;
	}
	rc = lc_verify(&vo, r);
	gate_open = r->stage == 6 && !r->export_rc && r->fd >= 0;
	if (o->json) {
		struct json j;

		json_init(&j, stdout, isatty(1));
		json_obj_open(&j, NULL);
		json_str(&j, "lib", r->loaded);
		json_int(&j, "driver_version", r->driver_version);
		json_int(&j, "devices", r->ndevices);
		json_int(&j, "device", o->device);
		json_obj_open(&j, "attributes");
		for (int i = 0; i < LC_VERIFY_NATTR && r->stage >= 3; ++i) {
			char k[80];

			snprintf(k, sizeof(k), "%d", lc_verify_attrs[i]);
			json_obj_open(&j, k);
			json_str(&j, "name", lc_verify_attr_names[i]);
			json_int(&j, "value", r->attr[i]);
			json_int(&j, "result", r->attr_rc[i]);
			json_obj_close(&j);
		}
		json_obj_close(&j);
		if (r->stage >= 5) {
			json_int(&j, "export_result", r->export_rc);
			json_int(&j, "fd", r->fd);
			json_uint(&j, "size", r->size);
			json_str(&j, "fd_kind", r->fd_kind);
		}
		if (r->hook_ran) {
			json_int(&j, "dmabuf_probe_result", r->hook_rc);
			json_str(&j, "dmabuf_probe", r->hook_msg);
		}
		json_bool(&j, "dma_buf_export", gate_open);
		json_str(&j, "error", r->error[0] ? r->error : NULL);
		json_obj_close(&j);
		json_end(&j);
	} else {
		printf("%slibcuda verify%s: %s (driver API %d, %d device(s))\n", c_bold, c_off, r->loaded,
		       r->driver_version, r->ndevices);
		for (int i = 0; i < LC_VERIFY_NATTR && r->stage >= 3; ++i)
			printf("  %3d %-45s = %d%s\n", lc_verify_attrs[i], lc_verify_attr_names[i], r->attr[i],
			       r->attr_rc[i] ? " (query failed)" : "");
		if (r->stage >= 5) {
			if (gate_open)
				printf("  cuMemGetHandleForAddressRange(DMA_BUF_FD, flags 0): %sfd %d%s, %" PRIu64 " bytes, %s\n",
				       c_grn, r->fd, c_off, r->size, r->fd_kind);
			else
				printf("  cuMemGetHandleForAddressRange(DMA_BUF_FD, flags 0): %serror %d%s%s\n", c_red,
				       r->export_rc, c_off, r->export_rc == 801 ? " (CUDA_ERROR_NOT_SUPPORTED: the gate is closed)" : "");
		}
		if (r->hook_ran)
			printf("  kernel dma-buf probe: %s%s%s\n", r->hook_rc ? c_red : c_grn, r->hook_msg, c_off);
		if (r->error[0])
			fprintf(stderr, "%s\n", r->error);
	}
	if (rc || (r->stage < 5 && r->error[0]))
		ret = EX_ERR;
	else
		ret = !gate_open ? EX_CLOSED : (o->probe && r->hook_rc) ? EX_ERR : EX_OK;
	free(r);
	return ret;
}

int libcuda_main(int argc, const char *argv[])
{
	static const struct {
		const char *name;
		int (*fn)(const struct opts *o);
	} cmds[] = {
		{ "status", cmd_status }, { "patch", cmd_patch }, { "verify", cmd_verify },
		{ "restore", cmd_restore }, { "env", cmd_env },
	};
	struct opts o;
	int r;

	colours();
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout, "libcuda");
		return argc < 2 ? EX_ERR : EX_OK;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); ++i) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		r = parse(argc - 1, argv + 1, &o, cmds[i].name);
		if (r)
			return r > 0 ? EX_OK : EX_ERR;
		return cmds[i].fn(&o);
	}
	fprintf(stderr, "Invalid libcuda command: `%s'\n", argv[1]);
	usage(stderr, "libcuda");
	return EX_ERR;
}
