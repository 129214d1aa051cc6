/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_GPU_H
#define CLI_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "libnvsidecar.h"

/*
 * The one way a subcommand reaches the module: open the netlink family,
 * list the GPUs, find the one the admin named. Every failure is reported
 * through out_fail() with the exit-code table's code, so callers only pass
 * the code on.
 */
struct nvs_cli {
	struct nvs_handle *h;
	struct nvs_gpu_info *gpus;
	size_t n;
	const struct nvs_gpu_info *sel;	/* the named GPU; NULL when none was named */
};

/*
 * "gpu3", "3" or a PCI bus id ("0000:01:00.0", "01:00.0")? Checked before
 * the module is asked, so a typo is a usage error (exit 2) everywhere.
 */
bool nvs_gpu_spec_ok(const char *s);
/* "gpu3", "3" or a bus id; resolved against gpus. -ENODEV if none matches. */
int nvs_parse_gpu(const char *s, const struct nvs_gpu_info *gpus, size_t n,
		  uint32_t *index);

/*
 * Opens the family; with list, reads every GPU too, and with want (a GPU
 * spec), selects that GPU or fails with NVS_EX_MISSING naming the GPUs
 * there are. Returns NVS_EX_OK or the exit code, already reported.
 */
int nvs_cli_open(struct nvs_cli *c, bool list, const char *want);
/* Lists the GPUs again (after a hot-plug); the selection is dropped. */
int nvs_cli_relist(struct nvs_cli *c);
/* Lists again and selects want (NULL: all). NVS_EX_OK or the code, reported. */
int nvs_cli_select(struct nvs_cli *c, const char *want);
/* The GPUs to work on: the selected one, or all. */
static inline const struct nvs_gpu_info *nvs_cli_gpus(const struct nvs_cli *c, size_t *n)
{
	*n = c->sel ? 1 : c->n;
	return c->sel ? c->sel : c->gpus;
}
void nvs_cli_close(struct nvs_cli *c);

#endif
