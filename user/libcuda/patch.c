// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/env.h"
#include "lib/io.h"
#include "libcuda/patch.h"
#include "libcuda/report.h"
#include "libcuda/sha256.h"

/*
 * Messages embed paths of up to PATH_MAX into fixed buffers; a truncated
 * message is acceptable, so GCC's truncation analysis is off for this file.
 */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static void now_iso(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Holes: all-zero blocks of this size are skipped, not written. */
#define BLOCK (64u << 10)

/* The plan's rewrites must match the file before anything is written. */
static int check_plan(const struct lc_report *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < r->g.nplan; ++i) {
		const struct lc_rewrite *w = &r->g.plan[i];

		if (w->off < 0 || (uint64_t)w->off + w->len > r->elf.size ||
		    memcmp(r->elf.map + w->off, w->old, w->len)) {
			snprintf(err, errlen, "Internal error: rewrite at 0x%" PRIx64 " does not match the file", w->off);
			return -EIO;
		}
	}
	return 0;
}

/*
 * The library, with the plan's rewrites when plan is set, a block at a
 * time from the read-only mapping: into f when given, and always into the
 * SHA-256 in sha. A block that is a hole in the source (SEEK_DATA) is not
 * read and not written, so holes stay holes and cost neither memory nor
 * page faults; zeros the source really stores are written (a filesystem
 * that cannot hold them says so now, not when the copy is loaded). Each
 * window of the mapping is dropped once read, so memory stays at one
 * window whatever the file's size: no copy of the whole image is made.
 */
static int stream_image(FILE *f, const struct lc_report *r, bool plan, char sha[65], char *err, size_t errlen)
{
	static const uint8_t zero[BLOCK];
	static uint8_t blk[BLOCK];
	const uint8_t *map = r->elf.map;
	size_t size = r->elf.size, dropped = 0;
	struct lc_sha256 c;
	/* tests: a write that does not do what the plan says, for the re-check to catch */
	long drop = f ? nvs_env_test_libcuda_drop_rewrite() : -1;
	/* tests: widen the window for an interrupted write, as nvs_write_atomic does */
	long delay = f ? (long)nvs_env_test_write_delay_ms() : 0;
	int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	long long data = -1;	/* the next data at or after the block, once looked up */
	int ret = 0;

	lc_sha256_init(&c);
	for (size_t off = 0; off < size; off += BLOCK) {
		size_t k = size - off < BLOCK ? size - off : BLOCK;
		bool hole = false, touched = false;

		for (size_t i = 0; plan && i < r->g.nplan; ++i)
			touched |= (uint64_t)r->g.plan[i].off < off + k &&
				   (uint64_t)r->g.plan[i].off + r->g.plan[i].len > off;
		if (fd >= 0 && k == BLOCK && !touched) {
			if (data < (long long)off) {
				off_t n = lseek(fd, (off_t)off, SEEK_DATA);

				data = n >= 0 ? n : errno == ENXIO ? (long long)size : (long long)off;
			}
			hole = data >= (long long)(off + k);
		}
		if (hole) {
			lc_sha256_update(&c, zero, k);
			if (f && fseeko(f, k, SEEK_CUR) < 0)
				goto fail;
			dropped = off + k;
			continue;
		}
		memcpy(blk, map + off, k);
		for (size_t i = 0; plan && i < r->g.nplan; ++i) {
			const struct lc_rewrite *w = &r->g.plan[i];

			if ((long)i == drop)
				continue;
			for (size_t b = 0; b < w->len; ++b)
				if ((uint64_t)w->off + b >= off && (uint64_t)w->off + b < off + k)
					blk[w->off + b - off] = w->new[b];
		}
		lc_sha256_update(&c, blk, k);
		if (f && fwrite(blk, 1, k, f) != k)
			goto fail;
		if (off + k - dropped >= LC_SHA256_WINDOW || off + k == size) {
			madvise((uint8_t *)map + dropped, off + k - dropped, MADV_DONTNEED);
			dropped = off + k;
		}
		if (delay && !((off + k) % (1u << 20)))
			usleep(delay * 1000);
	}
	/* a trailing hole: the size comes from the truncate */
	if (f && (fflush(f) || ftruncate(fileno(f), (off_t)size) < 0))
		goto fail;
	lc_sha256_final(&c, sha);
	goto out;
fail:
	ret = errno ? -errno : -EIO;
	snprintf(err, errlen, "Unable to write the copy: %s", strerror(-ret));
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static void fill_manifest(struct lc_manifest *m, const struct lc_report *r, const char *mode, const char *out,
			  const char *out_sha)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->tool_version, sizeof(m->tool_version), "%s", NVS_TOOL_VERSION);
	snprintf(m->mode, sizeof(m->mode), "%s", mode);
	snprintf(m->source, sizeof(m->source), "%s", r->path);
	snprintf(m->source_sha256, sizeof(m->source_sha256), "%s", r->sha);
	snprintf(m->driver_version, sizeof(m->driver_version), "%s", r->version);
	snprintf(m->name_version, sizeof(m->name_version), "%s", r->name_version);
	snprintf(m->version_mismatch, sizeof(m->version_mismatch), "%s", r->version_mismatch);
	snprintf(m->output, sizeof(m->output), "%s", out);
	snprintf(m->output_sha256, sizeof(m->output_sha256), "%s", out_sha);
	m->field = r->g.field;
	m->mask = r->g.mask;
	now_iso(m->created, sizeof(m->created));
}

