/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_DUMP_TOPO_H
#define CLI_DUMP_TOPO_H

#include "check/topo.h"
#include "sys/pci.h"

/* topo --dump: dev, path, pair and finding lines; lab: each device's label ("" to skip). */
void nvs_dump_topo(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8]);

#endif
