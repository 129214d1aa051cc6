// SPDX-License-Identifier: GPL-2.0 OR MIT
/* dmabuf probe's record (cli/row_dmabuf.h) and the words that explain it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/row_dmabuf.h"
#include "lib/exit.h"

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ERANGE: return "ERANGE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case 524: return "ENOTSUPP";	/* kernel-internal, NVIDIA's exporter uses it */
	default: return "errno";
	}
}

static const char *step_hint(const struct nvs_dmabuf_result *r)
{
	if (r->step == NVS_DMABUF_STEP_DONE && !r->err)
		return NULL;
	switch (r->step) {
	case NVS_DMABUF_STEP_ATTACH:
		return "the exporter refused this importer: check the PCIe topology (same switch or a\n"
		       "  P2P-capable root complex), ACS and the IOMMU mode (nvsidecar topo; nvsidecar(8), dmabuf)";
	case NVS_DMABUF_STEP_MAP:
		return "the exporter could not map the buffer for this importer: often BAR1 is full\n"
		       "  or the IOMMU refused the peer mapping (nvsidecar(8), dmabuf)";
	case NVS_DMABUF_STEP_FENCE:
		return "the exporter's fences did not signal within 5 s: the GPU is busy or hung";
	default:
		return NULL;
	}
}

static const char *verdict_text(uint32_t v)
{
	switch (v) {
	case NVS_DMABUF_VERDICT_BAR1: return "every segment lies inside the GPU's BAR1";
	case NVS_DMABUF_VERDICT_SYSTEM_RAM: return "every segment lies in system memory";
	case NVS_DMABUF_VERDICT_ELSEWHERE: return "the segments lie outside BAR1 and outside system memory";
	case NVS_DMABUF_VERDICT_MIXED: return "the segments are a mix of BAR1, system memory and other";
	default: return "not mapped";
	}
}

