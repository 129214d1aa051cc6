// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's known-issues layer: the facts the table's rows ask about,
 * read from the node once each and only when a row asks, then one WARN or
 * FAIL per matching row with its fix and its public source, and a last
 * check that says how many rows were judged and where the list is. The
 * table is data (known-issues.tsv) so that a row is added without a
 * rebuild; a broken row is reported with its file and line and the others
 * still count.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/doctor.h"
#include "check/known_issues.h"
#include "lib/env.h"
#include "sys/nvdriver.h"
#include "sys/versions.h"

#define TABLE "known-issues.tsv"
#define PAGE "docs/known-issues.md (installed as share/doc/nvsidecar/known-issues.md)"

/* where the table is looked for after $NVSIDECAR_DATADIR */
static const char *const table_dirs[] = {
	"/usr/share/nvsidecar",
	"/usr/local/share/nvsidecar",
#ifdef NVS_SRC_DATADIR
	NVS_SRC_DATADIR,	/* the source tree's copy, for a helper run from its build */
#endif
	NULL,
};

enum { V_KERNEL, V_DRIVER, V_LIBCUDA, V_NCCL, V_UCX, V_LIBFABRIC, V_RDMA, V_N };

struct node {
	struct nvs_checks *c;
	const struct nvs_doctor_opts *o;
	bool asked[V_N];
	char ver[V_N][64];
	int open;			/* the driver's flavour, once V_DRIVER is asked */
	bool reg_asked;
	char reg[2048];
	bool mod_asked;
	char *modules;			/* /proc/modules, NULL when unreadable */
};

static void read_first_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

static void ask(struct node *n, int i)
{
	char buf[PATH_MAX];
	const char *path, *err;
	char *v = n->ver[i];
	size_t len = sizeof(n->ver[i]);

	n->asked[i] = true;
	switch (i) {
	case V_KERNEL:
		/* the running kernel's release, as uname -r says it */
		read_first_line(nvs_doctor_path(n->o, "/proc/sys/kernel/osrelease", buf, sizeof(buf)), v, len);
		break;
	case V_DRIVER:
		nvs_nvdriver_info(v, len, &n->open);
		break;
	case V_LIBCUDA:
		if (!nvs_doctor_libcuda_path(n->c, n->o, &path, &err))
			nvs_nvdriver_libcuda_version(path, v, len);
		break;
	case V_NCCL:
		nvs_version_nccl(v, len);
		break;
	case V_UCX:
		nvs_version_ucx(v, len);
		break;
	case V_LIBFABRIC:
		nvs_version_libfabric(v, len);
		break;
	case V_RDMA:
		nvs_version_rdma_core(v, len);
		break;
	}
}

static const char *version(void *ctx, const char *name)
{
	struct node *n = ctx;

	for (int i = 0; nvs_ki_components[i]; ++i)
		if (!strcmp(nvs_ki_components[i], name)) {
			if (!n->asked[i])
				ask(n, i);
			return n->ver[i][0] ? n->ver[i] : NULL;
		}
	return NULL;
}

/* Whether /proc/modules lists name ('-' and '_' alike, as modprobe takes them). */
static bool module_loaded(struct node *n, const char *name)
{
	char want[64], buf[PATH_MAX];
	size_t wl;

	if (!n->mod_asked) {
		FILE *f = fopen(nvs_doctor_path(n->o, "/proc/modules", buf, sizeof(buf)), "re");
		size_t cap = 0;

		n->mod_asked = true;
		if (f) {
			/* one read: the file is small and changes under us */
			if (getdelim(&n->modules, &cap, 0, f) < 0) {
				free(n->modules);
				n->modules = NULL;
			}
			fclose(f);
		}
	}
	if (!n->modules || snprintf(want, sizeof(want), "%s ", name) >= (int)sizeof(want))
		return false;
	for (char *p = want; *p; ++p)
		if (*p == '-')
			*p = '_';
	wl = strlen(want);
	for (const char *p = n->modules; *p; p += strcspn(p, "\n"), p += *p == '\n')
		if (!strncmp(p, want, wl))
			return true;
	return false;
}

static bool atom(void *ctx, const char *kind, const char *arg)
{
	struct node *n = ctx;
	char buf[PATH_MAX];
	struct stat st;

	if (!strcmp(kind, "module"))
		return module_loaded(n, arg);
	if (!strcmp(kind, "path"))
		return !stat(nvs_doctor_path(n->o, arg, buf, sizeof(buf)), &st);
	if (!strcmp(kind, "have"))
		return version(n, arg) != NULL;
	if (!strcmp(kind, "flavour")) {
		if (!version(n, "driver") || n->open < 0)
			return false;
		return n->open == !strcmp(arg, "open");
	}
	if (!strcmp(kind, "reg")) {
		char key[256];
		const char *eq = strchr(arg, '=');

		if (!n->reg_asked) {
			n->reg_asked = true;
			if (nvs_nvdriver_registry(nvs_doctor_path(n->o, "/proc/driver/nvidia/params", buf, sizeof(buf)),
						  n->reg, sizeof(n->reg)))
				n->reg[0] = 0;
		}
		if (!eq || (size_t)(eq - arg) >= sizeof(key))
			return false;
		memcpy(key, arg, (size_t)(eq - arg));
		key[eq - arg] = 0;
		return nvs_nvdriver_registry_has(n->reg, key, eq + 1);
	}
	return false;
}

