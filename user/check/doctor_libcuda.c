// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libcuda and the two GPUDirect RDMA gates, judged by library calls into
 * the libcuda engine (libcuda/report.h), not by running `libcuda status':
 *
 *   libcuda          the installed libcuda: analysed, and no patched copy
 *                    made from it (or from the one it replaced) is stale;
 *   libcuda-patched  the copy `libcuda patch --out DIR' wrote (patched =
 *                    DIR in doctor.conf): patched and current;
 *   gdr-dmabuf       libcuda's dma-buf gate, the one nvsidecar patches:
 *                    open in the library applications will load;
 *   gdr-peermem      nvidia-peermem, the other path to GPU memory for RDMA,
 *                    which fails on its own (a driver and RDMA core that do
 *                    not match) while attribute 116 may still say yes.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/doctor.h"
#include "lib/env.h"
#include "libcuda/manifest.h"
#include "libcuda/report.h"
#include "sys/nvdriver.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

static const char *state_dir(void)
{
	return nvs_env_libcuda_state(LC_DEFAULT_STATE);
}

static const char *first_stale(const struct lc_report *r)
{
	for (size_t i = 0; i < r->nstale; ++i)
		if (r->stale[i].stale)
			return r->stale[i].reason;
	return NULL;
}

/* The installed libcuda. Returns its verdict, or -1 when there is none to judge. */
static int check_installed(struct nvs_checks *c, const struct nvs_doctor_opts *o, struct lc_report *r)
{
	char err[PATH_MAX + 256];
	const char *why, *path, *perr;
	int ret = nvs_doctor_libcuda_path(c, o, &path, &perr);

	if (ret) {
		add(c, o->lib[0] ? CK_FAIL : CK_SKIP, "libcuda", "libcuda", "%s", perr);
		if (o->lib[0])
			fix(c, "Fix lib in %s or --lib", NVS_DOCTOR_CONF);
		return -1;
	}
	ret = lc_analyse(path, state_dir(), r, err, sizeof(err));
	if (ret) {
		add(c, CK_FAIL, "libcuda", "libcuda", "Unable to analyse %s: %s", path, err);
		fix(c, "`nvsidecar libcuda status --lib %s' shows the details", path);
		return -1;
	}
	why = first_stale(r);
	if (why) {
		add(c, CK_FAIL, "libcuda", "libcuda", "libcuda %s (%s): a patched copy made for another driver is stale: %s",
		    r->version, path, why);
		fix(c, "Re-run `nvsidecar libcuda patch' the way the copy was made (`nvsidecar libcuda status' lists it)");
	} else {
		add(c, CK_OK, "libcuda", "libcuda", "libcuda %s (%s): %s%s", r->version, path, lc_verdict_name(r->v),
		    r->nstale ? ", its patched copies are current" : "");
	}
	return (int)r->v;
}

/* The patched copy: true when it is patched and current (its gate is open). */
static bool check_patched(struct nvs_checks *c, const struct nvs_doctor_opts *o, struct lc_report *r)
{
	char lib[PATH_MAX + 32], man[PATH_MAX + 64], err[PATH_MAX + 256];
	const char *dir = o->patched, *why;
	struct stat st;

	if (!dir[0]) {
		add(c, CK_SKIP, "libcuda", "libcuda-patched",
		    "no patched copy configured (patched = DIR in %s, the directory `nvsidecar libcuda patch --out DIR' wrote)",
		    NVS_DOCTOR_CONF);
		return false;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		add(c, CK_FAIL, "libcuda", "libcuda-patched", "Unable to use the patched copy in `%s': %s", dir,
		    stat(dir, &st) < 0 ? strerror(errno) : "not a directory");
		fix(c, "Run `nvsidecar libcuda patch --out %s', or fix patched in %s", dir, NVS_DOCTOR_CONF);
		return false;
	}
	snprintf(man, sizeof(man), "%s/%s", dir, LC_MANIFEST_NAME);
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	if (access(man, R_OK) < 0) {
		add(c, CK_FAIL, "libcuda", "libcuda-patched", "Unable to read `%s': %s: not a `libcuda patch --out' directory",
		    man, strerror(errno));
		fix(c, "Re-run `nvsidecar libcuda patch --out %s'", dir);
		return false;
	}
	if (lc_analyse(lib, state_dir(), r, err, sizeof(err))) {
		add(c, CK_FAIL, "libcuda", "libcuda-patched", "Unable to analyse %s: %s", lib, err);
		fix(c, "Re-run `nvsidecar libcuda patch --out %s'", dir);
		return false;
	}
	why = first_stale(r);
	if (why) {
		char drv[64], parent[PATH_MAX];
		const char *base = strrchr(dir, '/');
		int flavour;

		add(c, CK_FAIL, "libcuda", "libcuda-patched", "patched copy in %s is stale: %s", dir, why);
		/*
		 * patch --out DIR writes into exactly DIR: re-running it there
		 * replaces the copy that nodes still on the old driver load
		 * (T3-15). A DIR named by its version is one of a per-version
		 * set: its sibling is named for the new driver.
		 */
		snprintf(parent, sizeof(parent), "%s", dir);
		base = base ? base + 1 : dir;
		if (base != dir && base[0] >= '0' && base[0] <= '9' && strspn(base, "0123456789.") == strlen(base))
			parent[base - 1 - dir] = 0;
		if (!nvs_nvdriver_info(drv, sizeof(drv), &flavour) || !drv[0])
			snprintf(drv, sizeof(drv), "$(cat /sys/module/nvidia/version)");
		fix(c, "Write a copy for the running driver into its own directory, `nvsidecar libcuda patch --out %s/%s', and set patched (%s, or --patched) to it: patch writes into exactly the directory it is given, so re-running it on %s would replace the copy that nodes still on the old driver load during a rolling upgrade",
		    parent, drv, NVS_DOCTOR_CONF, dir);
		return false;
	}
	if (r->v != LC_PATCHED) {
		add(c, CK_WARN, "libcuda", "libcuda-patched", "copy in %s analyses as %s, not patched", dir,
		    lc_verdict_name(r->v));
		fix(c, "Re-run nvsidecar libcuda patch --out %s", dir);
		return false;
	}
	add(c, CK_OK, "libcuda", "libcuda-patched", "patched copy in %s is current (libcuda %s)", dir, r->version);
	return true;
}

