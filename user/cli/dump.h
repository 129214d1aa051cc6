/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_DUMP_H
#define CLI_DUMP_H

#include <stddef.h>

#include "libnvsidecar.h"

/* thermal --dump: one line per sensor: gpu, busid, id, label, valid, mc, peak, low, max, alarm. */
void nvs_dump_thermal(const struct nvs_gpu_info *gpus, size_t n);
/* dmabuf probe --dump: one line; source names where the buffer came from. */
void nvs_dump_dmabuf(const char *source, const struct nvs_dmabuf_result *r);

#endif
