/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_ROW_DMABUF_H
#define CLI_ROW_DMABUF_H

#include "cli/row.h"
#include "libnvsidecar.h"

/* `dmabuf probe''s result: the module's answer and where the buffer came from. */
struct dmabuf_row {
	struct nvs_dmabuf_result r;
	int code;		/* the exit status the result means */
	const char *source;	/* "cuda", "udmabuf", "dma-heap", "fd" */
	const char *cuda_dev;	/* the CUDA device's name, or NULL */
	bool has_gpu;		/* a GPU was compared against */
	int gpu;
	const char *gpu_busid;	/* NULL without a GPU */
	const char *error;	/* strerror(r.err), NULL without an error */
	bool has_cuda_dev;	/* text: cuda_dev in parentheses */
	bool done;		/* text: the mapping's lines (step done) */
	bool has_hint;		/* text: a hint line */
};

/* Fills the fields derived from the others: error, done, has_*. */
void dmabuf_row_finish(struct dmabuf_row *d);

/*
 * dmabuf probe: the text report, the JSON members, the --dump line:
 * source exporter importer size nents mapped seg_min seg_max verdict
 * bar1_start bar1_len p2p p2p_distance step errno.
 */
extern const struct row_desc dmabuf_probe_row;

#endif
