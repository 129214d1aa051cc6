// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The verdict cache (/var/lib/nvsidecar/verdict, or NVSIDECAR_STATE_DIR):
 * check/vcache.c's nvs_vcache_load on the file by name. What it accepts is
 * written back with nvs_vcache_save and must read back the same.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/vcache.h"
#include "fuzz.h"

static char in_dir[PATH_MAX], out_dir[PATH_MAX];
static struct nvs_vcache a, b;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(in_dir, sizeof(in_dir), "%s/in", nvs_fuzz_dir());
	snprintf(out_dir, sizeof(out_dir), "%s/out", nvs_fuzz_dir());
	return 0;
}

static bool same(const struct nvs_vcache *x, const struct nvs_vcache *y)
{
	if (x->written != y->written || x->n != y->n)
		return false;
	for (int f = 0; f < VK_N; ++f)
		if (strcmp(x->key.v[f], y->key.v[f]))
			return false;
	for (size_t i = 0; i < x->n; ++i) {
		const struct nvs_vresult *p = &x->r[i], *q = &y->r[i];

		if (p->res != q->res || p->verified != q->verified || strcmp(p->layer, q->layer) ||
		    strcmp(p->name, q->name) || strcmp(p->msg, q->msg) || strcmp(p->fix, q->fix))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX + 16], err[8192];
	int fd;

	mkdir(in_dir, 0700);
	snprintf(path, sizeof(path), "%s/%s", in_dir, NVS_VCACHE_FILE);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (nvs_vcache_load(&a, in_dir, err, sizeof(err)))
		return 0;
	if (nvs_vcache_save(&a, out_dir, err, sizeof(err)))
		abort();
	if (nvs_vcache_load(&b, out_dir, err, sizeof(err)) || !same(&a, &b)) {
		fprintf(stderr, "accepted, but does not read back the same: %s\n", err);
		abort();
	}
	return 0;
}
