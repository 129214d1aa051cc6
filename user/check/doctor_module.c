// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The module's installation, beside what is loaded: is there a module for
 * the running kernel at all, did Secure Boot refuse it, is the loaded one
 * the version DKMS built for this kernel, and does the initramfs carry
 * that same build (an initramfs made before an upgrade loads the old module
 * early at the next boot, whatever /lib/modules holds).
 *
 * Paths under /boot, /lib/modules, /var/lib/dkms and /sys/firmware take
 * o->root as a prefix (tests build a tree there).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check/doctor.h"
#include "check/initramfs.h"
#include "lib/io.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

static const char *const module_names[] = {
	"nvsidecar.ko", "nvsidecar.ko.xz", "nvsidecar.ko.zst", "nvsidecar.ko.gz", NULL,
};

static void kernel_release(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u) < 0)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%s", u.release);
}

/* The installed module for kver, as modules.dep lists it: its full path. */
static bool installed_module(const struct nvs_doctor_opts *o, const char *kver, char *path, size_t len)
{
	char dep[PATH_MAX], base[PATH_MAX], line[1024];
	FILE *f;
	bool found = false;

	snprintf(base, sizeof(base), "/lib/modules/%s", kver);
	nvs_doctor_path(o, base, dep, sizeof(dep));
	snprintf(dep + strlen(dep), sizeof(dep) - strlen(dep), "/modules.dep");
	f = fopen(dep, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *b;

		if (!colon)
			continue;
		*colon = 0;
		b = strrchr(line, '/');
		b = b ? b + 1 : line;
		for (size_t i = 0; module_names[i]; ++i)
			if (!strcmp(b, module_names[i]))
				found = true;
		if (found) {
			char rel[PATH_MAX + sizeof(line)];

			/* modules.dep paths are relative to /lib/modules/KVER (absolute in old kmod) */
			if (line[0] == '/')
				snprintf(rel, sizeof(rel), "%s", line);
			else
				snprintf(rel, sizeof(rel), "%s/%s", base, line);
			nvs_doctor_path(o, rel, path, len);
		}
	}
	fclose(f);
	return found;
}

/* 1 enabled, 0 disabled, -1 unknown (no EFI variable: BIOS boot or no efivarfs). */
static int secure_boot(const struct nvs_doctor_opts *o)
{
	char p[PATH_MAX];
	unsigned char b[5];
	FILE *f;
	size_t n;

	nvs_doctor_path(o, "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", p,
			sizeof(p));
	f = fopen(p, "re");
	if (!f)
		return -1;
	/* 4 bytes of attributes, then the value */
	n = fread(b, 1, sizeof(b), f);
	fclose(f);
	return n == sizeof(b) ? b[4] == 1 : -1;
}

static bool sig_enforced(const struct nvs_doctor_opts *o)
{
	char p[PATH_MAX], v[8] = "";
	FILE *f;

	nvs_doctor_path(o, "/sys/module/module/parameters/sig_enforce", p, sizeof(p));
	f = fopen(p, "re");
	if (!f)
		return false;
	if (!fgets(v, sizeof(v), f))
		v[0] = 0;
	fclose(f);
	return v[0] == 'Y';
}

