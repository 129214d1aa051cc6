// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar libcuda status|patch|verify|restore|env: find the GeForce
 * dma-buf / GPUDirect RDMA gate in a libcuda, write a patched copy (or,
 * with an explicit flag, patch in place with a backup), check the result
 * through the CUDA driver API, and notice when a driver upgrade has made a
 * patched copy stale. The engine is libcuda/; this file asks and shows.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/dump_libcuda.h"
#include "cli/row_libcuda.h"
#include "cli/gpu.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/busid.h"
#include "lib/env.h"
#include "lib/exit.h"
#include "lib/parse.h"
#include "lib/text.h"
#include "libcuda/patch.h"
#include "libcuda/report.h"
#include "libcuda/verify.h"
#include "libnvsidecar.h"

/*
 * Messages embed paths of up to PATH_MAX into fixed buffers; a truncated
 * message is acceptable, so GCC's truncation analysis is off for this file.
 */
#pragma GCC diagnostic ignored "-Wformat-truncation"

struct opts {
	const char *lib, *out, *state;
	bool dump, in_place, probe, state_given;
	char state_abs[2 * PATH_MAX + 2];	/* state, when relative, made absolute */
	const char *importer;
	int device;
	uint64_t bytes;
};

static const char *exit_codes =
	"Exit codes (nvsidecar(8) has the table): 0 done, or nothing to do (patch of\n"
	"a library whose gate is already open, restore of one that is not patched);\n"
	"1 failed (I/O error, a patched library with no backup to restore, verify's\n"
	"child timed out, or its export is not a dma-buf); 2 invalid arguments, an\n"
	"input that is not a usable libcuda (a special file, over 256 MiB, no cu*\n"
	"driver API), or a refused layout (unsupported-layout: no provable patch,\n"
	"or a written image that does not read back patched; the reason is\n"
	"printed); 3 no libcuda or no CUDA driver or device; 4 permission denied;\n"
	"6 (verify) the gate is closed; 9 a patched copy is stale.\n";

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
			   "no-op when the copy is current and rewrites it otherwise. DIR is created when\n"
			   "missing; a libcuda file or link in it that nvsidecar did not make is never\n"
			   "replaced (exit 2), and DIR may not be the source library's directory.\n"
			   "--in-place replaces the library itself, after a backup named by its SHA-256\n"
			   "in the state directory (default %s); undo with `restore'.\n"
			   "The written image is analysed again before it gets its name; unless it reads\n"
			   "back patched, nothing is published (exit 2, unsupported-layout).\n\n%s",
			PROG_NAME, PROG_NAME, LC_MANIFEST_NAME, LC_DEFAULT_STATE, exit_codes);
	} else if (!strcmp(sub, "verify")) {
		fprintf(f, "Usage: %s libcuda verify [--lib DIR|PATH] [--device N] [--size BYTES]\n"
			   "          [--probe [--importer BDF]] [--json]\n\n"
			   "Loads the library in a child process, reads attributes 103, 110, 116, 117,\n"
			   "118, 124 and 146, allocates device memory and exports it as a dma-buf\n"
			   "(cuMemGetHandleForAddressRange, flags 0), and reports the fd and its size.\n"
			   "The export passes only when the fd is a dma-buf: one that is some other\n"
			   "file (which no RDMA driver can import) fails, exit 1; a refused export is\n"
			   "the closed gate, exit 6. A --lib that is a patched copy must be current\n"
			   "(exit 9 when stale).\n"
			   "--size takes bytes with an optional K, M or G suffix (default 2M).\n"
			   "--probe hands the fd to the kernel module's dma-buf probe (needs root and\n"
			   "the nvsidecar module), attached on --importer (default: the GPU itself).\n\n%s",
			PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "restore")) {
		fprintf(f, "Usage: %s libcuda restore [--lib PATH] [--state-dir DIR] [--json]\n\n"
			   "Undoes `patch --in-place': puts the backup back after checking that the\n"
			   "library is still the patched file and the backup is the original, then\n"
			   "removes the backup and its record. A backup that another in-place record\n"
			   "still names (a second library with the same original) is kept, and restore\n"
			   "names that record and the library to restore next. Nothing recorded and\n"
			   "nothing patched is nothing to do (exit 0).\n\n%s",
			PROG_NAME, exit_codes);
	} else if (!strcmp(sub, "env")) {
		fprintf(f, "Usage: %s libcuda env (--out DIR | --lib PATH) [--json]\n\n"
			   "Prints the LD_LIBRARY_PATH line that makes programs load the patched copy.\n"
			   "Refuses (exit 9) when the copy is stale.\n\n%s",
			PROG_NAME, exit_codes);
	}
}

/*
 * A relative state directory (--state-dir, NVS_LIBCUDA_STATE) as the
 * absolute one it names here: the in-place manifest records its backup's
 * path, and the restore a patch hints at (restore_line()) names the
 * directory, both for use from any other directory later.
 */
