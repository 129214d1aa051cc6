/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_DOCTOR_H
#define CHECK_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/pci.h"

/*
 * The doctor's checks: one record per check, grouped by layer (module,
 * gpu, topology, libcuda), each OK, WARN, FAIL or SKIP with the reason and
 * what to do. Nothing here prints.
 */
enum nvs_check_result { CK_OK, CK_WARN, CK_FAIL, CK_SKIP };

struct nvs_check {
	enum nvs_check_result res;
	char layer[16];		/* module, gpu, topology, libcuda */
	char name[96];		/* stable: module-loaded, gpu0, topo-rebar-small@BDF ... */
	char msg[512];
	char fix[512];		/* "" when there is nothing to do */
};

struct nvs_checks {
	struct nvs_check *v;
	size_t n, cap;
	bool oom;
};

struct nvs_doctor_opts {
	const char *pci_dump;		/* judge this `lspci -xxxx' dump, not sysfs */
	const struct nvs_pci_id *ids;	/* also GPUs (tests) */
	size_t nids;
	const char *patched;		/* `libcuda patch --out' directory, or NULL */
};

/* Runs every layer. 0, or -ENOMEM (c is then empty). */
int nvs_doctor_run(const struct nvs_doctor_opts *o, struct nvs_checks *c);
void nvs_checks_free(struct nvs_checks *c);
const char *nvs_check_result_name(enum nvs_check_result r);

#endif
