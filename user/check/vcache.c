// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The verdict cache (check/vcache.h): the key of what changes a verified
 * result, and the file that keeps both.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check/vcache.h"
#include "lib/env.h"
#include "lib/io.h"
#include "lib/parse.h"
#include "sys/nvdriver.h"

static const char *const field_name[VK_N] = {
	"driver", "flavour", "kernel", "bios-version", "bios-date", "bar1", "acs", "iommu", "nccl", "ucx",
};

const char *nvs_vkey_name(enum nvs_vkey_field f)
{
	return f < VK_N ? field_name[f] : "?";
}

/* Printable ASCII only, so that a text is one line of the file. */
static void put_text(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && *src && i + 1 < len; ++src)
		dst[i++] = *src >= 0x20 && *src < 0x7f ? *src : '?';
	dst[i] = 0;
}

/* A key value: as put_text, and "unknown" for nothing. */
static void put(char *dst, size_t len, const char *src)
{
	put_text(dst, len, src);
	if (!dst[0])
		snprintf(dst, len, "unknown");
}

/* The first line of root+path, or "" when it cannot be read. */
static void read_line(const char *root, const char *path, char *buf, size_t len)
{
	char p[4096];
	FILE *f;

	buf[0] = 0;
	snprintf(p, sizeof(p), "%s%s", root ? root : "", path);
	f = fopen(p, "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * The driver's flavour from its /proc line (sys/nvdriver.h quotes both):
 * the open kernel module says "Open Kernel Module".
 */
static void vk_driver(struct nvs_vkey *k)
{
	const char *file = nvs_env_nvidia_version_file();
	char line[512], ver[64];

	if (!nvs_nvdriver_version(ver, sizeof(ver))) {
		put(k->v[VK_DRIVER], sizeof(k->v[0]), "none");
		put(k->v[VK_FLAVOUR], sizeof(k->v[0]), "none");
		return;
	}
	put(k->v[VK_DRIVER], sizeof(k->v[0]), ver);
	read_line(NULL, file ? file : "/proc/driver/nvidia/version", line, sizeof(line));
	put(k->v[VK_FLAVOUR], sizeof(k->v[0]), strstr(line, "Open Kernel Module") ? "open" :
			      strstr(line, "Kernel Module") ? "proprietary" : "unknown");
}

/* Appends to the string in buf; a value too long is cut (a key only has to differ). */
static void __attribute__((format(printf, 3, 4))) app(char *buf, size_t len, const char *fmt, ...)
{
	size_t l = strlen(buf);
	va_list ap;

	if (l + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + l, len - l, fmt, ap);
	va_end(ap);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return h;
}

/* The ACS control word of a bridge (PCIe extended capability 0x000d), or -1. */
static int acs_ctrl(const char *cfgpath)
{
	unsigned char cfg[4096];
	int fd = open(cfgpath, O_RDONLY | O_CLOEXEC), ctl = -1;
	ssize_t n = fd < 0 ? -1 : pread(fd, cfg, sizeof(cfg), 0);
	unsigned int pos = 0x100;

	if (fd >= 0)
		close(fd);
	/* 256 bytes or less: no extended space (or not root, which sees 64) */
	for (int hops = 0; n > 0x100 && pos >= 0x100 && pos + 8 <= (size_t)n && hops < 64; ++hops) {
		uint32_t h = cfg[pos] | cfg[pos + 1] << 8 | cfg[pos + 2] << 16 | (uint32_t)cfg[pos + 3] << 24;

		if ((h & 0xffff) == 0x000d) {
			ctl = cfg[pos + 6] | cfg[pos + 7] << 8;
			break;
		}
		pos = h >> 20;
	}
	return ctl;
}

/* BAR1 of the GPUs and the bridges' ACS, from sysfs in one pass. */
static void vk_pci(struct nvs_vkey *k, const char *root)
{
	char dir[4096], p[4400], cls[32], vendor[32], line[256];
	char bar1[sizeof(k->v[0])] = "";
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned int nacs = 0;
	struct dirent **e = NULL;
	int n;

	snprintf(dir, sizeof(dir), "%s/sys/bus/pci/devices", root ? root : "");
	n = scandir(dir, &e, NULL, by_name);
	for (int i = 0; i < n; ++i) {
		const char *bdf = e[i]->d_name;

		if (bdf[0] == '.')
			goto next;
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/class", bdf);
		read_line(root, p, cls, sizeof(cls));
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", bdf);
		read_line(root, p, vendor, sizeof(vendor));
		if (!strncmp(cls, "0x0604", 6)) {
			int ctl;

			snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s/config", root ? root : "", bdf);
			ctl = acs_ctrl(p);
			if (ctl >= 0) {
				h = fnv(h, bdf, strlen(bdf));
				h = fnv(h, &ctl, sizeof(ctl));
				++nacs;
			}
		} else if (!strncmp(cls, "0x03", 4) && !strcmp(vendor, "0x10de")) {
			/* `resource': one "start end flags" line per BAR; BAR1 is the second */
			unsigned long long s = 0, end = 0;
			FILE *f;

			snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s/resource", root ? root : "", bdf);
			f = fopen(p, "re");
			if (f && fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f) &&
			    sscanf(line, "%llx %llx", &s, &end) == 2 && end > s) {
				app(bar1, sizeof(bar1), "%s%s=%llu", bar1[0] ? "," : "", bdf, end - s + 1);
			}
			if (f)
				fclose(f);
		}
next:
		free(e[i]);
	}
	free(e);
	put(k->v[VK_BAR1], sizeof(k->v[0]), bar1[0] ? bar1 : "none");
	snprintf(line, sizeof(line), "bridges=%u hash=%016llx", nacs, (unsigned long long)h);
	put(k->v[VK_ACS], sizeof(k->v[0]), line);
}

/*
 * The kernel command line's words that change ACS and the IOMMU, and
 * whether IOMMU groups exist (they do when an IOMMU translates).
 */
static void vk_cmdline(struct nvs_vkey *k, const char *root)
{
	char cmd[4096], iommu[sizeof(k->v[0])] = "";
	unsigned int groups = 0;
	struct dirent *d;
	DIR *dir;
	char *save = NULL;

	snprintf(cmd, sizeof(cmd), "%s/sys/kernel/iommu_groups", root ? root : "");
	dir = opendir(cmd);
	while (dir && (d = readdir(dir)))
		groups += d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	snprintf(iommu, sizeof(iommu), "groups=%u", groups);
	read_line(root, "/proc/cmdline", cmd, sizeof(cmd));
	for (char *w = strtok_r(cmd, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (!strncmp(w, "pcie_acs_override=", 18))
			app(k->v[VK_ACS], sizeof(k->v[0]), " %s", w);
		else if (!strncmp(w, "iommu", 5) || strstr(w, "_iommu="))
			app(iommu, sizeof(iommu), " %s", w);
	}
	put(k->v[VK_IOMMU], sizeof(k->v[0]), iommu);
}

/*
 * NCCL and UCX: the version readers live in sys/versions.[ch] (issue 22
 * item 2, another branch). Until they are here, these two fields are
 * "unknown" on every run, so they never change the key: fill them from
 * those readers when they land.
 */
static void vkey_stack_versions(struct nvs_vkey *k)
{
	put(k->v[VK_NCCL], sizeof(k->v[0]), "unknown");
	put(k->v[VK_UCX], sizeof(k->v[0]), "unknown");
}

void nvs_vkey_read(struct nvs_vkey *k, const char *root)
{
	struct utsname u;
	char line[256];

	memset(k, 0, sizeof(*k));
	vk_driver(k);
	put(k->v[VK_KERNEL], sizeof(k->v[0]), uname(&u) ? "" : u.release);
	read_line(root, "/sys/class/dmi/id/bios_version", line, sizeof(line));
	put(k->v[VK_BIOS_VERSION], sizeof(k->v[0]), line);
	read_line(root, "/sys/class/dmi/id/bios_date", line, sizeof(line));
	put(k->v[VK_BIOS_DATE], sizeof(k->v[0]), line);
	vk_pci(k, root);
	vk_cmdline(k, root);
	vkey_stack_versions(k);
}

enum nvs_vkey_field nvs_vkey_diff(const struct nvs_vkey *a, const struct nvs_vkey *b)
{
	for (int f = 0; f < VK_N; ++f)
		if (strcmp(a->v[f], b->v[f]))
			return (enum nvs_vkey_field)f;
	return VK_N;
}

const char *nvs_vcache_dir(const char *root, char *buf, size_t len)
{
	const char *d = nvs_env_state_dir();

	if (d)
		snprintf(buf, len, "%s", d);
	else
		snprintf(buf, len, "%s/var/lib/nvsidecar", root ? root : "");
	return buf;
}

/* ---- the file ------------------------------------------------------------
 *   nvsidecar-verdict 3
 *   written SECONDS
 *   key NAME VALUE                 (every field, once, in any order)
 *   check RESULT SECONDS LAYER NAME MESSAGE
 *   fix TEXT                       (optional, for the check before it)
 *   gpu N                          (optional, version 3: below)
 *   last RESULT SECONDS            (optional, version 3: below)
 *   end N                          (N: the number of check lines; last)
 * The end line makes a file cut short (a crash, a full or damaged file
 * system: the write itself is atomic) unusable rather than a shorter,
 * healthier-looking verdict (admin review A5). Version 1 files, written
 * before the end line, are still read without one: refusing them would
 * turn the FAIL of every node drained on a cached verdict into a WARN at
 * the upgrade, and the health check would resume those nodes until the
 * next --full (review of A5).
 * Version 3 adds two optional lines after a check (review M1, M2):
 *   gpu N                          the one GPU the check ran on (full-rdma)
 *   last RESULT SECONDS            a SKIP because a GPU was busy: the last
 *                                  real verification it carries (RESULT
 *                                  SKIP: none since SECONDS)
 * so that a pass on another GPU does not clear a GPU's FAIL, and a SKIP
 * does not make a verdict look freshly verified. Versions 1 and 2 are
 * read as before (no gpu, no last), and a line of a later version in
 * them is refused (admin review L2); a version above 3 is called a newer
 * nvsidecar's (L1), a WARN until --full rewrites it.
 * The file and its directory must be this user's or root's and writable
 * by no one else, and the file is replaced, never written through a link
 * (admin review H2: the health check drains and resumes on it).
 */
#define MAGIC_WORD "nvsidecar-verdict "
#define VERSION 3
#define MAGIC "nvsidecar-verdict 3"
#define MAX_TIME (1ll << 40)
#define SEEN_TIME (1u << VK_N)
#define SEEN_END (1u << (VK_N + 1))
#define SEEN_ALL ((1u << (VK_N + 2)) - 1)

static int bad(char *err, size_t errlen, const char *dir, size_t line, const char *why)
{
	snprintf(err, errlen, "%s/%s:%zu: %s", dir, NVS_VCACHE_FILE, line, why);
	return -EINVAL;
}

/* "WORD rest": the word into w (at most wlen-1 bytes), *rest after one space. */
static bool word(const char *s, char *w, size_t wlen, const char **rest)
{
	size_t n = strcspn(s, " ");

	if (!n || n >= wlen)
		return false;
	memcpy(w, s, n);
	w[n] = 0;
	*rest = s[n] ? s + n + 1 : s + n;
	return true;
}

static bool seconds(const char *s, int64_t *t)
{
	uint64_t v;

	if (nvs_parse_u64(s, 0, MAX_TIME, &v))
		return false;
	*t = (int64_t)v;
	return true;
}

static bool copy_text(char *dst, size_t len, const char *s)
{
	if (strlen(s) >= len)
		return false;
	strcpy(dst, s);
	return true;
}

static int parse_line(struct nvs_vcache *v, const char *s, unsigned int *seen, unsigned int version, char *err,
		      size_t errlen, const char *dir, size_t no)
{
	char w[128];
	const char *rest;

	if (*seen & SEEN_END)
		return bad(err, errlen, dir, no, "a line after the end line");
	if (!word(s, w, sizeof(w), &rest))
		return bad(err, errlen, dir, no, "not a verdict line");
	if (((!strcmp(w, "gpu") || !strcmp(w, "last")) && version < 3) || (!strcmp(w, "end") && version < 2)) {
		char why[256];

		/* a newer format's line in an older file: no file nvsidecar wrote (admin review L2) */
		snprintf(why, sizeof(why), "a `%s' line is format %d's, and this file says format %u", w,
			 strcmp(w, "end") ? 3 : 2, version);
		return bad(err, errlen, dir, no, why);
	} else if (!strcmp(w, "written")) {
		if (!seconds(rest, &v->written))
			return bad(err, errlen, dir, no, "bad time");
		*seen |= SEEN_TIME;
	} else if (!strcmp(w, "end")) {
		uint64_t n;

		/*
		 * The count as save writes it (%zu): "06" or "+6" is no file
		 * nvsidecar wrote, so not a count to trust as one.
		 */
		if ((rest[0] == '0' && rest[1]) || nvs_parse_u64(rest, 0, NVS_VCACHE_MAX, &n))
			return bad(err, errlen, dir, no, "malformed end line (`end N', N a plain decimal count)");
		if (n != v->n)
			return bad(err, errlen, dir, no, "the end line does not count the checks before it");
		*seen |= SEEN_END;
	} else if (!strcmp(w, "key")) {
		char name[32];
		int f;

		if (!word(rest, name, sizeof(name), &rest) || !*rest)
			return bad(err, errlen, dir, no, "a key line needs a name and a value");
		for (f = 0; f < VK_N && strcmp(name, field_name[f]); ++f)
			;
		if (f == VK_N || (*seen & 1u << f))
			return bad(err, errlen, dir, no, f == VK_N ? "unknown key" : "key given twice");
		if (!copy_text(v->key.v[f], sizeof(v->key.v[f]), rest))
			return bad(err, errlen, dir, no, "key value too long");
		*seen |= 1u << f;
	} else if (!strcmp(w, "check")) {
		struct nvs_vresult *r;
		char t[32];
		int res;

		if (v->n == NVS_VCACHE_MAX)
			return bad(err, errlen, dir, no, "too many checks");
		r = &v->r[v->n];
		memset(r, 0, sizeof(*r));
		r->gpu = -1;
		if (!word(rest, t, sizeof(t), &rest))
			return bad(err, errlen, dir, no, "a check line needs a result");
		for (res = CK_OK; res <= CK_SKIP && strcmp(t, nvs_check_result_name((enum nvs_check_result)res)); ++res)
			;
		if (res > CK_SKIP)
			return bad(err, errlen, dir, no, "unknown result");
		r->res = (enum nvs_check_result)res;
		if (!word(rest, t, sizeof(t), &rest) || !seconds(t, &r->verified))
			return bad(err, errlen, dir, no, "bad time");
		if (!word(rest, r->layer, sizeof(r->layer), &rest) || !word(rest, r->name, sizeof(r->name), &rest) ||
		    !copy_text(r->msg, sizeof(r->msg), rest))
			return bad(err, errlen, dir, no, "a check line needs a layer, a name and a message");
		v->n++;
	} else if (!strcmp(w, "gpu")) {
		uint32_t g;

		if (!v->n || v->r[v->n - 1].gpu >= 0 || (rest[0] == '0' && rest[1]) || nvs_parse_u32(rest, 0, 63, &g))
			return bad(err, errlen, dir, no, "a gpu line (`gpu N', 0-63) belongs after its check, once");
		v->r[v->n - 1].gpu = (int)g;
	} else if (!strcmp(w, "last")) {
		struct nvs_vresult *r = v->n ? &v->r[v->n - 1] : NULL;
		char t[32];
		int res;

		if (!r || r->res != CK_SKIP || r->has_last || !word(rest, t, sizeof(t), &rest))
			return bad(err, errlen, dir, no, "a last line belongs after its SKIP check, once");
		for (res = CK_OK; res <= CK_SKIP && strcmp(t, nvs_check_result_name((enum nvs_check_result)res)); ++res)
			;
		if (res > CK_SKIP || !seconds(rest, &r->last))
			return bad(err, errlen, dir, no, "a last line is `last RESULT SECONDS'");
		r->last_res = (enum nvs_check_result)res;
		r->has_last = true;
	} else if (!strcmp(w, "fix")) {
		if (!v->n || v->r[v->n - 1].fix[0] || !*rest ||
		    !copy_text(v->r[v->n - 1].fix, sizeof(v->r[0].fix), rest))
			return bad(err, errlen, dir, no, "a fix belongs after its check, once");
	} else {
		return bad(err, errlen, dir, no, "not a verdict line");
	}
	return 0;
}

/*
 * Who may have written what is read and replaced here (admin review H2):
 * the health check drains and resumes nodes on the verdict, so a state
 * directory or a verdict another user could write is a forged verdict
 * waiting to happen (a per-node directory under /tmp is the obvious
 * choice on a read-only root). The rule: owned by this user or root, and
 * writable by no group or other user (a sticky bit does not help: the
 * owner of the directory still chooses what is in it).
 */
static bool trusted(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & 022);
}

static int untrusted(char *err, size_t errlen, const char *what, const char *path, const struct stat *st,
		     const char *fix)
{
	snprintf(err, errlen,
		 "%s `%s' is %s%s%s (owner uid %u, mode %03o): not trusted, since another user could forge the verdict; %s",
		 what, path, st->st_uid == geteuid() || st->st_uid == 0 ? "" : "owned by another user",
		 (st->st_uid == geteuid() || st->st_uid == 0) || !(st->st_mode & 022) ? "" : " and ",
		 st->st_mode & 022 ? "writable by others" : "", (unsigned int)st->st_uid,
		 (unsigned int)(st->st_mode & 07777), fix);
	return -EPERM;
}

static int check_dir(const char *dir, char *err, size_t errlen)
{
	char fix[4400];
	struct stat st;

	/*
	 * A link at the directory's own name counts as its owner's: in a
	 * sticky /tmp another user could point /tmp/NAME at a directory of
	 * ours (not chmod'able: a link's mode is always 777).
	 */
	if (!lstat(dir, &st) && S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen,
			 "the state directory `%s' is a symbolic link owned by another user (uid %u): not trusted, since another user could forge the verdict; set NVSIDECAR_STATE_DIR to a directory only %s can write",
			 dir, (unsigned int)st.st_uid, geteuid() ? "you" : "root");
		return -EPERM;
	}
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "the state directory `%s' is not a directory", dir);
		return -ENOTDIR;
	}
	if (trusted(&st))
		return 0;
	snprintf(fix, sizeof(fix), "run `chown %s %s && chmod 755 %s', or set NVSIDECAR_STATE_DIR to a directory only %s can write",
		 geteuid() ? "$USER" : "root", dir, dir, geteuid() ? "you" : "root");
	return untrusted(err, errlen, "the state directory", dir, &st, fix);
}

