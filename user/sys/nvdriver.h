/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef SYS_NVDRIVER_H
#define SYS_NVDRIVER_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The loaded NVIDIA kernel driver's version, for every reader (libcuda's
 * stale-copy rule, doctor): /proc/driver/nvidia/version, whose first line
 * is either the proprietary module's
 *   NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  <date>
 * or the open kernel module's
 *   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (<builder>)  <date>
 * NVS_NVIDIA_VERSION_FILE replaces the /proc file (tests); without it,
 * /sys/module/nvidia/version is read when /proc has no version.
 * False (ver "") when no NVIDIA driver is loaded.
 */
bool nvs_nvdriver_version(char *ver, size_t len);

/*
 * The same, and the flavour: *open is 1 for the open kernel module, 0 for
 * the proprietary one, -1 when only /sys/module/nvidia/version answered.
 */
bool nvs_nvdriver_info(char *ver, size_t len, int *open);

/* The version in one line of that file; false when it has none. */
bool nvs_nvdriver_parse_line(const char *line, char *ver, size_t len);

/* "535.261.03" from ".../libcuda.so.535.261.03"; false for any other name. */
bool nvs_nvdriver_libcuda_version(const char *path, char *ver, size_t len);

/*
 * The versions in nvidia-smi's header line, in either format:
 *   | NVIDIA-SMI 590.44.01   Driver Version: 590.44.01   CUDA Version: 13.1 |
 *   | NVIDIA-SMI 610.43.02   KMD Version: 610.43.02   CUDA UMD Version: 13.3 |
 * (nvidia-smi 610 deprecated "Driver Version" and "CUDA Version" for the
 * second pair). drv gets the driver's, cuda the CUDA version or "" when
 * the line has none (old drivers); false when the line names no driver.
 */
bool nvs_nvdriver_smi_header(const char *line, char *drv, size_t dlen, char *cuda, size_t clen);

/*
 * The registry overrides the loaded driver runs with: the RegistryDwords
 * line of /proc/driver/nvidia/params (path), which prints them even when
 * /sys/module/nvidia/parameters/NVreg_RegistryDwords reads empty, e.g.
 *   RegistryDwords: "RMForceStaticBar1=1;PeerMappingOverride=1"
 * 0 with the quoted text in out ("" for none), -ENOENT without the file,
 * -EINVAL when the file has no such line.
 */
int nvs_nvdriver_registry(const char *path, char *out, size_t len);
/* Whether dwords ("K=V;K=V") sets key to val (numbers compared as numbers: 0x1 is 1). */
bool nvs_nvdriver_registry_has(const char *dwords, const char *key, const char *val);

#endif
