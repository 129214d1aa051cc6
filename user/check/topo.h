/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_TOPO_H
#define CHECK_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/pci.h"

/*
 * Topology findings: what in the PCIe layout, BIOS or kernel settings gets
 * in the way of peer-to-peer and GPUDirect RDMA, why, and what to do. The
 * `topo' subcommand prints them; `p2p' and `doctor' use them for the first
 * level of the acceptance ladder. Nothing here prints.
 */
enum nvs_severity {
	NVS_SEV_INFO,
	NVS_SEV_WARN,
};

struct nvs_finding {
	enum nvs_severity sev;
	char id[24];		/* stable: rebar-small, acs-redirect, ... (docs/p2p.md) */
	char where[64];		/* the BDF it is about */
	char what[256];
	char why[384];
	char fix[384];
};

struct nvs_findings {
	struct nvs_finding *v;
	size_t n, cap;
};

/*
 * Where a GPU's or NIC's slot gets its lanes, from the PCI tree alone (a
 * dump judges like sysfs). A chipset slot shares the chipset's one uplink
 * to the CPU with everything else behind it; `nvidia-smi topo -m' calls a
 * pair through it PHB all the same. The rule: docs/p2p.md "Slot classes".
 */
enum nvs_slot {
	NVS_SLOT_UNKNOWN,	/* no root port above it (virtual machines, integrated devices) */
	NVS_SLOT_CPU,		/* a root port of the CPU */
	NVS_SLOT_CHIPSET,	/* behind an Intel PCH or an AMD chipset */
};
/* The class of devs[i]; *via: the bridge that makes it chipset (or -1). */
enum nvs_slot nvs_topo_slot(const struct nvs_pci *p, int i, int *via);
const char *nvs_topo_slot_str(enum nvs_slot s);	/* "cpu", "chipset", "unknown" */

/* Index of the BAR that maps device memory: BAR1 on NVIDIA GPUs. */
int nvs_topo_aperture_bar(const struct nvs_pci_dev *d);
/* That aperture as the OS assigned it, else as the ReBAR control says; 0 unknown. */
uint64_t nvs_topo_aperture_size(const struct nvs_pci_dev *d, int bar);
/* The largest size the Resizable BAR capability offers, 0 none. */
uint64_t nvs_topo_rebar_max(const struct nvs_pci_rebar *r);
/* Some GPU or NIC showed only 64 bytes of config space (not root). */
bool nvs_topo_config_limited(const struct nvs_pci *p);
int nvs_topo_findings(const struct nvs_pci *p, struct nvs_findings *f);
size_t nvs_topo_count(const struct nvs_findings *f, enum nvs_severity sev);
void nvs_findings_free(struct nvs_findings *f);

#endif
