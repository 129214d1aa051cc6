// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/busid.h"
#include "lib/io.h"
#include "sys/nvml.h"

const char *nvs_nvml_strerror(const struct nvs_nvml *n, nvmlReturn_t r)
{
	static __thread char buf[64];
	const char *s = n->error_string ? n->error_string(r) : NULL;

	if (s)
		return s;
	snprintf(buf, sizeof(buf), "NVML error %d", r);
	return buf;
}

#define SYM(field, name) (n->field = (__typeof__(n->field))dlsym(n->handle, name))

int nvs_nvml_open(struct nvs_nvml *n, const char *path, char *err, size_t errlen)
{
	nvmlReturn_t r;
	bool given = path;
	int ret;

	memset(n, 0, sizeof(*n));
	if (!path)
		path = "libnvidia-ml.so.1";
	ret = nvs_dlopen_path_ok(path, "the NVML shared library itself, libnvidia-ml.so.1", err, errlen);
	if (ret)
		return ret;
	n->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->handle) {
		/* a path the admin named is the thing to check, not the driver */
		snprintf(err, errlen, "Unable to load %s: %s%s", path, dlerror(),
			 given ? " (check the path given: it must be an NVML shared library, libnvidia-ml.so.1)" :
				 " (is the NVIDIA driver installed?)");
		return -ENOENT;
	}
	snprintf(n->path, sizeof(n->path), "%s", path);
	/* The versioned names are what current drivers export; the old ones as a fallback. */
	SYM(init, "nvmlInit_v2");
	if (!n->init)
		SYM(init, "nvmlInit");
	SYM(shutdown, "nvmlShutdown");
	SYM(error_string, "nvmlErrorString");
	SYM(driver_version, "nvmlSystemGetDriverVersion");
	SYM(count, "nvmlDeviceGetCount_v2");
	SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
	SYM(pci_info, "nvmlDeviceGetPciInfo_v3");
	SYM(utilization, "nvmlDeviceGetUtilizationRates");
	SYM(temperature, "nvmlDeviceGetTemperature");
	SYM(power, "nvmlDeviceGetPowerUsage");
	SYM(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!n->compute_procs)
		SYM(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v2");
	SYM(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3");
	if (!n->graphics_procs)
		SYM(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v2");
	if (!n->init || !n->shutdown || !n->count || !n->by_index || !n->pci_info) {
		snprintf(err, errlen, "%s does not look like NVML: nvmlInit, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetPciInfo_v3 is missing",
			 path);
		nvs_nvml_close(n);
		return -ENOEXEC;
	}
	r = n->init();
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "nvmlInit failed: %s (is the nvidia kernel module loaded? `nvidia-smi' says more)",
			 nvs_nvml_strerror(n, r));
		nvs_nvml_close(n);
		return -EIO;
	}
	n->inited = true;
	return 0;
}

void nvs_nvml_close(struct nvs_nvml *n)
{
	if (n->inited && n->shutdown)
		n->shutdown();
	if (n->handle)
		dlclose(n->handle);
	memset(n, 0, sizeof(*n));
}

int nvs_nvml_driver_version(struct nvs_nvml *n, char *buf, size_t len, char *err, size_t errlen)
{
	nvmlReturn_t r;

	buf[0] = 0;
	if (!n->driver_version) {
		snprintf(err, errlen, "%s has no nvmlSystemGetDriverVersion", n->path);
		return -EIO;
	}
	r = n->driver_version(buf, (unsigned int)len);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "nvmlSystemGetDriverVersion: %s", nvs_nvml_strerror(n, r));
		buf[0] = 0;
		return -EIO;
	}
	return 0;
}

/* NVML's "00000000:0A:00.0" in the kernel's form "0000:0a:00.0". */
static void kernel_busid(const nvmlPciInfo_t *p, char *buf, size_t len)
{
	struct nvs_busid b;

	if (!nvs_busid_parse(p->busId, &b))
		snprintf(buf, len, "%04x:%02x:%02x.%x", b.domain, b.bus, b.dev, b.fn);
	else
		snprintf(buf, len, "%04x:%02x:%02x.0", p->domain, p->bus, p->device);
}

