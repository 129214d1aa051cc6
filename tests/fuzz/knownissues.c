// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's known-issues table (scripts/nvsidecar/known-issues.tsv, or
 * $NVSIDECAR_DATADIR's): read by path, then every row that parsed is
 * judged against a made-up node, so the predicate walk runs on whatever
 * the reader accepted.
 */
#include <string.h>

#include "check/known_issues.h"
#include "fuzz.h"

static const char *version(void *ctx, const char *name)
{
	(void)ctx;
	/* versions as nodes print them, suffixes and all; libfabric unknown */
	if (!strcmp(name, "kernel"))
		return "6.12.118+deb12-amd64";
	if (!strcmp(name, "libfabric"))
		return NULL;
	return !strcmp(name, "nccl") ? "2.27.3" : "610.43.03";
}

static bool atom(void *ctx, const char *kind, const char *arg)
{
	(void)ctx;
	return (strlen(kind) + strlen(arg)) & 1;
}

static long gpus(void *ctx, const char *family)
{
	(void)ctx;
	/* two RTX 50s; any other family unknown */
	return !strcmp(family, "gb20x") ? 2 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nvs_ki_facts f = { .version = version, .atom = atom, .gpus = gpus };
	const char *path = nvs_fuzz_path(data, size);
	struct nvs_ki_table t;

	if (!path || nvs_ki_load(&t, path))
		return -1;
	for (size_t i = 0; i < t.n; ++i)
		nvs_ki_match(&t.v[i], &f);
	nvs_ki_free(&t);
	return 0;
}
