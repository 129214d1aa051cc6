/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef SYS_NVML_H
#define SYS_NVML_H

#include <stdbool.h>
#include <stddef.h>

/*
 * NVML (libnvidia-ml.so.1), loaded at run time with dlopen like libcuda,
 * so that the helper builds and runs without the NVIDIA driver. Only what
 * doctor and idle-fix read: the driver's version, and per GPU its PCI bus
 * id, utilisation, temperature, power and how many processes use it. The
 * types and values follow NVML's public nvml.h.
 */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS			0
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_TEMPERATURE_GPU		0

typedef struct nvmlPciInfo_st {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

/* Only ever passed as NULL with a count of 0: the layout does not matter. */
typedef struct nvmlProcessInfo_st nvmlProcessInfo_t;

struct nvs_nvml {
	void *handle;
	char path[4096];
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t result);
	nvmlReturn_t (*driver_version)(char *version, unsigned int length);
	nvmlReturn_t (*count)(unsigned int *count);
	nvmlReturn_t (*by_index)(unsigned int index, nvmlDevice_t *device);
	nvmlReturn_t (*pci_info)(nvmlDevice_t device, nvmlPciInfo_t *pci);
	nvmlReturn_t (*utilization)(nvmlDevice_t device, nvmlUtilization_t *utilization);
	nvmlReturn_t (*temperature)(nvmlDevice_t device, int sensor, unsigned int *temp);
	nvmlReturn_t (*power)(nvmlDevice_t device, unsigned int *milliwatts);
	nvmlReturn_t (*compute_procs)(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);
	nvmlReturn_t (*graphics_procs)(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);
	bool inited;
};

/* One GPU as NVML sees it; a field whose query failed is marked so. */
struct nvs_nvml_gpu {
	char busid[32];			/* the kernel's form: "0000:03:00.0" */
	bool util_ok, temp_ok, power_ok, procs_ok;
	unsigned int util;		/* % */
	unsigned int temp;		/* °C, the driver's (NVML_TEMPERATURE_GPU) */
	unsigned int power_mw;
	unsigned int procs;		/* compute + graphics processes */
	char err[128];			/* the first query that failed */
};

/*
 * Loads and initialises NVML from path (NULL: "libnvidia-ml.so.1").
 * Returns 0, or -errno with err: -ENOENT no library (no NVIDIA driver),
 * -ENOEXEC not NVML, -EIO nvmlInit failed (the message says why).
 */
int nvs_nvml_open(struct nvs_nvml *n, const char *path, char *err, size_t errlen);
void nvs_nvml_close(struct nvs_nvml *n);
/* "575.64.03"; 0 or -EIO with err. */
int nvs_nvml_driver_version(struct nvs_nvml *n, char *buf, size_t len, char *err, size_t errlen);
/*
 * Every GPU, in NVML's order, into a malloc'd array (*out, *count).
 * Returns 0, or -errno with err (the device count could not be read).
 */
int nvs_nvml_gpus(struct nvs_nvml *n, struct nvs_nvml_gpu **out, size_t *count, char *err, size_t errlen);
const char *nvs_nvml_strerror(const struct nvs_nvml *n, nvmlReturn_t r);

#endif