void nvs_doctor_module_loaded(struct nvs_checks *c, const struct nvs_doctor_opts *o, bool loaded)
{
	char kver[256], mod[PATH_MAX];
	int sb;

	if (loaded) {
		add(c, CK_OK, "module", "module-loaded", "nvsidecar module loaded");
		return;
	}
	kernel_release(kver, sizeof(kver));
	if (!installed_module(o, kver, mod, sizeof(mod))) {
		add(c, CK_FAIL, "module", "module-loaded",
		    "nvsidecar module is not loaded, and none is installed for the running kernel %s", kver);
		fix(c, "Build it for this kernel: `dkms autoinstall -k %s' (needs linux-headers-%s); `dkms status nvsidecar' shows what is built, then `modprobe nvsidecar'",
		    kver, kver);
		return;
	}
	sb = secure_boot(o);
	if (sb == 1 || sig_enforced(o)) {
		add(c, CK_FAIL, "module", "module-loaded",
		    "nvsidecar module is not loaded (installed as %s); %s, so the kernel loads only modules signed with an enrolled key",
		    mod, sb == 1 ? "Secure Boot is on" : "module signatures are enforced (module.sig_enforce)");
		fix(c, "Run `modprobe nvsidecar'; if it says \"Key was rejected by service\", enroll the DKMS signing key: `mokutil --import /var/lib/dkms/mok.pub', reboot and confirm it in MokManager (`mokutil --sb-state' shows Secure Boot; `dkms status nvsidecar' what is built)");
		return;
	}
	add(c, CK_FAIL, "module", "module-loaded", "nvsidecar module is not loaded (installed as %s)", mod);
	fix(c, "Load it with `modprobe nvsidecar' (`dmesg | tail' says why it fails); after a kernel or driver upgrade check `dkms status nvsidecar' and rebuild with `dkms autoinstall'");
}

/*
 * The DKMS version installed for kver: the "kernel-KVER-ARCH" link DKMS
 * keeps, else the one version built for kver. "" with *others set when
 * DKMS knows nvsidecar only for other kernels; -ENOENT when not at all.
 */
static int dkms_version(const struct nvs_doctor_opts *o, const char *kver, char *ver, size_t len, int *others)
{
	char dir[PATH_MAX], p[PATH_MAX + 300], link[PATH_MAX];
	struct dirent *e;
	struct utsname u;
	struct stat st;
	DIR *d;
	ssize_t n;

	ver[0] = 0;
	*others = 0;
	nvs_doctor_path(o, "/var/lib/dkms/nvsidecar", dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return -ENOENT;
	if (!uname(&u)) {
		snprintf(p, sizeof(p), "%s/kernel-%s-%s", dir, kver, u.machine);
		n = readlink(p, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			snprintf(ver, len, "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
		}
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "source") || !strncmp(e->d_name, "kernel-", 7))
			continue;
		snprintf(p, sizeof(p), "%s/%s/%s", dir, e->d_name, kver);
		if (!stat(p, &st) && S_ISDIR(st.st_mode)) {
			if (!ver[0])
				snprintf(ver, len, "%s", e->d_name);
		} else {
			(*others)++;
		}
	}
	closedir(d);
	return 0;
}

static void check_dkms(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char *kver, bool loaded,
		       const char *lver)
{
	char ver[PATH_MAX];
	int others;

	if (dkms_version(o, kver, ver, sizeof(ver), &others) < 0) {
		add(c, CK_SKIP, "module", "module-dkms", "DKMS has no record of nvsidecar (not installed through DKMS)");
		return;
	}
	if (!ver[0]) {
		add(c, loaded ? CK_WARN : CK_FAIL, "module", "module-dkms",
		    "DKMS has nvsidecar for %d other kernel(s) but not for the running kernel %s", others, kver);
		fix(c, "`dkms autoinstall -k %s' (needs linux-headers-%s); the postinst of a kernel upgrade normally does this",
		    kver, kver);
	} else if (loaded && lver[0] && strcmp(ver, lver)) {
		add(c, CK_WARN, "module", "module-dkms", "loaded %s, but DKMS installed %s for %s", lver, ver, kver);
		fix(c, "Reload the new build: `modprobe -r nvsidecar && modprobe nvsidecar', and rebuild the initramfs so that the next boot loads it too (`update-initramfs -u -k %s', or `dracut -f --kver %s')",
		    kver, kver);
	} else {
		add(c, CK_OK, "module", "module-dkms", "DKMS installed %s for %s%s", ver, kver,
		    loaded ? ", the version loaded" : "");
	}
}

/* The initramfs image for kver: Debian's name, then dracut's. */
static bool find_initramfs(const struct nvs_doctor_opts *o, const char *kver, char *path, size_t len)
{
	static const char *const fmt[] = { "/boot/initrd.img-%s", "/boot/initramfs-%s.img" };
	char p[PATH_MAX];

	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); ++i) {
		snprintf(p, sizeof(p), fmt[i], kver);
		nvs_doctor_path(o, p, path, len);
		if (!access(path, R_OK))
			return true;
	}
	return false;
}

