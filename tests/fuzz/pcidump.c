// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * `nvsidecar topo --pci-dump FILE' and `doctor --pci-dump FILE': the dump
 * goes through the same scan as sysfs (our check, libpci's dump reader,
 * our config-space parser and tree linking), then the topology findings
 * and the pair classification `topo' prints.
 */
#include "check/topo.h"
#include "sys/pci.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	const char *path = nvs_fuzz_path(data, size);
	struct nvs_findings f = { 0 };
	struct nvs_pci p;

	if (!path)
		return -1;
	if (nvs_pci_scan(&p, path, NULL, 0, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < p.n; ++i) {
		int bar = nvs_topo_aperture_bar(&p.devs[i]);

		if (bar >= 0) {
			nvs_topo_aperture_size(&p.devs[i], bar);
			nvs_topo_rebar_max(&p.devs[i].rebar[bar]);
		}
		/* every pair would be quadratic in a big dump: the first few */
		for (size_t j = i + 1; j < p.n && j < i + 8; ++j) {
			int lca;

			nvs_pci_classify(&p, (int)i, (int)j, &lca);
		}
	}
	nvs_topo_config_limited(&p);
	if (!nvs_topo_findings(&p, &f))
		nvs_findings_free(&f);
	nvs_pci_free(&p);
	return 0;
}
