// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * --dump: stable tab-separated lines for scripts, one renderer per
 * command beside the text and JSON of cli/out.h. The columns are
 * documented in nvsidecar(8); never reorder them, only append.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli/dump.h"

void nvs_dump_thermal(const struct nvs_gpu_info *gpus, size_t n)
{
	for (size_t i = 0; i < n; ++i) {
		const struct nvs_gpu_info *g = &gpus[i];

		for (unsigned int k = 0; k < g->nsensors; ++k) {
			const struct nvs_sensor_info *s = &g->sensors[k];
			char v[4][16];

			snprintf(v[0], sizeof(v[0]), s->valid ? "%" PRId32 : "-", s->mc);
			snprintf(v[1], sizeof(v[1]), s->has_peak ? "%" PRId32 : "-", s->peak);
			snprintf(v[2], sizeof(v[2]), s->has_low ? "%" PRId32 : "-", s->low);
			snprintf(v[3], sizeof(v[3]), s->has_max ? "%" PRId32 : "-", s->max);
			printf("%u\t%s\t%u\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", g->index, g->busid, s->id,
			       s->label, s->valid, v[0], v[1], v[2], v[3], s->alarm);
		}
	}
}

void nvs_dump_dmabuf(const char *source, const struct nvs_dmabuf_result *r)
{
	printf("%s\t%s\t%s\t%" PRIu64 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	       "\t%s\t0x%" PRIx64 "\t%" PRIu64 "\t%s\t%" PRId32 "\t%s\t%" PRId32 "\n",
	       source, r->exporter[0] ? r->exporter : "-",
	       r->importer[0] ? r->importer : "-", r->size, r->nents, r->mapped, r->seg_min,
	       r->seg_max, nvs_dmabuf_verdict_name(r->verdict), r->bar1_start, r->bar1_len,
	       nvs_p2p_name(r->p2p), r->p2p_distance, nvs_dmabuf_step_name(r->step), r->err);
}