/* The topology scan's counts (check_topology runs first); -1 when it could not read the PCI devices */
static long gpus(void *ctx, const char *family)
{
	const struct node *n = ctx;

	if (!strcmp(family, "gb20x"))
		return n->c->pci_gb20x;
	return !strcmp(family, "nvidia") ? n->c->pci_gpus : -1;
}

/* The table: $NVSIDECAR_DATADIR's, else the first install path that has one. */
static int load(struct nvs_ki_table *t, char *path, size_t len)
{
	const char *dir = nvs_env_datadir();
	int ret = -ENOENT;

	if (dir) {
		snprintf(path, len, "%s/%s", dir, TABLE);
		return nvs_ki_load(t, path);
	}
	for (size_t i = 0; table_dirs[i] && ret == -ENOENT; ++i) {
		snprintf(path, len, "%s/%s", table_dirs[i], TABLE);
		ret = nvs_ki_load(t, path);
	}
	return ret;
}

void nvs_doctor_known(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct node n = { .c = c, .o = o, .open = -1 };
	struct nvs_ki_facts f = { .version = version, .atom = atom, .gpus = gpus, .ctx = &n };
	struct nvs_ki_table t;
	char path[PATH_MAX];
	size_t matched = 0;
	int ret = load(&t, path, sizeof(path));

	if (ret == -ENOENT) {
		/* not installed here: nothing to judge, and nothing wrong with the node */
		nvs_check_add(c, CK_SKIP, "known", "known-issues", "Unable to read the known-issues table %s: %s",
			      path, t.why[0] ? t.why : strerror(-ret));
		nvs_check_fix(c, "Reinstall nvsidecar, or set NVSIDECAR_DATADIR to the directory that holds %s",
			      TABLE);
		return;
	}
	if (ret) {
		/* a table that is there but unusable hides every known issue: say so louder than a SKIP */
		nvs_check_add(c, CK_WARN, "known", "known-issues", "Unable to read the known-issues table %s: %s",
			      path, t.why[0] ? t.why : strerror(-ret));
		nvs_check_fix(c, "Replace %s with the regular file nvsidecar installs (reinstall the package), or set NVSIDECAR_DATADIR to the directory that holds a good %s; no known issue is checked until then",
			      path, TABLE);
		return;
	}
	for (size_t i = 0; i < t.nerr && i < NVS_KI_MAX_ERRS; ++i) {
		nvs_check_add(c, CK_WARN, "known", "known-issues-table", "%s", t.errs[i]);
		nvs_check_fix(c, "Correct that row (the format is in the file's header comment) or remove it; the other rows still count");
	}
	if (t.nerr > NVS_KI_MAX_ERRS) {
		nvs_check_add(c, CK_WARN, "known", "known-issues-table", "%zu more bad rows in %s",
			      t.nerr - NVS_KI_MAX_ERRS, path);
		nvs_check_fix(c, "Correct the rows the lines above name");
	}
	for (size_t i = 0; i < t.n; ++i) {
		const struct nvs_ki_row *r = &t.v[i];
		char name[96], gb[300];

		if (!nvs_ki_match(r, &f))
			continue;
		++matched;
		snprintf(name, sizeof(name), "known-%s", r->id);
		/* a row about GB20x GPUs names the ones it saw */
		snprintf(gb, sizeof(gb), strstr(r->cond, "gpus:gb20x") ? " (GB20x GPUs here: %s)" : "",
			 c->gb20x_busids);
		if (strcmp(r->component, "-"))
			nvs_check_add(c, r->fail ? CK_FAIL : CK_WARN, "known", name, "%s %s: %s%s", r->component,
				      version(&n, r->component), r->consequence, gb);
		else
			nvs_check_add(c, r->fail ? CK_FAIL : CK_WARN, "known", name, "%s%s", r->consequence, gb);
		nvs_check_fix(c, "%s (source: %s)", r->fix, r->source);
	}
	if (!t.n) {
		/* an empty table, or one truncated to its header, checks nothing: not an OK */
		nvs_check_add(c, CK_WARN, "known", "known-issues", "The known-issues table %s has no rows%s: no known issue is checked",
			      path, t.nerr ? " that could be read" : "");
		nvs_check_fix(c, "Reinstall nvsidecar to restore %s (it ships with rows), or set NVSIDECAR_DATADIR to the directory that holds a complete one",
			      TABLE);
		free(n.modules);
		nvs_ki_free(&t);
		return;
	}
	/* the pointer is in the message: the fix of an OK check is not shown */
	nvs_check_add(c, CK_OK, "known", "known-issues", "%zu of %zu known issues apply to this node; all, with sources: %s",
		      matched, t.n, PAGE);
	free(n.modules);
	nvs_ki_free(&t);
}