static void manifest_sites(struct lc_manifest *m, const struct lc_report *r, struct lc_msite *sites)
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

/*
 * The written file must analyse as patched, by the same rules, with every
 * initialiser's paths proven, before it is published under its name.
 * -EPROTONOSUPPORT (exit 2, unsupported-layout) when it does not.
 */
static int reverify(const char *path, const char *state, char *err, size_t errlen)
{
	struct lc_report *r = calloc(1, sizeof(*r));
	char why[1024];
	int ret;

	if (!r)
		return -ENOMEM;
	ret = lc_analyse(path, state, r, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "The written image cannot be read back (%s); nothing was published", why);
	} else if (r->g.nplan || !r->g.ok || r->v != LC_PATCHED) {
		snprintf(err, errlen, "The written image does not analyse as patched (%s: %s); nothing was published",
			 lc_verdict_name(r->v), r->g.ok ? (r->g.nplan ? "rewrites still planned" : r->why) : r->g.reason);
		ret = -EPROTONOSUPPORT;
	}
	lc_report_free(r);
	free(r);
	return ret;
}

/*
 * dir/name written atomically from the mapping (stream_image), with the
 * plan when plan is set. With check, the temporary file is re-analysed
 * before the rename (reverify), so a copy that does not prove patched is
 * never under a final name: the temporary is dropped and nothing changes.
 */
static int publish(const char *dir, const char *name, const struct lc_report *r, bool plan, mode_t mode,
		   const char *state, bool check, char *err, size_t errlen)
{
	char path[PATH_MAX + 160], proc[64], sha[65];
	struct nvs_ofile o;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = nvs_ofile_open(&o, path, mode, err, errlen);
	if (ret)
		return ret;
	ret = stream_image(o.f, r, plan, sha, err, errlen);
	if (!ret && check) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fileno(o.f));
		ret = reverify(proc, state, err, errlen);
	}
	if (!ret)
		ret = nvs_ofile_commit(&o, err, errlen);
	nvs_ofile_discard(&o);
	return ret;
}