static void absolute_state(struct opts *o)
{
	const char *state = o->state;
	char cwd[PATH_MAX];
	bool here;
	int n;

	if (state[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	while (state[0] == '.' && state[1] == '/')
		state += 2 + strspn(state + 2, "/");
	here = !*state || !strcmp(state, ".");
	n = snprintf(o->state_abs, sizeof(o->state_abs), "%s%s%s", cwd,
		     here || !strcmp(cwd, "/") ? "" : "/", here ? "" : state);
	if (n > 0 && (size_t)n < sizeof(o->state_abs))
		o->state = o->state_abs;
}

/* Returns 0 to run, 1 after --help, or NVS_EX_USAGE (reported). */
static int parse(int argc, const char *argv[], struct opts *o, const char *sub)
{
	struct nvs_args_seen seen = { 0 };
	char usub[32];

	snprintf(usub, sizeof(usub), "libcuda %s", sub);
	memset(o, 0, sizeof(*o));
	o->bytes = 2 << 20;
	o->state = nvs_env_libcuda_state(LC_DEFAULT_STATE);
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, sub);
			return 1;
		} else if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (!strcmp(a, "--dump") && !strcmp(sub, "status")) {
			o->dump = true;
		} else if (!strcmp(a, "--probe") && !strcmp(sub, "verify")) {
			o->probe = true;
		} else if (!strcmp(a, "--in-place") && !strcmp(sub, "patch")) {
			o->in_place = true;
		} else if (!v && (!strcmp(a, "--importer") || !strcmp(a, "--lib") || !strcmp(a, "--out") ||
				  !strcmp(a, "--state-dir") || !strcmp(a, "--device") || !strcmp(a, "--size"))) {
			return out_usage(usub, "Missing value for `%s'", a);
		} else if (v && (!strcmp(a, "--importer") || !strcmp(a, "--lib") || !strcmp(a, "--out") ||
				 !strcmp(a, "--state-dir") || !strcmp(a, "--device") || !strcmp(a, "--size")) &&
			   nvs_arg_twice(&seen, usub, a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "--importer") && !strcmp(sub, "verify")) {
			o->importer = argv[++i];
			if (!nvs_bdf_ok(o->importer))
				return out_usage(usub, "Invalid --importer (a PCI bus id such as 0000:41:00.0): `%s'",
						 o->importer);
		} else if (!strcmp(a, "--lib") || !strcmp(a, "--out") || !strcmp(a, "--state-dir")) {
			if (!*v)
				return out_usage(usub, "Empty value for `%s'", a);
			*(a[2] == 'l' ? &o->lib : a[2] == 'o' ? &o->out : &o->state) = argv[++i];
			o->state_given |= a[2] == 's';
		} else if (!strcmp(a, "--device")) {
			if (nvs_parse_u64(argv[++i], 0, INT32_MAX, &n))
				return out_usage(usub, "Invalid device ordinal (a CUDA device number): `%s'", argv[i]);
			o->device = (int)n;
		} else if (!strcmp(a, "--size")) {
			if (nvs_parse_size(argv[++i], 1, 1ULL << 40, 0, &o->bytes))
				return out_usage(usub, "Invalid size (1 byte to 1T, with an optional K, M or G suffix): `%s'",
						 argv[i]);
		} else {
			/* what this action takes: parse() refuses the others' */
			return nvs_arg_invalid(usub, a, !strcmp(sub, "status") ? "--dump --lib= --out= --state-dir= --device= --size=" :
						 !strcmp(sub, "verify") ? "--probe --importer= --lib= --out= --state-dir= --device= --size=" :
						 !strcmp(sub, "patch") ? "--in-place --lib= --out= --state-dir= --device= --size=" :
						 "--lib= --out= --state-dir= --device= --size=");
		}
	}
	if (out_json() && o->dump)
		return out_usage(usub, "Choose one of --json and --dump");
	/* the importer is the probe's: without --probe it would be ignored */
	if (o->importer && !o->probe)
		return out_usage(usub, "--importer only applies to --probe: add --probe, or drop --importer");
	absolute_state(o);
	return 0;
}

/* The library to work on, or the exit code (reported). */
static int pick(const struct opts *o, char *path, size_t len)
{
	char err[PATH_MAX + 128];
	int ret = lc_pick_lib(o->lib, path, len, err, sizeof(err));

	if (!ret)
		return NVS_EX_OK;
	return out_fail(ret == -ENOENT ? NVS_EX_MISSING : NVS_EX_USAGE, "%s", err);
}

/* lc_elf_open() and I/O failures to the table. */
static int exit_for(int ret)
{
	switch (-ret) {
	case ENOEXEC: case EINVAL: case EISDIR: case ENOTDIR: case ENAMETOOLONG:
	case EFBIG:	/* larger than any libcuda: lc_elf_open's size limit */
		return NVS_EX_USAGE;
	case EPERM: case EACCES:
		return NVS_EX_PERM;
	default:
		return NVS_EX_FAIL;
	}
}

/* ---- status ---- */

/*
 * Bulk writes whose constant length covers the byte. Those into the device
 * structure are a refusal (the reason says so); the ones whose destination
 * is not proven are listed, the stack and fresh allocations only in JSON.
 */