/* version and srcversion of a module file (read whole, decompressed). */
static int file_modinfo(const char *path, char *ver, size_t vlen, char *src, size_t slen, char *err, size_t errlen)
{
	void *raw = NULL, *ko = NULL;
	size_t n = 0, kn = 0;
	FILE *f = fopen(path, "re");
	struct stat st;
	int ret = 0;

	if (!f || fstat(fileno(f), &st) < 0 || st.st_size > (64 << 20)) {
		ret = f ? -EFBIG : -errno;
		snprintf(err, errlen, "Unable to read %s: %s", path, strerror(-ret));
		goto out;
	}
	n = (size_t)st.st_size;
	raw = malloc(n ? n : 1);
	if (!raw || fread(raw, 1, n, f) != n) {
		ret = raw ? -EIO : -ENOMEM;
		snprintf(err, errlen, "Unable to read %s: %s", path, strerror(-ret));
		goto out;
	}
	ret = nvs_unpack(raw, n, &ko, &kn, err, errlen);
	if (!ret)
		nvs_modinfo(ko, kn, ver, vlen, src, slen);
out:
	if (f)
		fclose(f);
	free(raw);
	free(ko);
	return ret;
}

/*
 * What an initramfs image carries, remembered per image (path, size,
 * mtime) in /run/nvsidecar: decompressing one takes a second or more, and
 * the metrics timer runs every few minutes. Line: "found|none PATH SIZE
 * MTIME_NS VERSION SRCVERSION".
 */
#define INITRAMFS_CACHE "/run/nvsidecar/doctor-initramfs.cache"

struct carried {
	bool found;
	char version[128], srcversion[64];
};

static bool cache_get(const struct nvs_doctor_opts *o, const char *img, const struct stat *st, struct carried *k)
{
	char p[PATH_MAX], line[PATH_MAX + 400], path[PATH_MAX], what[8], v[128], s[64];
	unsigned long long size, mt;
	bool hit = false;
	FILE *f = fopen(nvs_doctor_path(o, INITRAMFS_CACHE, p, sizeof(p)), "re");

	while (f && !hit && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%7s %4095s %llu %llu %127s %63s", what, path, &size, &mt, v, s) != 6 ||
		    strcmp(path, img) || size != (unsigned long long)st->st_size ||
		    mt != (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec)
			continue;
		k->found = !strcmp(what, "found");
		snprintf(k->version, sizeof(k->version), "%s", strcmp(v, "-") ? v : "");
		snprintf(k->srcversion, sizeof(k->srcversion), "%s", strcmp(s, "-") ? s : "");
		hit = true;
	}
	if (f)
		fclose(f);
	return hit;
}