static int symlink_atomic(const char *dir, const char *name, const char *target, char *err, size_t errlen)
{
	char tmp[PATH_MAX], final[PATH_MAX], cur[PATH_MAX];
	ssize_t n;

	snprintf(final, sizeof(final), "%s/%s", dir, name);
	n = readlink(final, cur, sizeof(cur) - 1);
	if (n > 0) {
		cur[n] = 0;
		if (!strcmp(cur, target))
			return 0;
	}
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

/* mkdir -p for the state directory (/var/lib/nvsidecar/libcuda) and --out. */
static int make_dirs(const char *what, const char *dir, char *err, size_t errlen)
{
	char failed[PATH_MAX];
	int ret = nvs_make_dirs(dir, 0755, failed, sizeof(failed));

	if (ret)
		snprintf(err, errlen, "Unable to create the %s `%s'%s%s%s: %s%s", what, dir,
			 strcmp(failed, dir) ? " (at `" : "", strcmp(failed, dir) ? failed : "",
			 strcmp(failed, dir) ? "')" : "", strerror(-ret),
			 ret == -EACCES || ret == -EPERM ? "; run as root or choose a directory you can write" : "");
	return ret;
}

/* A byte that would end or rewrite a shell line or a terminal's output. */
static bool has_control(const char *s)
{
	for (; *s; ++s)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/*
 * The copy an earlier `patch --out' left in outdir, when it is not the one
 * about to be published: named by the folder's manifest, a libcuda.so.*
 * right in outdir. Anything else in the folder is the admin's and stays.
 */
static void previous_copy(const char *mpath, const char *outdir, const char *output, char *prev, size_t len)
{
	struct lc_manifest old;
	char err[256];
	const char *b;
	size_t n = strlen(outdir);

	prev[0] = 0;
	if (lc_manifest_read(mpath, &old, err, sizeof(err)))
		return;
	b = strrchr(old.output, '/');
	if (b && (size_t)(b - old.output) == n && !strncmp(old.output, outdir, n) &&
	    !strncmp(b + 1, "libcuda.so.", 11) && strchr(b + 12, '.') && strcmp(old.output, output))
		snprintf(prev, len, "%s", old.output);
	lc_manifest_free(&old);
}

/*
 * The names a copy publishes in outdir may only replace what nvsidecar
 * itself put there: nothing, the link it would write anyway, or (with this
 * folder's manifest) libcuda.so.1 pointing to the copy the manifest names.
 * Anything else is the admin's (a compat libcuda, a hand-made link) and is
 * never replaced. ours is the manifest's copy, "" without one.
 */
static int check_name(const char *outdir, const char *name, const char *target, const char *ours,
		      const char *out_sha, char *err, size_t errlen)
{
	char p[PATH_MAX + 160], cur[PATH_MAX], sha[65];
	struct stat st;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", outdir, name);
	if (lstat(p, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!target) {
		/* the copy itself: the manifest's own, or already byte-identical */
		if (S_ISREG(st.st_mode) && (!strcmp(p, ours) || (!lc_sha256_file(p, sha) && !strcmp(sha, out_sha))))
			return 0;
	} else if (S_ISLNK(st.st_mode)) {
		const char *b = strrchr(ours, '/');

		n = readlink(p, cur, sizeof(cur) - 1);
		cur[n > 0 ? n : 0] = 0;
		if (n > 0 && (!strcmp(cur, target) ||
			      (b && !strcmp(name, "libcuda.so.1") && !strcmp(cur, b + 1))))
			return 0;
	}
	snprintf(err, errlen, "Refusing to replace `%s': it is %s that nvsidecar did not make (%s). Move it away, or pass another --out directory (a missing one is created)",
		 p, S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISREG(st.st_mode) ? "a file" : "an entry",
		 ours[0] ? "the folder's " LC_MANIFEST_NAME " does not name it" : "the folder has no " LC_MANIFEST_NAME);
	return -EINVAL;
}

/* realpath of the directory that holds path (path itself may be a link). */
static bool dir_of(const char *path, char *dir)
{
	char t[PATH_MAX];
	const char *b = strrchr(path, '/');

	if (!b)
		return realpath(".", dir);
	snprintf(t, sizeof(t), "%.*s", b == path ? 1 : (int)(b - path), path);
	return realpath(t, dir);
}

static int patch_copy(const struct lc_report *r, const char *out, const char *state, mode_t mode, struct lc_manifest *m, struct lc_patch_result *res, char *err, size_t errlen)
{
	char name[128], cur[65], mpath[PATH_MAX + 64], srcdir[PATH_MAX], ours[PATH_MAX + 160] = "";
	struct lc_manifest old;
	int ret;

	/* the admin's --out: created when missing, its errors are the admin's to fix */
	res->bad_out = true;
	if (has_control(out)) {
		snprintf(err, errlen, "The output directory name contains a newline or control character; choose a plain name");
		return -EINVAL;
	}
	ret = make_dirs("output directory", out, err, errlen);
	if (ret)
		return ret;
	if (!realpath(out, res->outdir)) {
		ret = -errno;
		snprintf(err, errlen, "Unable to use the output directory `%s': %s", out, strerror(errno));
		return ret;
	}
	if (has_control(res->outdir)) {
		snprintf(err, errlen, "The output directory `%s' resolves to a name with a newline or control character; choose a plain name",
			 out);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "libcuda.so.%s", r->version);
	snprintf(res->output, sizeof(res->output), "%s/%s", res->outdir, name);
	/*
	 * The source's own folder holds the driver's libcuda.so.1 link: a copy
	 * there would patch every program on the node (whatever the copy is
	 * named, a version mismatch included). r->path is resolved, so a
	 * --lib given as the soname link lands here too.
	 */
	if (dir_of(r->path, srcdir) && !strcmp(srcdir, res->outdir)) {
		snprintf(err, errlen, "`%s' is the directory of the source library `%s': a copy there would replace the driver's own links. Pass a separate --out directory (e.g. /opt/libcuda-gdr/%s), or --in-place to patch the library itself with a backup",
			 res->outdir, r->path, r->version);
		return -EINVAL;
	}
	res->bad_out = false;
	nvs_clean_stale_temps(res->outdir);
	snprintf(mpath, sizeof(mpath), "%s/%s", res->outdir, LC_MANIFEST_NAME);
	if (!lc_manifest_read(mpath, &old, err, errlen)) {
		const char *b = strrchr(old.output, '/');

		if (b && (size_t)(b - old.output) == strlen(res->outdir) &&
		    !strncmp(old.output, res->outdir, b - old.output))
			snprintf(ours, sizeof(ours), "%s", old.output);
		lc_manifest_free(&old);
	}
	err[0] = 0;
	ret = check_name(res->outdir, name, NULL, ours, res->output_sha256, err, errlen);
	if (!ret)
		ret = check_name(res->outdir, "libcuda.so.1", name, ours, NULL, err, errlen);
	if (!ret)
		ret = check_name(res->outdir, "libcuda.so", "libcuda.so.1", ours, NULL, err, errlen);
	if (ret) {
		res->bad_out = true;
		if (!err[0])
			snprintf(err, errlen, "Unable to check `%s': %s", res->outdir, strerror(-ret));
		return ret;
	}
	if (!lc_sha256_file(res->output, cur) && !strcmp(cur, res->output_sha256)) {
		if (!lc_manifest_read(mpath, &old, err, errlen)) {
			res->up_to_date = !strcmp(old.source_sha256, r->sha) &&
					  !strcmp(old.output_sha256, res->output_sha256);
			lc_manifest_free(&old);
		}
	}
	if (!res->up_to_date) {
		ret = publish(res->outdir, name, r, true, mode, state, true, err, errlen);
		if (ret)
			return ret;
	}
	ret = symlink_atomic(res->outdir, "libcuda.so.1", name, err, errlen);
	if (!ret)
		ret = symlink_atomic(res->outdir, "libcuda.so", "libcuda.so.1", err, errlen);
	if (ret)
		return ret;
	fill_manifest(m, r, "copy", res->output, res->output_sha256);
	manifest_sites(m, r, res->sites);
	if (!res->up_to_date) {
		char prev[PATH_MAX + 160] = "";

		previous_copy(mpath, res->outdir, res->output, prev, sizeof(prev));
		ret = lc_manifest_write(mpath, m, err, errlen);
		if (ret)
			return ret;
		/* the copy of another driver this folder held goes once the new one is in place */
		if (prev[0] && !unlink(prev))
			snprintf(res->removed, sizeof(res->removed), "%s", prev);
	}
	nvs_fsync_dir(res->outdir);
	return 0;
}

static int patch_in_place(const struct lc_report *r, const char *state, mode_t mode,
			  struct lc_manifest *m, struct lc_patch_result *res, char *err, size_t errlen)
{
	char name[128], mpath[PATH_MAX], dir[PATH_MAX], bsha[65];
	const char *b = strrchr(r->path, '/') + 1;
	int ret = make_dirs("state directory", state, err, errlen);

	if (ret)
		return ret;
	snprintf(name, sizeof(name), "backup-%s.so", r->sha);
	snprintf(res->backup, sizeof(res->backup), "%s/%s", state, name);
	if (lc_sha256_file(res->backup, bsha) || strcmp(bsha, r->sha)) {
		ret = publish(state, name, r, false, 0444, state, false, err, errlen);
		if (ret) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "Unable to back up `%s': %s", r->path, why);
			return ret;
		}
	}
	if (lc_sha256_file(res->backup, bsha) || strcmp(bsha, r->sha)) {
		snprintf(err, errlen, "The backup `%s' does not match `%s'; not patching", res->backup, r->path);
		return -EIO;
	}
	lc_state_manifest_path(state, r->path, mpath, sizeof(mpath));
	fill_manifest(m, r, "in-place", r->path, res->output_sha256);
	snprintf(m->backup, sizeof(m->backup), "%s", res->backup);
	manifest_sites(m, r, res->sites);
	/* The manifest goes first: `restore' needs it if we die below. */
	ret = lc_manifest_write(mpath, m, err, errlen);
	if (ret)
		return ret;
	snprintf(dir, sizeof(dir), "%.*s", (int)(b - 1 - r->path), r->path);
	/* re-analysed before the rename: an unproven image never replaces the library */
	ret = publish(dir, b, r, true, mode, state, true, err, errlen);
	if (ret) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, " (the library is unchanged)");
		unlink(mpath);
		return ret;
	}
	/* what is under the name now must be what was checked; else the original goes back */
	if (lc_sha256_file(r->path, bsha) || strcmp(bsha, res->output_sha256)) {
		char why[512] = "";

		ret = publish(dir, b, r, false, mode, state, false, why, sizeof(why));
		if (!ret)
			unlink(mpath);
		snprintf(err, errlen, "`%s' changed while it was patched; %s", r->path,
			 ret ? why : "the original was put back from the backup");
		return -EIO;
	}
	snprintf(res->output, sizeof(res->output), "%s", r->path);
	return 0;
}

