// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A fake libnvidia-ml (NVML) for `nvsidecar idle-fix' and `doctor' tests,
 * written from the signatures and structures of NVML's public nvml.h: the
 * same exported symbols (the _v2/_v3 names current drivers export), the
 * same nvmlPciInfo_t layout, NVML's own bus id format ("00000000:03:00.0":
 * eight-digit domain, upper-case hex) and its return codes, including
 * NVML_ERROR_INSUFFICIENT_SIZE with the count for a process query that has
 * no room.
 *
 * Environment:
 *   FAKE_NVML_STATE=FILE   one GPU per line, read at nvmlInit:
 *                            BUSID UTIL% COMPUTE_PROCS [TEMP_C [POWER_W [GRAPHICS_PROCS]]]
 *                          e.g. "0000:03:00.0 100 0 61 310"; '#' starts a comment
 *   FAKE_NVML_DRIVER=VER   nvmlSystemGetDriverVersion (default 575.64.03)
 *   FAKE_NVML_INIT_ERROR=N nvmlInit_v2 returns N
 *   FAKE_NVML_LOG=FILE     appends "init", "shutdown" and one line per query
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 fakenvml.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_FOUND		6
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_UNKNOWN		999

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE	32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE	16

typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define MAXDEV 16

struct nvmlDevice_st {
	unsigned int domain, bus, dev, fn;
	unsigned int util, procs, gprocs, temp, power_w;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

static struct nvmlDevice_st devs[MAXDEV];
static unsigned int ndev;
static int inited;

static void logf_(const char *fmt, const char *a, unsigned int b)
{
	const char *p = getenv("FAKE_NVML_LOG");
	FILE *f;

	if (!p || !(f = fopen(p, "a")))
		return;
	fprintf(f, fmt, a, b);
	fputc('\n', f);
	fclose(f);
}

static void busid(const struct nvmlDevice_st *d, char *buf, size_t len)
{
	snprintf(buf, len, "%08X:%02X:%02X.%X", d->domain, d->bus, d->dev, d->fn);
}

static void load(void)
{
	const char *p = getenv("FAKE_NVML_STATE");
	char line[256];
	FILE *f;

	ndev = 0;
	if (!p || !(f = fopen(p, "r")))
		return;
	while (ndev < MAXDEV && fgets(line, sizeof(line), f)) {
		struct nvmlDevice_st d = { .temp = 40, .power_w = 30 };
		char *h = strchr(line, '#');

		if (h)
			*h = 0;
		if (sscanf(line, "%x:%x:%x.%x %u %u %u %u %u", &d.domain, &d.bus, &d.dev, &d.fn, &d.util, &d.procs,
			   &d.temp, &d.power_w, &d.gprocs) >= 6)
			devs[ndev++] = d;
	}
	fclose(f);
}

static int valid(nvmlDevice_t d)
{
	return inited && d >= devs && d < devs + ndev;
}

nvmlReturn_t nvmlInit_v2(void)
{
	const char *e = getenv("FAKE_NVML_INIT_ERROR");

	if (e && atoi(e))
		return atoi(e);
	load();
	inited++;
	logf_("init %s%u", "", ndev);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void)
{
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	inited--;
	logf_("shutdown %s%u", "", 0);
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case 9: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	const char *v = getenv("FAKE_NVML_DRIVER");

	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((unsigned int)snprintf(version, length, "%s", v ? v : "575.64.03") >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = ndev;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || i >= ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = &devs[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *d)
{
	unsigned int dom = 0, bus, dev, fn;

	if (!inited)
		return NVML_ERROR_UNINITIALIZED;
	if (!id || !d || sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned int i = 0; i < ndev; ++i)
		if (devs[i].domain == dom && devs[i].bus == bus && devs[i].dev == dev && devs[i].fn == fn) {
			*d = &devs[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	if (!valid(d) || !pci)
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	memset(pci, 0, sizeof(*pci));
	pci->domain = d->domain;
	pci->bus = d->bus;
	pci->device = d->dev;
	pci->pciDeviceId = 0x2b8510de;		/* device << 16 | vendor: RTX 5090 */
	busid(d, pci->busId, sizeof(pci->busId));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", d->domain & 0xffff, d->bus,
		 d->dev, d->fn);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
	if (!valid(d) || !name)
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	snprintf(name, length, "NVIDIA GeForce RTX 5090");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	char id[32];

	if (!valid(d) || !u)
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	u->gpu = d->util;
	u->memory = d->util ? 1 : 0;
	busid(d, id, sizeof(id));
	logf_("utilization %s %u", id, d->util);
	return NVML_SUCCESS;
}

static nvmlReturn_t procs(unsigned int n, unsigned int *count, nvmlProcessInfo_t *infos)
{
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*count < n || (!infos && n)) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; ++i) {
		memset(&infos[i], 0, sizeof(infos[i]));
		infos[i].pid = 4000 + i;
		infos[i].usedGpuMemory = 1ull << 30;
	}
	*count = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
	if (!valid(d))
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	return procs(d->procs, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
	if (!valid(d))
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	return procs(d->gprocs, count, infos);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp)
{
	if (!valid(d) || !temp || sensor != 0)
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	*temp = d->temp;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	if (!valid(d) || !mw)
		return inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	*mw = d->power_w * 1000;
	return NVML_SUCCESS;
}