static void show_bulk(const struct lc_gate *g)
{
	size_t unproven = 0;

	out_arr(OUT_JSON, "bulk_writes");
	for (size_t i = 0; i < g->nbulk; ++i) {
		const struct lc_bulk *b = &g->bulk[i];
		char dest[32];
		enum out_where w = b->dest == LC_DEST_UNPROVEN ? OUT_ANY : OUT_JSON;

		unproven += b->dest == LC_DEST_UNPROVEN;
		snprintf(dest, sizeof(dest), "%s%+lld", b->base, (long long)b->at);
		if (unproven == 1 && w == OUT_ANY)
			out_text("  bulk writes over the byte whose destination is not proven to be a device (see docs/libcuda.md, Limits):\n");
		out_obj(OUT_JSON, NULL);
		out_hex(w, "addr", "    0x%-8llx ", b->addr);
		out_str(w, "what", "%-10s ", b->what);
		out_uint(w, "length", "%llu bytes ", b->len);
		out_str(w, "destination", "to %s\n", dest);
		out_str(OUT_JSON, "kind", NULL, lc_dest_name(b->dest));
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
}

static void show_report(const struct lc_report *r)
{
	const struct lc_gate *g = &r->g;
	enum out_color vc = r->v == LC_UNSUPPORTED ? OUT_BAD :
			    r->v == LC_PATCHED || r->v == LC_NOT_NEEDED ? OUT_GOOD : OUT_WARN;

	out_text("%slibcuda%s: ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "lib", "%s\n", r->path);
	out_str(OUT_ANY, "sha256", NULL, r->sha);
	out_uint(OUT_JSON, "size", NULL, r->size);
	out_str(OUT_ANY, "driver_version", "  driver version: %s", r->version);
	out_str(OUT_ANY, "version_source", " (%s)", r->version_source);
	out_str(OUT_JSON, "name_version", NULL, r->name_version[0] ? r->name_version : NULL);
	out_uint(OUT_TEXT, NULL, "   size: %llu bytes\n", r->size);
	if (r->version_mismatch[0])
		out_cstr(OUT_TEXT, OUT_WARN, NULL, "  %s", "VERSION MISMATCH");
	out_str(r->version_mismatch[0] ? OUT_ANY : OUT_JSON, "version_mismatch", ": %s\n",
		r->version_mismatch[0] ? r->version_mismatch : NULL);
	out_str(OUT_TEXT, NULL, "  sha256: %s\n", r->sha);
	out_str(OUT_JSON, "verdict", NULL, lc_verdict_name(r->v));
	out_str(OUT_JSON, "reason", NULL, r->why);

	out_obj(OUT_JSON, "path");
	out_hex(OUT_ANY, "cuDeviceGetAttribute", "  path: cuDeviceGetAttribute 0x%llx", g->api);
	if (g->slot)
		out_hex(OUT_ANY, "slot", " -> slot 0x%llx (R_X86_64_RELATIVE)", g->slot);
	out_hex(OUT_ANY, "implementation", " -> 0x%llx", g->impl);
	if (g->located) {
		out_hex(OUT_ANY, "dispatcher", " -> dispatcher 0x%llx", g->dispatcher);
		out_hex(OUT_ANY, "jump_table", " (jump table 0x%llx", g->table);
		out_int(OUT_ANY, "table_entries", ", %lld entries)\n", g->table_max + 1);
		out_hex(OUT_TEXT, NULL, "  branches: attribute 110 at 0x%llx", g->branch[0]);
		if (g->branch[0])
			out_hex(OUT_JSON, "attr110_branch", NULL, g->branch[0]);
		out_hex(OUT_ANY, "attr116_branch", ", 116 at 0x%llx", g->branch[1]);
		out_hex(OUT_ANY, "attr124_branch", ", 124 at 0x%llx\n", g->branch[2]);
	} else {
		out_text("\n");
	}
	out_obj_end(OUT_JSON);

	if (g->located) {
		out_obj(OUT_JSON, "capability");
		out_hex(OUT_ANY, "field", "  capability: byte +0x%llx", g->field);
		out_hex(OUT_ANY, "mask", ", mask 0x%02llx; global GDR byte: ", g->mask);
		if (g->global)
			out_hex(OUT_ANY, "global", "0x%llx (cmpb $0x0)", g->global);
		else
			out_null("global");
		out_text("%s", g->global ? "" : "none found");
		out_str(OUT_JSON, "attr124_also_requires", NULL, g->extra);
		if (g->extra[0])
			out_str(OUT_TEXT, NULL, "; attribute 124 also requires %s", g->extra);
		out_uint(OUT_TEXT, NULL, "\n  stores to the byte: %llu", g->nstores);
		out_uint(OUT_ANY, "initialisers", ", initialisers: %llu", g->ninit);
		out_uint(OUT_ANY, "displacement_hits", " (%llu displacement hits examined)\n", g->nhits);
		out_obj_end(OUT_JSON);
	}
	out_arr(OUT_JSON, "stores");
	for (size_t i = 0; i < g->nstores; ++i) {
		out_obj(OUT_JSON, NULL);
		row_render(&libcuda_store_row, &g->stores[i], row_mode(false), NULL);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_arr(OUT_JSON, "rewrites");
	for (size_t i = 0; i < g->nplan; ++i) {
		const struct lc_rewrite *w = &g->plan[i];
		char o[33], n[33];

		for (int b = 0; b < w->len; ++b) {
			sprintf(o + 2 * b, "%02x", w->old[b]);
			sprintf(n + 2 * b, "%02x", w->new[b]);
		}
		out_obj(OUT_JSON, NULL);
		out_hex(OUT_ANY, "offset", "  rewrite at file offset 0x%llx:", w->off);
		out_hex(OUT_JSON, "for_store", NULL, w->store);
		out_str(OUT_JSON, "old", NULL, o);
		out_str(OUT_JSON, "new", NULL, n);
		for (int b = 0; b < w->len; ++b)
			out_text(" %02x", w->old[b]);
		out_text(" ->");
		for (int b = 0; b < w->len; ++b)
			out_text(" %02x", w->new[b]);
		out_str(OUT_ANY, "from", "   (%s -> ", w->from);
		out_str(OUT_ANY, "to", "%s)\n", w->to);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	show_bulk(g);
	if (r->known)
		out_str(OUT_ANY, "known_table", "  known-versions table: %s\n", r->known_note);
	else
		out_null("known_table");
	out_arr(OUT_JSON, "manifests");
	for (size_t i = 0; i < r->nstale; ++i) {
		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "path", NULL, r->stale[i].manifest);
		out_bool(OUT_JSON, "stale", NULL, r->stale[i].stale);
		out_str(OUT_JSON, "reason", NULL, r->stale[i].reason);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_double(OUT_ANY, "analysis_seconds", "  analysis: %.3f s\n", g->seconds, 3);
	out_cstr(OUT_TEXT, vc, NULL, "  verdict: %s", lc_verdict_name(r->v));
	out_str(OUT_TEXT, NULL, ": %s\n", r->why);
	for (size_t i = 0; i < r->nstale; ++i) {
		if (r->stale[i].stale) {
			out_cstr(OUT_TEXT, OUT_ALARM, NULL, "  %s", "STALE PATCHED COPY");
			out_str(OUT_TEXT, NULL, ": %s", r->stale[i].manifest);
			out_str(OUT_TEXT, NULL, ": %s", r->stale[i].reason);
			out_text("; run `%s libcuda patch' again\n", PROG_NAME);
		} else {
			out_str(OUT_TEXT, NULL, "  manifest %s: current\n", r->stale[i].manifest);
		}
	}
}

static int cmd_status(const struct opts *o)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct lc_report *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return out_fail(NVS_EX_FAIL, "Unable to allocate memory");
	ret = pick(o, path, sizeof(path));
	if (ret)
		goto out;
	ret = lc_analyse(path, o->state, r, err, sizeof(err));
	if (ret) {
		ret = out_fail(exit_for(ret), "%s", err);
		goto out;
	}
	/*
	 * Every libcuda exports cuDeviceGetAttribute (the CUDA driver API):
	 * an ELF without it is some other library or program, not a layout
	 * to report as unsupported.
	 */
	if (r->elf_ok && lc_elf_sym(&r->elf, "cuDeviceGetAttribute", &(uint64_t){ 0 })) {
		ret = out_fail(NVS_EX_USAGE,
			       "`%s' is not a libcuda: cuDeviceGetAttribute is not exported (every libcuda exports it); pass the driver's libcuda.so.<version> to --lib",
			       path);
		lc_report_free(r);
		goto out;
	}
	if (o->dump) {
		nvs_dump_libcuda(r);
	} else {
		out_begin(isatty(STDOUT_FILENO));
		show_report(r);
	}
	if (out_end() < 0)
		ret = NVS_EX_FAIL;
	else
		ret = lc_report_stale(r) ? NVS_EX_STALE : r->v == LC_UNSUPPORTED ? NVS_EX_USAGE : NVS_EX_OK;
	if (r->v == LC_UNSUPPORTED)
		out_note("Unsupported libcuda layout in `%s': %s", path, r->why);
	for (size_t i = 0; i < r->nstale; ++i)
		if (r->stale[i].stale)
			out_note("STALE patched libcuda: %s: %s", r->stale[i].manifest, r->stale[i].reason);
	lc_report_free(r);
out:
	free(r);
	return ret;
}

/* ---- patch, restore, env ---- */

/*
 * "export LD_LIBRARY_PATH='dir'${...}" with dir in single quotes, each '
 * written '\'' so that eval "$(nvsidecar libcuda env ...)" runs nothing that
 * the directory's name holds. Control characters are refused before this
 * (patch: the --out name; env: has_control()).
 */
static const char *export_line(const char *dir, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "export LD_LIBRARY_PATH='");

	for (; *dir && n + 8 < len; ++dir)
		n += snprintf(buf + n, len - n, *dir == '\'' ? "'\\''" : "%c", *dir);
	snprintf(buf + n, len - n, "'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}");
	return buf;
}

/* Appends s to buf (n bytes used of len, kept terminated; what does not fit is cut). */
static size_t add(char *buf, size_t n, size_t len, const char *s)
{
	for (; *s && n + 1 < len; ++s)
		buf[n++] = *s;
	if (n < len)
		buf[n] = '\0';
	return n;
}

/* Appends s to buf as one shell word (nvs_shell_word()), cut as add() cuts. */
static size_t add_word(char *buf, size_t n, size_t len, const char *s)
{
	n += nvs_shell_word(buf + n, len - n, s);
	return n < len ? n : len - 1;
}

/*
 * "nvsidecar libcuda restore --lib LIB", the undo a patch or restore
 * hints at, with --state-dir DIR unless the state directory is the
 * default: the in-place record is there, and a restore that looks in the
 * default directory finds nothing to restore. DIR is the directory used,
 * given with --state-dir or in NVS_LIBCUDA_STATE (a shell the hint is
 * pasted into need not have it), absolute (absolute_state()): a relative
 * one names another directory once the admin is elsewhere. Each path is
 * one shell word.
 */
static const char *restore_line(const struct opts *o, const char *lib, char *buf, size_t len)
{
	size_t n = add(buf, 0, len, PROG_NAME);

	n = add_word(buf, add(buf, n, len, " libcuda restore --lib "), len, lib);
	if (o->state_given || nvs_env_libcuda_state(NULL))
		add_word(buf, add(buf, n, len, " --state-dir "), len, o->state);
	return buf;
}

static bool has_control(const char *s)
{
	for (; *s; ++s)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static int cmd_patch(const struct opts *o)
{
	char path[PATH_MAX], err[PATH_MAX + 1024], line[8 * PATH_MAX + 64];
	struct lc_patch_result res;
	int ret;

	if (!o->out == !o->in_place)
		return out_usage("libcuda patch",
				 "Pass exactly one of --out DIR (write a patched copy) and --in-place (replace the library, keeping a backup)");
	ret = pick(o, path, sizeof(path));
	if (ret)
		return ret;
	ret = lc_patch(path, o->in_place ? NULL : o->out, o->state, &res, err, sizeof(err));
	if (ret == -EEXIST) {
		/* a second --in-place: done before, nothing to do */
		lc_patch_result_free(&res);
		out_begin(isatty(STDOUT_FILENO));
		out_str(OUT_JSON, "result", NULL, "already-patched-in-place");
		out_str(OUT_JSON, "mode", NULL, "in-place");
		out_str(OUT_ANY, "output", "`%s' is already patched in place", res.output);
		out_str(OUT_ANY, "created", " (%s", res.created);
		out_str(OUT_ANY, "backup", ", backup %s); nothing to do.\n", res.backup);
		out_str(OUT_JSON, "output_sha256", NULL, res.output_sha256);
		out_str(OUT_JSON, "source_sha256", NULL, res.source_sha256);
		out_str(OUT_JSON, "driver_version", NULL, res.driver_version);
		out_str(OUT_TEXT, NULL, "Undo with `%s'\n", restore_line(o, path, line, sizeof(line)));
		return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
	}
	if (ret == -EALREADY) {
		/* the gate is already open: nothing to write, and not an error */
		lc_patch_result_free(&res);
		out_begin(isatty(STDOUT_FILENO));
		out_str(OUT_JSON, "result", NULL, !strcmp(res.verdict, "patched") ? "already-patched" : res.verdict);
		out_str(OUT_JSON, "mode", NULL, res.in_place ? "in-place" : "copy");
		out_str(OUT_JSON, "source", NULL, res.source);
		out_str(OUT_JSON, "source_sha256", NULL, res.source_sha256);
		out_str(OUT_JSON, "driver_version", NULL, res.driver_version);
		out_str(OUT_JSON, "verdict", NULL, res.verdict);
		out_str(OUT_JSON, "reason", NULL, res.reason);
		out_null("output");
		out_str(OUT_TEXT, NULL, "%s\n", err);
		return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
	}
	if (ret) {
		/* -EPROTONOSUPPORT: no provable patch for this layout, an input we cannot use */
		lc_patch_result_free(&res);
		if (res.bad_out)	/* --out: the admin's directory, not a failed write */
			return out_fail(ret == -EACCES || ret == -EPERM ? NVS_EX_PERM : NVS_EX_USAGE, "%s", err);
		return out_fail(ret == -EPROTONOSUPPORT ? NVS_EX_USAGE : exit_for(ret), "%s", err);
	}
	out_begin(isatty(STDOUT_FILENO));
	out_str(OUT_JSON, "result", NULL, res.up_to_date ? "up-to-date" : "patched");
	out_str(OUT_JSON, "mode", NULL, res.in_place ? "in-place" : "copy");
	out_str(OUT_JSON, "source", NULL, res.source);
	out_str(OUT_JSON, "source_sha256", NULL, res.source_sha256);
	out_cstr(OUT_TEXT, OUT_GOOD, NULL, "%s", res.up_to_date ? "Up to date" : "Patched");
	out_str(OUT_ANY, "output", ": %s\n", res.output);
	out_str(OUT_JSON, "output_sha256", NULL, res.output_sha256);
	out_str(OUT_JSON, "driver_version", NULL, res.driver_version);
	out_str(OUT_JSON, "version_mismatch", NULL, res.version_mismatch[0] ? res.version_mismatch : NULL);
	out_str(OUT_JSON, "removed", NULL, res.removed[0] ? res.removed : NULL);
	out_arr(OUT_JSON, "sites");
	for (size_t i = 0; i < res.nsites; ++i) {
		out_obj(OUT_JSON, NULL);
		out_hex(OUT_ANY, "offset", "  0x%-8llx ", res.sites[i].off);
		out_str(OUT_ANY, "change", "%s\n", res.sites[i].desc);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	if (res.removed[0])
		out_str(OUT_TEXT, NULL, "Removed the previous driver's copy %s\n", res.removed);
	if (!res.in_place) {
		out_str(OUT_TEXT, NULL, "Use it with:\n  %s\n", export_line(res.outdir, line, sizeof(line)));
	} else {
		out_str(OUT_TEXT, NULL, "Backup: %s", res.backup);
		out_str(OUT_TEXT, NULL, " (undo with `%s')\n", restore_line(o, path, line, sizeof(line)));
	}
	lc_patch_result_free(&res);
	ret = out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
	if (res.version_mismatch[0])
		out_note("Warning: `%s': %s; the copy is named and recorded as %s", path, res.version_mismatch,
			 res.driver_version);
	return ret;
}

static int cmd_restore(const struct opts *o)
{
	char path[PATH_MAX], err[PATH_MAX * 2], line[8 * PATH_MAX + 64];
	struct lc_restore_result res;
	int ret = pick(o, path, sizeof(path));

	if (ret)
		return ret;
	ret = lc_restore(path, o->state, &res, err, sizeof(err));
	if (ret == -ENOENT) {
		/*
		 * No record: restore is idempotent. A library that does not
		 * analyse as patched is already the original (restored before,
		 * or never patched): nothing to do, exit 0. A patched one
		 * without a record was patched by someone else, and there is
		 * no backup to put back: that stays a failure.
		 */
		struct lc_report *r = calloc(1, sizeof(*r));
		char aerr[PATH_MAX + 256];
		bool patched;

		if (!r)
			return out_fail(NVS_EX_FAIL, "Unable to allocate memory");
		if (lc_analyse(path, o->state, r, aerr, sizeof(aerr))) {
			free(r);
			return out_fail(NVS_EX_FAIL, "%s", err);
		}
		patched = r->v == LC_PATCHED || r->v == LC_PARTIAL;
		lc_report_free(r);
		free(r);
		if (patched) {
			/*
			 * Most often the record is in another state directory
			 * (the patch had --state-dir or NVS_LIBCUDA_STATE, this
			 * restore has not, or a different one): say which
			 * directory was searched, whether it exists at all,
			 * and to pass the patch's one, before the reinstall
			 * that is left when no nvsidecar record exists (admin
			 * review M3).
			 */
			struct stat sst;
			const char *from = o->state_given ? "--state-dir" :
					   strcmp(o->state, LC_DEFAULT_STATE) ? "NVS_LIBCUDA_STATE" : "the default";
			const char *what = stat(o->state, &sst) ? (errno == ENOENT ? " does not exist, so it holds" : " cannot be read, so it holds") :
					   !S_ISDIR(sst.st_mode) ? " is not a directory, so it holds" : " holds";

			return out_fail(NVS_EX_FAIL, "`%s' is patched, but the state directory `%s' (%s)%s no in-place record of it: if you patched it with --state-dir or NVS_LIBCUDA_STATE, pass the same directory here with --state-dir; if nvsidecar did not patch it in place, there is no backup to put back: reinstall the driver package that owns it",
					path, o->state, from, what);
		}
		out_begin(isatty(STDOUT_FILENO));
		out_str(OUT_JSON, "result", NULL, "nothing-to-restore");
		out_str(OUT_ANY, "lib", "Nothing to restore: %s", path);
		out_text(" is not patched and no in-place patch of it is recorded\n");
		return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
	}
	if (ret)
		return out_fail(ret == -ESTALE ? NVS_EX_FAIL : exit_for(ret), "%s", err);
	out_begin(isatty(STDOUT_FILENO));
	out_str(OUT_JSON, "result", NULL, "restored");
	out_str(OUT_ANY, "lib", "Restored %s", res.lib);
	out_str(OUT_ANY, "backup", " from %s", res.backup);
	out_str(OUT_ANY, "sha256", " (sha256 %s)\n", res.sha256);
	out_bool(OUT_JSON, "backup_removed", NULL, res.backup_removed);
	out_str(OUT_JSON, "backup_kept_by", NULL, res.kept_by[0] ? res.kept_by : NULL);
	out_str(OUT_JSON, "backup_kept_for", NULL, res.kept_by[0] ? res.kept_for : NULL);
	out_str(OUT_JSON, "backup_kept_why", NULL, !res.backup_removed && !res.kept_by[0] ? res.kept_why : NULL);
	if (res.backup_removed) {
		out_text("Removed the backup %s: the library is the original again\n", res.backup);
	} else if (res.kept_by[0]) {
		/* two libraries with one original (the driver's, a container root's) share it */
		out_str(OUT_TEXT, NULL, "Kept the backup %s: ", res.backup);
		out_str(OUT_TEXT, NULL, "the in-place record %s ", res.kept_by);
		out_str(OUT_TEXT, NULL, "still names it, for %s (the same original).\n", res.kept_for);
		out_str(OUT_TEXT, NULL, "It goes when that library is restored too: `%s'\n",
			restore_line(o, res.kept_for, line, sizeof(line)));
	} else {
		out_str(OUT_TEXT, NULL, "Kept the backup %s: ", res.backup);
		out_str(OUT_TEXT, NULL, "%s.\n", res.kept_why);
		out_text("Remove it by hand once no library patched in place needs it (the inplace-*.manifest records in the state directory name what does)\n");
	}
	return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
}

/*
 * The patched copy in dir (resolved), as env, status and verify judge it:
 * -ENOENT when dir holds no manifest, another -errno with err, or 0 with s.
 */
static int copy_state(const char *dir, struct lc_stale *s, char *err, size_t errlen)
{
	char mpath[PATH_MAX + 64];
	struct lc_manifest m;
	int r;

	snprintf(mpath, sizeof(mpath), "%s/%s", dir, LC_MANIFEST_NAME);
	r = lc_manifest_read(mpath, &m, err, errlen);
	if (r)
		return r;
	lc_check_manifest(mpath, &m, s);
	lc_manifest_free(&m);
	return 0;
}

static int cmd_env(const struct opts *o)
{
	char dir[PATH_MAX], tmp[PATH_MAX], err[512], v[PATH_MAX + 64];
	char line[4 * PATH_MAX + 64];
	const char *llp = nvs_env_ld_library_path();
	struct lc_stale s;
	struct stat st;
	int r;

	/* the usage says one or the other: --lib would be ignored (admin review A4) */
	if (o->out && o->lib)
		return out_usage("libcuda env", "--out and --lib exclude each other: name the patched copy once, by its directory (--out) or its library (--lib)");
	if (o->out) {
		snprintf(tmp, sizeof(tmp), "%s", o->out);
	} else if (o->lib) {
		char t2[PATH_MAX];

		snprintf(t2, sizeof(t2), "%s", o->lib);
		snprintf(tmp, sizeof(tmp), "%s", !stat(o->lib, &st) && S_ISDIR(st.st_mode) ? o->lib : dirname(t2));
	} else {
		return out_usage("libcuda env", "Which patched copy? Pass --out DIR (the directory given to `patch --out')");
	}
	if (!realpath(tmp, dir))
		return out_fail(NVS_EX_USAGE, "Unable to find `%s': %s", tmp, strerror(errno));
	if (has_control(dir))
		return out_fail(NVS_EX_USAGE, "`%s' has a newline or control character in its name, which no shell line can carry safely; patch into a plainly named directory",
				tmp);
	r = copy_state(dir, &s, err, sizeof(err));
	if (r == -ENOENT)
		return out_fail(NVS_EX_FAIL, "No patched copy in `%s' (no %s); write one with `%s libcuda patch --out DIR' (a directory of its own, such as /opt/libcuda-gdr/<driver version>) and pass that DIR",
				dir, LC_MANIFEST_NAME, PROG_NAME);
	if (r)
		return out_fail(NVS_EX_FAIL, "%s", err);
	if (s.stale)
		return out_fail(NVS_EX_STALE, "STALE patched libcuda in %s: %s; run `%s libcuda patch --out %s' again",
				dir, s.reason, PROG_NAME, dir);
	snprintf(v, sizeof(v), "%s%s%s", dir, llp && *llp ? ":" : "", llp ? llp : "");
	out_begin(isatty(STDOUT_FILENO));
	out_str(OUT_JSON, "LD_LIBRARY_PATH", NULL, v);
	out_str(OUT_JSON, "dir", NULL, dir);
	out_str(OUT_TEXT, NULL, "%s\n", export_line(dir, line, sizeof(line)));
	return out_end() < 0 ? NVS_EX_FAIL : NVS_EX_OK;
}

/* ---- verify ---- */

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
			if (nvs_same_busid(gpus[i].busid, busid))
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

static void show_verify(const struct opts *o, const struct lc_verify_result *r, bool gate_open)
{
	out_text("%slibcuda verify%s: ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "lib", "%s", r->loaded);
	out_int(OUT_ANY, "driver_version", " (driver API %lld", r->driver_version);
	out_int(OUT_ANY, "devices", ", %lld device(s))\n", r->ndevices);
	out_int(OUT_JSON, "device", NULL, o->device);
	out_obj(OUT_JSON, "attributes");
	for (int i = 0; i < LC_VERIFY_NATTR && r->stage >= 3; ++i) {
		char k[16];

		snprintf(k, sizeof(k), "%d", lc_verify_attrs[i]);
		out_obj(OUT_JSON, k);
		out_int(OUT_TEXT, NULL, "  %3lld ", lc_verify_attrs[i]);
		out_str(OUT_ANY, "name", "%-45s", lc_verify_attr_names[i]);
		out_int(OUT_ANY, "value", " = %lld", r->attr[i]);
		out_int(OUT_JSON, "result", NULL, r->attr_rc[i]);
		out_text("%s\n", r->attr_rc[i] ? " (query failed)" : "");
		out_obj_end(OUT_JSON);
	}
	out_obj_end(OUT_JSON);
	if (r->stage >= 5) {
		out_int(OUT_JSON, "export_result", NULL, r->export_rc);
		out_int(OUT_JSON, "fd", NULL, r->fd);
		out_uint(OUT_JSON, "size", NULL, r->size);
		out_str(OUT_JSON, "fd_kind", NULL, r->fd_kind);
		out_bool(OUT_JSON, "fd_is_dma_buf", NULL, r->fd_dmabuf);
		out_text("  cuMemGetHandleForAddressRange(DMA_BUF_FD, flags 0): ");
		if (gate_open) {
			out_text("%sfd %d%s, %" PRIu64 " bytes, ", out_cfg(r->fd_dmabuf ? OUT_GOOD : OUT_BAD), r->fd,
				 out_cfg(OUT_PLAIN), r->size);
			out_str(OUT_TEXT, NULL, "%s\n", r->fd_kind);
		} else {
			out_text("%serror %d%s%s\n", out_cfg(OUT_BAD), r->export_rc, out_cfg(OUT_PLAIN),
				 r->export_rc == 801 ? " (CUDA_ERROR_NOT_SUPPORTED: the gate is closed)" : "");
		}
	}
	if (r->hook_ran) {
		out_int(OUT_JSON, "dmabuf_probe_result", NULL, r->hook_rc);
		out_cstr(OUT_ANY, r->hook_rc ? OUT_BAD : OUT_GOOD, "dmabuf_probe", "  kernel dma-buf probe: %s\n",
			 r->hook_msg);
	}
	out_bool(OUT_JSON, "dma_buf_export", NULL, gate_open);
	out_str(OUT_JSON, "error", NULL, r->error[0] ? r->error : NULL);
}

static int cmd_verify(const struct opts *o)
{
	struct lc_verify_opts vo = { .device = o->device, .bytes = o->bytes };
	struct lc_verify_result *r = calloc(1, sizeof(*r));
	char path[PATH_MAX];
	int ret, rc;
	bool gate_open;

	if (!r)
		return out_fail(NVS_EX_FAIL, "Unable to allocate memory");
	if (o->lib) {
		char t[PATH_MAX], dir[PATH_MAX], err[512];
		struct lc_stale s;
		struct stat st;
		bool is_dir;

		/* the path the admin named: its problems are a bad argument */
		if (stat(o->lib, &st) < 0) {
			free(r);
			return out_fail(nvs_exit_for_path(errno), "Unable to find `%s' (the --lib given): %s", o->lib,
					strerror(errno));
		}
		/*
		 * What dlopen would load must be a regular file within the size
		 * limit that status and patch apply: dlopen of a FIFO blocks in
		 * open(), and a giant file is no libcuda (lc_elf_open's rule).
		 */
		is_dir = S_ISDIR(st.st_mode);	/* st is the file's from here on */
		if (is_dir) {
			snprintf(t, sizeof(t), "%s/libcuda.so.1", o->lib);
			if (stat(t, &st) < 0) {
				free(r);
				return out_fail(nvs_exit_for_path(errno), "Unable to find `%s' in the --lib folder: %s", t,
						strerror(errno));
			}
		}
		if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > LC_MAX_LIB_SIZE) {
			free(r);
			return out_fail(NVS_EX_USAGE, "`%s' (the --lib given) is %s: not a libcuda",
					o->lib, !S_ISREG(st.st_mode) ? "not a regular file" :
					"more than the " LC_MAX_LIB_SIZE_TEXT " nvsidecar reads");
		}
		/* a patched copy (the folder, or a file in it) must be current, as for env */
		snprintf(t, sizeof(t), "%s", o->lib);
		if (realpath(is_dir ? o->lib : dirname(t), dir) &&
		    !copy_state(dir, &s, err, sizeof(err)) && s.stale) {
			free(r);
			return out_fail(NVS_EX_STALE, "STALE patched libcuda in %s: %s; run `%s libcuda patch --out %s' again",
					dir, s.reason, PROG_NAME, dir);
		}
		vo.lib = o->lib;
	} else {
		ret = pick(o, path, sizeof(path));
		if (ret) {
			free(r);
			return ret;
		}
		vo.lib = path;
	}
	if (o->probe) {
		vo.hook = probe_hook;
		vo.hook_arg = (void *)o->importer;
	}
	rc = lc_verify(&vo, r);
	gate_open = r->stage == 6 && !r->export_rc && r->fd >= 0;
	if (rc)
		ret = NVS_EX_FAIL;
	else if (!r->stage && r->error[0] && o->lib)
		ret = NVS_EX_USAGE;	/* the --lib named does not load as libcuda */
	else if (r->stage < 3 && r->error[0])
		ret = NVS_EX_MISSING;	/* no usable libcuda, no driver, no such device */
	else if (r->stage < 5 && r->error[0])
		ret = NVS_EX_FAIL;
	else if (!gate_open)
		ret = NVS_EX_GATE;
	else if (!r->fd_dmabuf)
		ret = NVS_EX_FAIL;	/* an fd that no RDMA driver can import: the export did not work */
	else if (o->probe && r->hook_rc)
		ret = nvs_exit_for_errno(-r->hook_rc);
	else
		ret = NVS_EX_OK;
	if (gate_open && !r->fd_dmabuf && !r->error[0])
		snprintf(r->error, sizeof(r->error),
			 "The export did not produce a dma-buf (fd %d is %s): no RDMA driver can import it",
			 r->fd, r->fd_kind);
	out_begin(isatty(STDOUT_FILENO));
	if (out_json()) {
		/* The verify document carries its own verdict: always one document. */
		out_bool(OUT_JSON, "ok", NULL, !ret);
		out_int(OUT_JSON, "exit", NULL, ret);
	}
	/* nothing loaded: no header that looks like a result, the error says it */
	if (r->stage || out_json())
		show_verify(o, r, gate_open);
	if (out_end() < 0 && !ret)
		ret = NVS_EX_FAIL;
	if (r->error[0])
		out_note("%s", r->error);
	if (ret == NVS_EX_FAIL && gate_open && !r->fd_dmabuf)
		out_note("Check that `%s' is NVIDIA's libcuda of the loaded driver (`%s libcuda status --lib %s'), that the nvidia kernel module of the same version is loaded (/proc/driver/nvidia/version), and that the kernel has dma-buf support (CONFIG_DMA_SHARED_BUFFER)",
			 r->loaded, PROG_NAME, r->loaded);
	if (ret == NVS_EX_GATE)
		out_note("The dma-buf gate of `%s' is closed: write a patched copy with `%s libcuda patch --out DIR' (--lib the driver's libcuda.so.<version> when the default is not it), check the copy with `%s libcuda verify --lib DIR', then load it with eval \"$(%s libcuda env --out DIR)\"",
			 r->loaded, PROG_NAME, PROG_NAME, PROG_NAME);
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
	int r, a = nvs_arg_action(argc, argv, 1);

	if (a >= argc)
		return out_usage("libcuda", "Missing action: status, patch, verify, restore or env");
	if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h") || !strcmp(argv[a], "help")) {
		usage(stdout, "libcuda");
		return NVS_EX_OK;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); ++i) {
		if (strcmp(argv[a], cmds[i].name))
			continue;
		r = parse(argc - a, argv + a, &o, cmds[i].name);
		if (r)
			return r == 1 ? NVS_EX_OK : r;
		return cmds[i].fn(&o);
	}
	return out_usage("libcuda", "Invalid libcuda command: `%s'", argv[a]);
}