/*
 * One hint for every verdict path that is no verdict file, read or written
 * (admin review L3): removing it and running --full again works for all.
 */
static int not_a_file(char *err, size_t errlen, const char *dir, mode_t m, bool writing)
{
	const char *kind = S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISLNK(m) ? "a symbolic link" :
			   S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
	char why[200];

	snprintf(why, sizeof(why), "not a regular file: remove it, then run `nvsidecar doctor --full'%s (it is %s)",
		 writing ? " again" : "", kind);
	bad(err, errlen, dir, 0, why);
	return S_ISDIR(m) ? -EISDIR : -EINVAL;
}

int nvs_vcache_load(struct nvs_vcache *v, const char *dir, char *err, size_t errlen)
{
	char path[4200], fix[4400];
	struct nvs_ifile in;
	struct stat st;
	unsigned int seen = 0, version = 0;
	size_t len;
	bool cut;
	char *l;
	int ret;

	memset(v, 0, sizeof(*v));
	snprintf(path, sizeof(path), "%s/%s", dir, NVS_VCACHE_FILE);
	if (lstat(path, &st))
		return -errno;
	ret = check_dir(dir, err, errlen);
	if (ret)
		return ret == -ENOENT ? -EIO : ret;
	/*
	 * Only a regular file, not followed through a link: the health check
	 * reads this, and a FIFO that something holds open would keep it
	 * waiting for its end.
	 */
	if (!S_ISREG(st.st_mode))
		return not_a_file(err, errlen, dir, st.st_mode, false);
	ret = nvs_ifile_open(&in, path, 2048, 256 << 10, err, errlen);
	if (ret)
		return ret;
	/* replaced between the two looks: the same rules */
	if (fstat(in.fd, &st) || !S_ISREG(st.st_mode)) {
		ret = not_a_file(err, errlen, dir, st.st_mode, false);
		goto out;
	}
	if (!trusted(&st)) {
		snprintf(fix, sizeof(fix), "remove it (rm `%s'), then run `nvsidecar doctor --full'", path);
		ret = untrusted(err, errlen, "the verdict", path, &st, fix);
		goto out;
	}
	if (!st.st_size) {
		ret = bad(err, errlen, dir, 0, "empty, not a verdict: remove it, then run `nvsidecar doctor --full'");
		goto out;
	}
	while ((ret = nvs_ifile_line(&in, &l, &len, &cut, err, errlen)) > 0) {
		for (size_t i = 0; i < len; ++i)
			if ((unsigned char)l[i] < 0x20 || (unsigned char)l[i] >= 0x7f) {
				ret = bad(err, errlen, dir, in.lineno, "not printable text");
				goto out;
			}
		if (in.lineno == 1) {
			uint32_t n;

			if (strncmp(l, MAGIC_WORD, strlen(MAGIC_WORD)) || (l[strlen(MAGIC_WORD)] == '0') ||
			    nvs_parse_u32(l + strlen(MAGIC_WORD), 1, UINT32_MAX, &n)) {
				ret = bad(err, errlen, dir, 1, "not a verdict file (`" MAGIC "' expected)");
				goto out;
			}
			if (n > VERSION) {
				char why[200];

				/* admin review L1: not "not a verdict file" */
				snprintf(why, sizeof(why),
					 "written by a newer nvsidecar (format %u); this one reads up to %d: run `nvsidecar doctor --full' to rewrite it",
					 n, VERSION);
				ret = bad(err, errlen, dir, 1, why);
				goto out;
			}
			version = n;
			continue;
		}
		ret = parse_line(v, l, &seen, version, err, errlen, dir, in.lineno);
		if (ret)
			goto out;
	}
	if (!ret && (seen & ~SEEN_END) != (SEEN_ALL & ~SEEN_END))
		ret = bad(err, errlen, dir, in.lineno, "incomplete: a key field or the time is missing");
	else if (!ret && version >= 2 && !(seen & SEEN_END))
		ret = bad(err, errlen, dir, in.lineno,
			  "incomplete: no end line (cut short); run `nvsidecar doctor --full' again");
out:
	nvs_ifile_close(&in);
	if (ret)
		v->n = 0;
	return ret < 0 ? ret : 0;
}