/*
 * The gate is already open (patched, or not needed): nothing to write. Not
 * a refusal: the library the admin named already does what patching is for.
 */
static int already(const struct lc_report *r, struct lc_patch_result *res)
{
	snprintf(res->source, sizeof(res->source), "%s", r->path);
	snprintf(res->source_sha256, sizeof(res->source_sha256), "%s", r->sha);
	snprintf(res->driver_version, sizeof(res->driver_version), "%s", r->version);
	snprintf(res->reason, sizeof(res->reason), "%s", r->why);
	res->verdict = lc_verdict_name(r->v);
	return -EALREADY;
}

int lc_patch(const char *path, const char *out, const char *state, struct lc_patch_result *res,
	     char *err, size_t errlen)
{
	struct lc_report *r = calloc(1, sizeof(*r));
	struct lc_manifest m;
	struct stat st;
	int ret;

	memset(res, 0, sizeof(*res));
	res->in_place = !out;
	if (!r)
		return -ENOMEM;
	ret = lc_analyse(path, state, r, err, errlen);
	if (ret)
		goto out;
	ret = -EPROTONOSUPPORT;
	if (r->v == LC_UNSUPPORTED) {
		snprintf(err, errlen, "Refusing to patch `%s': %s", path, r->why);
		goto out;
	}
	if (r->v == LC_PATCHED && !out) {
		char mp[PATH_MAX];
		struct lc_manifest im;

		/* patched in place by us before: say so, and where the backup is */
		if (!lc_state_manifest_find(state, path, mp, sizeof(mp), &im, err, errlen)) {
			bool ours = !strcmp(im.output_sha256, r->sha);

			if (ours) {
				snprintf(res->output, sizeof(res->output), "%s", path);
				snprintf(res->output_sha256, sizeof(res->output_sha256), "%s", r->sha);
				snprintf(res->source_sha256, sizeof(res->source_sha256), "%s", im.source_sha256);
				snprintf(res->backup, sizeof(res->backup), "%s", im.backup);
				snprintf(res->created, sizeof(res->created), "%s", im.created);
				snprintf(res->driver_version, sizeof(res->driver_version), "%s", im.driver_version);
				snprintf(res->source, sizeof(res->source), "%s", path);
			}
			lc_manifest_free(&im);
			if (ours) {
				ret = -EEXIST;
				snprintf(err, errlen, "`%s' is already patched in place", path);
				goto out;
			}
		}
		ret = already(r, res);
		snprintf(err, errlen, "Nothing to do: `%s' is already patched (%s), by another tool or by hand: %s records no in-place patch of it, so `restore' cannot undo it",
			 path, r->why, state);
		goto out;
	}
	if (r->v == LC_PATCHED || r->v == LC_NOT_NEEDED) {
		/* our own copy handed back as the input: name the original */
		bool ours = r->have_beside && !strcmp(r->beside.output_sha256, r->sha);

		ret = already(r, res);
		if (!out)
			snprintf(err, errlen, "Nothing to do: `%s' is already %s (%s)", path,
				 lc_verdict_name(r->v), r->why);
		else
			snprintf(err, errlen, "Nothing to do: `%s' is already %s (%s); no copy written to %s. Load it as it is, or patch the original library%s%s to get a copy with a manifest",
				 path, lc_verdict_name(r->v), r->why, out, ours ? " " : "",
				 ours ? r->beside.source : "");
		goto out;
	}
	ret = -EINVAL;
	if (!strcmp(r->version, "unknown")) {
		snprintf(err, errlen, "Unable to tell the driver version of `%s' (expected a name like libcuda.so.535.261.03); pass the versioned file, not a link",
			 path);
		goto out;
	}
	ret = check_plan(r, err, errlen);
	if (ret)
		goto out;
	ret = -ENOMEM;
	res->sites = calloc(r->g.nplan ? r->g.nplan : 1, sizeof(*res->sites));
	if (!res->sites) {
		snprintf(err, errlen, "Unable to allocate memory");
		goto out;
	}
	snprintf(res->source, sizeof(res->source), "%s", path);
	snprintf(res->source_sha256, sizeof(res->source_sha256), "%s", r->sha);
	snprintf(res->driver_version, sizeof(res->driver_version), "%s", r->version);
	snprintf(res->version_mismatch, sizeof(res->version_mismatch), "%s", r->version_mismatch);
	ret = stream_image(NULL, r, true, res->output_sha256, err, errlen);
	if (ret)
		goto out;
	if (stat(path, &st) < 0)
		st.st_mode = 0644;
	if (out)
		ret = patch_copy(r, out, state, st.st_mode & 0777, &m, res, err, errlen);
	else
		ret = patch_in_place(r, state, st.st_mode & 0777, &m, res, err, errlen);
	if (!ret)
		res->nsites = m.nsites;
out:
	lc_report_free(r);
	free(r);
	return ret;
}