static bool has_rdma_device(char *first, size_t len)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	bool any = false;

	first[0] = 0;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			if (!any)
				snprintf(first, len, "%s", e->d_name);
			any = true;
		}
	if (d)
		closedir(d);
	return any;
}

static void check_peermem(struct nvs_checks *c)
{
	struct stat st;
	char dev[256];
	bool loaded = !stat("/sys/module/nvidia_peermem", &st);

	if (!has_rdma_device(dev, sizeof(dev))) {
		add(c, CK_SKIP, "gdr", "gdr-peermem", "no RDMA device (/sys/class/infiniband is empty)%s",
		    loaded ? "; nvidia-peermem is loaded" : "");
	} else if (loaded) {
		add(c, CK_OK, "gdr", "gdr-peermem", "nvidia-peermem loaded: RDMA through peer memory works for %s and the others",
		    dev);
	} else {
		add(c, CK_WARN, "gdr", "gdr-peermem",
		    "nvidia-peermem is not loaded although %s is here: stacks that register GPU memory through peer memory fall back to host copies, even where CUDA's attribute 116 says GPUDirect RDMA is supported",
		    dev);
		fix(c, "`modprobe nvidia-peermem' (and list it in /etc/modules-load.d); if it will not load, `dmesg | grep -i peermem': the NVIDIA driver and the RDMA core must match. Stacks using dma-buf (gdr-dmabuf) do not need it");
	}
}

void nvs_doctor_libcuda(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct lc_report *inst = calloc(1, sizeof(*inst)), *copy = calloc(1, sizeof(*copy));
	bool copy_open;
	int v;

	if (!inst || !copy) {
		c->oom = true;
		goto out;
	}
	v = check_installed(c, o, inst);
	copy_open = check_patched(c, o, copy);

	if (copy_open)
		add(c, CK_OK, "gdr", "gdr-dmabuf", "libcuda's dma-buf gate is open in the patched copy in %s (applications load it with `nvsidecar libcuda env --out %s')",
		    o->patched, o->patched);
	else if (v == LC_PATCHED || v == LC_NOT_NEEDED)
		add(c, CK_OK, "gdr", "gdr-dmabuf", "libcuda's dma-buf gate is open in the installed libcuda (%s)",
		    lc_verdict_name((enum lc_verdict)v));
	else if (o->patched[0])
		add(c, CK_FAIL, "gdr", "gdr-dmabuf", "libcuda's dma-buf gate: the patched copy in %s is not usable (libcuda-patched above)",
		    o->patched);
	else if (v >= 0)
		add(c, CK_SKIP, "gdr", "gdr-dmabuf",
		    "libcuda's dma-buf gate is closed in the installed libcuda (%s), and no patched copy is configured: GPUDirect RDMA over dma-buf is off",
		    lc_verdict_name((enum lc_verdict)v));
	else
		add(c, CK_SKIP, "gdr", "gdr-dmabuf", "no libcuda to judge");
	if (o->patched[0] && !copy_open)
		fix(c, "`nvsidecar libcuda patch --out %s'", o->patched);
	check_peermem(c);
out:
	if (inst)
		lc_report_free(inst);
	if (copy)
		lc_report_free(copy);
	free(inst);
	free(copy);
}