int nvs_vcache_save(const struct nvs_vcache *v, const char *dir, char *err, size_t errlen)
{
	char failed[4096], val[600], path[4200];
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	ret = nvs_make_dirs(dir, 0755, failed, sizeof(failed));
	if (ret) {
		/* the directory asked for, and the part that stopped it (admin review L3) */
		if (strcmp(failed, dir))
			snprintf(err, errlen, "Unable to create the state directory `%s': `%s' %s", dir, failed,
				 ret == -ENOTDIR ? "is not a directory" : strerror(-ret));
		else
			snprintf(err, errlen, "Unable to create the state directory `%s': %s", dir, strerror(-ret));
		return ret;
	}
	/* never written through a link, nor into a directory others can write (admin review H2) */
	ret = check_dir(dir, err, errlen);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s", dir, NVS_VCACHE_FILE);
	if (!lstat(path, &st) && S_ISDIR(st.st_mode))
		return not_a_file(err, errlen, dir, st.st_mode, true);
	f = open_memstream(&buf, &len);
	if (!f) {
		snprintf(err, errlen, "Out of memory");
		return -ENOMEM;
	}
	fprintf(f, "%s\nwritten %lld\n", MAGIC, (long long)v->written);
	for (int k = 0; k < VK_N; ++k) {
		put(val, sizeof(val), v->key.v[k]);
		fprintf(f, "key %s %s\n", field_name[k], val);
	}
	for (size_t i = 0; i < v->n; ++i) {
		const struct nvs_vresult *r = &v->r[i];

		put_text(val, sizeof(val), r->msg);
		fprintf(f, "check %s %lld %s %s %s\n", nvs_check_result_name(r->res), (long long)r->verified, r->layer,
			r->name, val);
		if (r->fix[0]) {
			put_text(val, sizeof(val), r->fix);
			fprintf(f, "fix %s\n", val);
		}
		if (r->gpu >= 0 && r->gpu <= 63)
			fprintf(f, "gpu %d\n", r->gpu);
		if (r->res == CK_SKIP && r->has_last)
			fprintf(f, "last %s %lld\n", nvs_check_result_name(r->last_res), (long long)r->last);
	}
	fprintf(f, "end %zu\n", v->n);
	if (fclose(f)) {
		free(buf);
		snprintf(err, errlen, "Out of memory");
		return -ENOMEM;
	}
	ret = nvs_write_atomic_nofollow(dir, NVS_VCACHE_FILE, buf, len, 0644, err, errlen);
	free(buf);
	return ret;
}