static const char *human_size(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (u < 4 && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		++u;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
	return buf;
}

void dmabuf_row_finish(struct dmabuf_row *d)
{
	d->error = d->r.err ? strerror(d->r.err) : NULL;
	d->done = d->r.step == NVS_DMABUF_STEP_DONE;
	d->has_cuda_dev = d->cuda_dev && d->cuda_dev[0];
	if (!d->has_cuda_dev)
		d->cuda_dev = NULL;
	if (!d->has_gpu)
		d->gpu_busid = NULL;
	d->has_hint = step_hint(&d->r);
}

/* The headline: what the exit status means, in words. */
static void say_outcome(const void *rec)
{
	const struct dmabuf_row *d = rec;
	const struct nvs_dmabuf_result *r = &d->r;

	if (d->code == NVS_EX_OK)
		out_text("%sdma-buf probe: OK%s, %s\n", out_cfg(OUT_GOOD), out_cfg(OUT_PLAIN), verdict_text(r->verdict));
	else if (d->code == NVS_EX_NOT_BAR1)
		out_text("%sdma-buf probe: mapped, but not inside BAR1%s: %s\n", out_cfg(OUT_WARN), out_cfg(OUT_PLAIN),
			 verdict_text(r->verdict));
	else
		out_text("%sdma-buf probe: failed at the %s step%s: %s (%s)\n", out_cfg(OUT_BAD),
			 nvs_dmabuf_step_name(r->step), out_cfg(OUT_PLAIN), strerror(r->err), errno_name(r->err));
}

static void say_bar1(const void *rec)
{
	const struct dmabuf_row *d = rec;
	char s[32];

	out_text("0x%" PRIx64 " + %s (gpu%d %s)", d->r.bar1_start, human_size(d->r.bar1_len, s, sizeof(s)), d->gpu,
		 d->gpu_busid);
}

static void say_p2p(const void *rec)
{
	const struct dmabuf_row *d = rec;

	if (d->r.p2p == NVS_P2P_ALLOWED || d->r.p2p == NVS_P2P_REFUSED)
		out_text(" (pci_p2pdma_distance %" PRId32 ")", d->r.p2p_distance);
	else if (d->r.p2p == NVS_P2P_UNKNOWN)
		out_text(" (kernel built without CONFIG_PCI_P2PDMA)");
	else
		out_text(" (no GPU to compare against)");
}

static void say_hint(const void *rec)
{
	out_text("%s", step_hint(&((const struct dmabuf_row *)rec)->r));
}

#define D struct dmabuf_row
#define TEXT_IN_HEADLINE "text: the headline says it"
#define NOT_A_COLUMN "dump: its columns are fixed (nvsidecar(8)); "

static const struct row_field fields[] = {
	{ .kind = ROW_PROSE, .prose = say_outcome },
	{ .key = "exit_code", .kind = ROW_INT, ROW_VAL(D, code),
	  .why = TEXT_IN_HEADLINE "; dump: the process's exit status is the same" },
	{ .key = "source", .label = "source", .fmt = "%s", .col = 1, .kind = ROW_STRP, ROW_VAL(D, source) },
	{ .key = "cuda_device", .fmt = " (%s)", .kind = ROW_STRP, ROW_VAL(D, cuda_dev),
	  .shown = ROW_AT(D, has_cuda_dev), .why = NOT_A_COLUMN "the source column says cuda" },
	{ .key = "gpu", .kind = ROW_INT, ROW_VAL(D, gpu), .has = ROW_AT(D, has_gpu),
	  .why = NOT_A_COLUMN "text: the BAR1 line names it" },
	{ .key = "gpu_busid", .kind = ROW_STRP, ROW_VAL(D, gpu_busid), .has = ROW_AT(D, has_gpu),
	  .why = NOT_A_COLUMN "text: the BAR1 line names it" },
	{ .key = "step", .col = 14, .kind = ROW_ENUM, ROW_VAL(D, r.step), .name = nvs_dmabuf_step_name,
	  .why = TEXT_IN_HEADLINE },
	{ .key = "errno", .col = 15, .kind = ROW_INT, ROW_VAL(D, r.err), .why = TEXT_IN_HEADLINE },
	{ .key = "error", .kind = ROW_STRP, ROW_VAL(D, error),
	  .why = TEXT_IN_HEADLINE "; dump: the errno column is the same" },
	{ .key = "exporter", .label = "exporter", .fmt = "%s", .col = 2, .kind = ROW_STR, .flags = ROW_DASH,
	  ROW_VAL(D, r.exporter) },
	{ .key = "importer", .label = "importer", .fmt = "%s", .col = 3, .kind = ROW_STR, .flags = ROW_DASH,
	  ROW_VAL(D, r.importer) },
	{ .key = "size", .label = "size", .fmt = "%s", .col = 4, .kind = ROW_BYTES, ROW_VAL(D, r.size) },
	{ .key = "nents", .label = "entries", .fmt = "%s", .col = 5, .kind = ROW_UINT, ROW_VAL(D, r.nents),
	  .shown = ROW_AT(D, done) },
	{ .key = "mapped", .label = "mapped", .fmt = "%s", .col = 6, .kind = ROW_UINT, ROW_VAL(D, r.mapped),
	  .shown = ROW_AT(D, done) },
	{ .key = "seg_min", .label = "segments", .fmt = "%s .. ", .col = 7, .kind = ROW_UINT, ROW_VAL(D, r.seg_min),
	  .shown = ROW_AT(D, done) },
	{ .key = "seg_max", .fmt = "%s bytes", .col = 8, .kind = ROW_UINT, ROW_VAL(D, r.seg_max),
	  .shown = ROW_AT(D, done) },
	{ .key = "verdict", .label = "verdict", .fmt = "%s", .col = 9, .kind = ROW_ENUM, ROW_VAL(D, r.verdict),
	  .name = nvs_dmabuf_verdict_name, .shown = ROW_AT(D, done) },
	{ .key = "bar1_start", .col = 10, .kind = ROW_UINT, .flags = ROW_HEX, ROW_VAL(D, r.bar1_start),
	  .why = "text: the BAR1 line says it, with the GPU" },
	{ .key = "bar1_len", .col = 11, .kind = ROW_UINT, ROW_VAL(D, r.bar1_len),
	  .why = "text: the BAR1 line says it, with the GPU" },
	{ .label = "BAR1", .kind = ROW_PROSE, .prose = say_bar1, .shown = ROW_AT(D, has_gpu) },
	{ .key = "p2p", .label = "p2p", .fmt = "%s", .col = 12, .kind = ROW_ENUM, ROW_VAL(D, r.p2p),
	  .name = nvs_p2p_name },
	{ .key = "p2p_distance", .col = 13, .kind = ROW_INT, ROW_VAL(D, r.p2p_distance),
	  .why = "text: the words after p2p say it where it means something" },
	{ .kind = ROW_PROSE, .prose = say_p2p },
	{ .label = "hint", .kind = ROW_PROSE, .prose = say_hint, .shown = ROW_AT(D, has_hint) },
};

const struct row_desc dmabuf_probe_row = {
	.name = "dmabuf probe", .style = ROW_LIST, .label_width = 12,
	.f = fields, .n = sizeof(fields) / sizeof(fields[0]),
};
