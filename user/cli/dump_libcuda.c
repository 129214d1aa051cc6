// SPDX-License-Identifier: GPL-2.0 OR MIT
/* libcuda status --dump: "key<TAB>value" lines for scripts (cli/dump_libcuda.h). */
#include <inttypes.h>
#include <stdio.h>

#include "cli/dump_libcuda.h"
#include "cli/row_libcuda.h"

void nvs_dump_libcuda(const struct lc_report *r)
{
	const struct lc_gate *g = &r->g;

	printf("lib\t%s\nsha256\t%s\nversion\t%s\n", r->path, r->sha, r->version);
	if (r->name_version[0])
		printf("name_version\t%s\n", r->name_version);
	if (r->version_mismatch[0])
		printf("version_mismatch\t%s\n", r->version_mismatch);
	printf("verdict\t%s\nreason\t%s\n", lc_verdict_name(r->v), r->why);
	if (g->located)
		printf("field\t0x%x\nmask\t0x%02x\nglobal\t0x%" PRIx64 "\ndispatcher\t0x%" PRIx64 "\nbranch116\t0x%" PRIx64
		       "\nbranch124\t0x%" PRIx64 "\n", g->field, g->mask, g->global, g->dispatcher, g->branch[1], g->branch[2]);
	for (size_t i = 0; i < g->nstores; ++i)
		row_render(&libcuda_store_row, &g->stores[i], ROW_DUMP, NULL);
	for (size_t i = 0; i < g->nstores; ++i)
		if (g->stores[i].init)
			printf("initialiser\t0x%" PRIx64 "\n", g->stores[i].addr);
	for (size_t i = 0; i < g->nplan; ++i)
		printf("rewrite\t0x%" PRIx64 "\t%s\t%s\n", g->plan[i].off, g->plan[i].from, g->plan[i].to);
	for (size_t i = 0; i < g->nbulk; ++i)
		printf("bulk\t0x%" PRIx64 "\t%s\t%" PRIu64 "\t%s%+" PRId64 "\t%s\n", g->bulk[i].addr, g->bulk[i].what,
		       g->bulk[i].len, g->bulk[i].base, g->bulk[i].at, lc_dest_name(g->bulk[i].dest));
	for (size_t i = 0; i < r->nstale; ++i)
		printf("manifest\t%s\t%s\t%s\n", r->stale[i].manifest, r->stale[i].stale ? "stale" : "current",
		       r->stale[i].reason);
}
