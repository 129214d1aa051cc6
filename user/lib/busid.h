/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_BUSID_H
#define LIB_BUSID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The one PCI bus-id reader: "[DDDD:]BB:DD.F" in hex, as lspci, sysfs and
 * the kernel write it; CUDA and NVML pad the domain to 8 digits
 * ("00000000:0A:00.0"), either case. No domain means domain 0.
 */
struct nvs_busid {
	uint32_t domain;
	uint8_t bus, dev, fn;
};

/* 0, or -EINVAL for anything but a whole, in-range bus id. */
int nvs_busid_parse(const char *s, struct nvs_busid *out);
bool nvs_busid_eq(const struct nvs_busid *a, const struct nvs_busid *b);
/* Does s parse? (a GPU spec or --importer is checked before any work) */
bool nvs_bdf_ok(const char *s);
/*
 * The kernel's own name of the function (pci_name(): "%04x:%02x:%02x.%x"),
 * which is what the module's netlink policy takes: CUDA's 8-digit domain
 * would not fit its NVS_BUSID_LEN. 0, or -ENAMETOOLONG when len is short.
 */
int nvs_busid_name(const struct nvs_busid *b, char *buf, size_t len);
/* Same PCI function? False when either does not parse. */
bool nvs_same_busid(const char *a, const char *b);

#endif