/* Processes of one kind: a NULL buffer of 0 entries answers with the count. */
static nvmlReturn_t count_procs(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *),
				nvmlDevice_t d, unsigned int *n)
{
	nvmlReturn_t r;

	*n = 0;
	r = fn(d, n, NULL);
	if (r == NVML_ERROR_INSUFFICIENT_SIZE)
		return NVML_SUCCESS;	/* *n holds how many there are */
	if (r == NVML_SUCCESS)
		*n = 0;
	return r;
}

static void gpu_fail(struct nvs_nvml *n, struct nvs_nvml_gpu *g, const char *what, nvmlReturn_t r)
{
	if (!g->err[0])
		snprintf(g->err, sizeof(g->err), "%s: %s", what, nvs_nvml_strerror(n, r));
}

/* What a GPU reports beside its bus id; a query that fails marks its field so. */
static void query(struct nvs_nvml *n, nvmlDevice_t d, struct nvs_nvml_gpu *g)
{
	nvmlUtilization_t u;
	unsigned int a, b = 0;
	nvmlReturn_t r;

	if (n->utilization) {
		r = n->utilization(d, &u);
		if (r == NVML_SUCCESS) {
			g->util = u.gpu;
			g->util_ok = true;
		} else {
			gpu_fail(n, g, "nvmlDeviceGetUtilizationRates", r);
		}
	}
	if (n->temperature) {
		r = n->temperature(d, NVML_TEMPERATURE_GPU, &a);
		if (r == NVML_SUCCESS) {
			g->temp = a;
			g->temp_ok = true;
		} else {
			gpu_fail(n, g, "nvmlDeviceGetTemperature", r);
		}
	}
	if (n->power && n->power(d, &a) == NVML_SUCCESS) {
		g->power_mw = a;
		g->power_ok = true;
	}
	if (!n->compute_procs)
		return;
	r = count_procs(n->compute_procs, d, &a);
	if (r != NVML_SUCCESS) {
		gpu_fail(n, g, "nvmlDeviceGetComputeRunningProcesses", r);
		return;
	}
	if (n->graphics_procs) {
		r = count_procs(n->graphics_procs, d, &b);
		if (r != NVML_SUCCESS) {
			gpu_fail(n, g, "nvmlDeviceGetGraphicsRunningProcesses", r);
			return;
		}
	}
	g->procs = a + b;
	g->procs_ok = true;
}

int nvs_nvml_gpus(struct nvs_nvml *n, struct nvs_nvml_gpu **out, size_t *count, char *err, size_t errlen)
{
	struct nvs_nvml_gpu *v;
	unsigned int cnt = 0;
	nvmlReturn_t r;

	*out = NULL;
	*count = 0;
	r = n->count(&cnt);
	if (r != NVML_SUCCESS) {
		snprintf(err, errlen, "nvmlDeviceGetCount: %s", nvs_nvml_strerror(n, r));
		return -EIO;
	}
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < cnt; ++i) {
		struct nvs_nvml_gpu *g = &v[i];
		nvmlPciInfo_t pci;
		nvmlDevice_t d;

		r = n->by_index(i, &d);
		if (r != NVML_SUCCESS) {
			gpu_fail(n, g, "nvmlDeviceGetHandleByIndex", r);
			continue;
		}
		memset(&pci, 0, sizeof(pci));
		r = n->pci_info(d, &pci);
		if (r != NVML_SUCCESS) {
			gpu_fail(n, g, "nvmlDeviceGetPciInfo", r);
			continue;
		}
		kernel_busid(&pci, g->busid, sizeof(g->busid));
		query(n, d, g);
	}
	*out = v;
	*count = cnt;
	return 0;
}