/* Best effort: without a writable /run the next run reads the image again. */
static void cache_put(const struct nvs_doctor_opts *o, const char *img, const struct stat *st, const struct carried *k)
{
	char p[PATH_MAX], dir[PATH_MAX], buf[PATH_MAX + 400], err[256];
	int n;

	nvs_doctor_path(o, INITRAMFS_CACHE, p, sizeof(p));
	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = 0;
	/* mkdir -p: /run/nvsidecar is gone after a reboot */
	for (char *s = strchr(dir + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = 0;
		mkdir(dir, 0755);
		if (!s)
			break;
		*s = '/';
	}
	n = snprintf(buf, sizeof(buf), "%s %s %llu %llu %s %s\n", k->found ? "found" : "none", img,
		     (unsigned long long)st->st_size,
		     (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec,
		     k->version[0] ? k->version : "-", k->srcversion[0] ? k->srcversion : "-");
	/* the line is split on blanks: an image path with one is not cached */
	if (n > 0 && (size_t)n < sizeof(buf) && !strpbrk(img, " \t\n"))
		nvs_write_atomic(dir, strrchr(p, '/') + 1, buf, (size_t)n, 0644, err, sizeof(err));
}

static int carried_module(const struct nvs_doctor_opts *o, const char *img, struct carried *k, char *err,
			  size_t errlen)
{
	char member[PATH_MAX];
	void *data = NULL, *ko = NULL;
	size_t n = 0, kn = 0;
	struct stat st;
	int ret;

	memset(k, 0, sizeof(*k));
	if (stat(img, &st) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -errno;
	}
	if (cache_get(o, img, &st, k))
		return 0;
	ret = nvs_initramfs_find(img, module_names, member, sizeof(member), &data, &n, err, errlen);
	if (ret < 0)
		return ret;
	if (ret) {
		ret = nvs_unpack(data, n, &ko, &kn, err, errlen);
		if (!ret)
			nvs_modinfo(ko, kn, k->version, sizeof(k->version), k->srcversion, sizeof(k->srcversion));
		free(data);
		free(ko);
		if (ret)
			return ret;
		k->found = true;
	}
	cache_put(o, img, &st, k);
	return 0;
}

static void check_initramfs(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char *kver)
{
	char img[PATH_MAX], mod[PATH_MAX], err[PATH_MAX + 512], mver[128] = "", msrc[64] = "";
	struct carried k;
	const char *iver = k.version, *isrc = k.srcversion;

	if (!find_initramfs(o, kver, img, sizeof(img))) {
		add(c, CK_SKIP, "module", "module-initramfs", "no initramfs for %s in /boot", kver);
		return;
	}
	if (carried_module(o, img, &k, err, sizeof(err)) < 0) {
		add(c, CK_WARN, "module", "module-initramfs", "Unable to read %s: %s", img, err);
		fix(c, "`lsinitramfs %s | grep nvsidecar' (dracut: `lsinitrd') lists it by hand", img);
		return;
	}
	if (!k.found) {
		add(c, CK_OK, "module", "module-initramfs",
		    "%s does not carry nvsidecar (it loads from /lib/modules once the root file system is up)", img);
		return;
	}
	if (!installed_module(o, kver, mod, sizeof(mod))) {
		add(c, CK_WARN, "module", "module-initramfs",
		    "%s carries nvsidecar %s, but no module is installed for %s: the initramfs is older than the removal",
		    img, iver[0] ? iver : "(no version)", kver);
		fix(c, "`update-initramfs -u -k %s' (dracut: `dracut -f --kver %s')", kver, kver);
		return;
	}
	if (file_modinfo(mod, mver, sizeof(mver), msrc, sizeof(msrc), err, sizeof(err)) < 0) {
		add(c, CK_WARN, "module", "module-initramfs", "%s", err);
		return;
	}
	/* srcversion tells two builds of the same version apart */
	if (strcmp(iver, mver) || strcmp(isrc, msrc)) {
		add(c, CK_WARN, "module", "module-initramfs",
		    "%s carries nvsidecar %s (%s) but %s is %s (%s): the next boot loads the old module early", img,
		    iver[0] ? iver : "?", isrc[0] ? isrc : "no srcversion", mod, mver[0] ? mver : "?",
		    msrc[0] ? msrc : "no srcversion");
		fix(c, "Rebuild the initramfs: `update-initramfs -u -k %s' (dracut: `dracut -f --kver %s'); NVSIDECAR_UPDATE_INITRAMFS=yes in /etc/default/nvsidecar makes package upgrades do it",
		    kver, kver);
	} else {
		add(c, CK_OK, "module", "module-initramfs", "%s carries the installed nvsidecar %s", img, mver);
	}
}

void nvs_doctor_module_install(struct nvs_checks *c, const struct nvs_doctor_opts *o, bool loaded,
			       const char *loaded_version)
{
	char kver[256];

	kernel_release(kver, sizeof(kver));
	check_dkms(c, o, kver, loaded, loaded_version);
	/* decompressing the initramfs takes a second or two: not for --quick */
	if (o->mode != NVS_DOCTOR_QUICK)
		check_initramfs(c, o, kver);
}
