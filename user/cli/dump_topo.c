// SPDX-License-Identifier: GPL-2.0 OR MIT
/* topo --dump: stable tab-separated lines for scripts (cli/dump_topo.h). */
#include <stdio.h>

#include "cli/dump_topo.h"

void nvs_dump_topo(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8])
{
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];
		int bar = nvs_topo_aperture_bar(d), guard = 64, via;
		enum nvs_slot slot;

		if (!lab[i][0])
			continue;
		slot = nvs_topo_slot(p, (int)i, &via);
		/* slot and its bridge are appended: columns only ever grow at the end */
		printf("dev\t%s\t%s\t%04x:%04x\t%d\t%d\t%d\t%d\t%d\t%llu\t%llu\t%d\t%d\t%s\t%s\t%s\n", lab[i], d->bdf,
		       d->vendor, d->device, nvs_pcie_gen(d->link.cur_speed), d->link.cur_width,
		       nvs_pcie_gen(d->link.max_speed), d->link.max_width, bar,
		       (unsigned long long)nvs_topo_aperture_size(d, bar),
		       (unsigned long long)(bar >= 0 ? nvs_topo_rebar_max(&d->rebar[bar]) : 0), d->numa_node,
		       d->iommu_group, d->iommu_type[0] ? d->iommu_type : "-", nvs_topo_slot_str(slot),
		       via >= 0 ? p->devs[via].bdf : "-");
		for (int b = d->parent; b >= 0 && guard--; b = p->devs[b].parent)
			printf("path\t%s\t%s\t%d\t%04x\n", lab[i], p->devs[b].bdf, p->devs[b].link.port_type,
			       p->devs[b].acs_present ? p->devs[b].acs_ctrl : 0);
	}
	for (size_t a = 0; a < p->n; ++a)
		for (size_t b = 0; b < p->n; ++b) {
			int lca;

			if (p->devs[a].role != NVS_ROLE_GPU || b == a || !lab[b][0] ||
			    (p->devs[b].role == NVS_ROLE_GPU && b < a))
				continue;
			printf("pair\t%s\t%s\t%s\n", lab[a], lab[b],
			       nvs_pci_pair_str(nvs_pci_classify(p, (int)a, (int)b, &lca)));
		}
	for (size_t i = 0; i < f->n; ++i)
		printf("finding\t%s\t%s\t%s\n", f->v[i].sev == NVS_SEV_WARN ? "warning" : "info", f->v[i].id,
		       f->v[i].where);
}