void lc_patch_result_free(struct lc_patch_result *res)
{
	free(res->sites);
	res->sites = NULL;
	res->nsites = 0;
}

/*
 * Whether an in-place manifest left in state still names backup. Backups
 * are named by the original's hash, so two libraries with the same
 * original (the driver's and a container root's copy) share one. A
 * manifest that cannot be read counts as a user: keeping a backup too
 * long is harmless, removing one that is needed is not.
 */
static bool backup_in_use(const char *state, const char *backup, struct lc_restore_result *res)
{
	char path[PATH_MAX], err[256];
	struct dirent *d;
	bool used = false;
	DIR *dir = opendir(state);

	if (!dir) {
		snprintf(res->kept_why, sizeof(res->kept_why),
			 "the state directory `%s' could not be read (%s) to see whether another in-place record names it",
			 state, strerror(errno));
		return true;
	}
	while (!used && (d = readdir(dir))) {
		struct lc_manifest m;
		size_t n = strlen(d->d_name);

		if (strncmp(d->d_name, "inplace-", 8) || n < 9 || strcmp(d->d_name + n - 9, ".manifest"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", state, d->d_name);
		if (lc_manifest_read(path, &m, err, sizeof(err))) {
			snprintf(res->kept_why, sizeof(res->kept_why),
				 "the in-place record `%s' could not be read (%s), and it may name it", path, err);
			used = true;
			break;
		}
		used = !strcmp(m.backup, backup);
		if (used) {
			snprintf(res->kept_by, sizeof(res->kept_by), "%s", path);
			snprintf(res->kept_for, sizeof(res->kept_for), "%s", m.output);
		}
		lc_manifest_free(&m);
	}
	closedir(dir);
	return used;
}

int lc_restore(const char *path, const char *state, struct lc_restore_result *res, char *err, size_t errlen)
{
	char mpath[PATH_MAX], cur[65], bsha[65], dir[PATH_MAX];
	struct lc_manifest m;
	struct lc_elf e;
	struct stat st;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = lc_state_manifest_find(state, path, mpath, sizeof(mpath), &m, err, errlen);
	if (ret) {
		if (ret == -ENOENT)
			snprintf(err, errlen, "No in-place patch of `%s' is recorded in `%s'; nothing to restore",
				 path, state);
		return ret;
	}
	ret = -ESTALE;
	if (strcmp(m.output, path)) {
		snprintf(err, errlen, "The manifest `%s' is for `%s', not `%s'", mpath, m.output, path);
		goto out;
	}
	if (lc_sha256_file(path, cur) || strcmp(cur, m.output_sha256)) {
		snprintf(err, errlen, "`%s' is not the file nvsidecar patched (hash differs: a driver upgrade may have replaced it); refusing to overwrite it with the old backup",
			 path);
		goto out;
	}
	if (lc_sha256_file(m.backup, bsha) || strcmp(bsha, m.source_sha256)) {
		snprintf(err, errlen, "The backup `%s' is missing or does not match the recorded original (sha256 %s); not restoring",
			 m.backup, m.source_sha256);
		goto out;
	}
	ret = lc_elf_open(&e, m.backup, err, errlen);
	if (ret)
		goto out;
	if (stat(path, &st) < 0)
		st.st_mode = 0644;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	ret = nvs_write_atomic(dir, strrchr(path, '/') + 1, e.map, e.size, st.st_mode & 0777, err, errlen);
	lc_elf_close(&e);
	if (ret) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, " (the library is unchanged)");
		goto out;
	}
	unlink(mpath);
	nvs_fsync_dir(state);
	/*
	 * The original is back and on disk (nvs_write_atomic fsyncs the file
	 * and its directory) and its record is gone: the backup has no use
	 * left unless another library's record still names it.
	 */
	if (!backup_in_use(state, m.backup, res)) {
		if (!unlink(m.backup)) {
			res->backup_removed = true;
			nvs_fsync_dir(state);
		} else {
			snprintf(res->kept_why, sizeof(res->kept_why), "it could not be removed: %s",
				 strerror(errno));
		}
	}
	snprintf(res->lib, sizeof(res->lib), "%s", path);
	snprintf(res->sha256, sizeof(res->sha256), "%s", m.source_sha256);
	snprintf(res->backup, sizeof(res->backup), "%s", m.backup);
out:
	lc_manifest_free(&m);
	return ret;
}
