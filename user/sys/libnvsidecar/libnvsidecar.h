/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * libnvsidecar: a small client for the nvsidecar generic netlink family
 * (kmod/uapi/nvsidecar.h). Link with -lnvsidecar $(pkg-config --libs
 * libnl-genl-3.0).
 *
 * Conventions: every function that can fail returns 0 (or a count) on
 * success and -errno on failure, and also sets errno, so a caller can
 * perror(). When the kernel attached an extended-ack message to its error,
 * or the library knows what the admin should do next, nvs_last_error()
 * returns it. A handle is not thread-safe; use one per thread.
 */
#ifndef LIBNVSIDECAR_H
#define LIBNVSIDECAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nvsidecar.h"		/* kmod/uapi: commands, enums, limits */

#ifdef __cplusplus
extern "C" {
#endif

struct nvs_handle;

/* One sensor of one GPU, in milli-degrees Celsius. */
struct nvs_sensor_info {
	uint32_t id;			/* index into nvs_sample_entry.mc[] */
	char label[NVS_LABEL_LEN];	/* "hotspot", "ch0", "mem3", ... */
	bool valid;			/* mc is a real reading */
	int32_t mc;
	bool has_peak, has_low, has_max;
	int32_t peak;			/* highest since the last reset */
	int32_t low;
	int32_t max;			/* threshold */
	bool alarm;			/* mc > max */
};

struct nvs_gpu_info {
	uint32_t index;			/* the N in gpuN */
	char busid[NVS_BUSID_LEN];
	uint16_t vendor, device;
	char chip[16];
	char name[64];
	uint32_t status;		/* enum nvs_status */
	char reason[64];
	uint32_t sample_hz;		/* 0: read on demand */
	uint32_t flags;			/* NVS_GPU_F_* */
	uint64_t samples, unavailable, crossings;
	uint64_t last_sample_ns;	/* CLOCK_MONOTONIC */
	uint64_t seq;			/* newest sample, 0: none yet */
	unsigned int nsensors;
	struct nvs_sensor_info sensors[NVS_MAX_SENSORS];
};

/* One sampling pass of one GPU. */
struct nvs_sample_entry {
	uint64_t seq;
	uint64_t ts_ns;			/* CLOCK_MONOTONIC */
	uint32_t valid;			/* bit i: mc[i] is a real reading */
	int32_t mc[NVS_MAX_SENSORS];
};

/* The result of one SAMPLES_GET; reuse it across calls to avoid malloc. */
struct nvs_samples {
	uint32_t gpu;
	uint32_t nsensors;
	uint64_t lost;			/* overwritten before we asked */
	uint64_t next;			/* pass as since next time */
	size_t count;
	size_t cap;
	struct nvs_sample_entry *v;
};

/* A GPU_SET request; only the fields marked as present are sent. */
struct nvs_set_req {
	uint32_t gpu;
	bool set_sample_hz;
	uint32_t sample_hz;
	const char *thresh_sensor;	/* NULL: leave thresholds alone */
	bool thresh_clear;		/* remove it instead of setting thresh_mc */
	int32_t thresh_mc;
	bool reset_peaks;
};

struct nvs_event_info {
	uint32_t type;			/* enum nvs_event */
	uint64_t ts_ns;			/* CLOCK_MONOTONIC */
	bool has_gpu;
	uint32_t gpu;
	char busid[NVS_BUSID_LEN];
	bool has_status;
	uint32_t status;
	char reason[64];
	bool has_sensor;
	struct nvs_sensor_info sensor;
};

/* The NVS_A_DMABUF nest of a DMA-BUF probe reply. */
struct nvs_dmabuf_result {
	uint32_t present;		/* bit NVS_DMABUF_A_x: attribute x was sent */
	uint32_t step;			/* enum nvs_dmabuf_step reached */
	int32_t err;			/* 0, or positive errno at step */
	char exporter[32];
	char importer[NVS_BUSID_LEN];
	uint64_t size;
	uint32_t nents;
	uint64_t mapped;
	uint64_t seg_min, seg_max;
	uint32_t verdict;		/* enum nvs_dmabuf_verdict */
	uint64_t bar1_start, bar1_len;
	uint32_t p2p;			/* enum nvs_p2p_state */
	int32_t p2p_distance;
};

#define NVS_GPU_ANY (-1)		/* nvs_dmabuf_probe: no GPU to compare */

/*
 * Connects and resolves the family. -ENOENT when the family is not
 * registered (the module is not loaded); the message then says what to do.
 * On failure *h is NULL and nvs_last_error(NULL) has the message.
 */
int nvs_open(struct nvs_handle **h);
void nvs_close(struct nvs_handle *h);
/* The message of the last failure on h ("" if none); NULL: of nvs_open. */
const char *nvs_last_error(const struct nvs_handle *h);
/* Family version announced by the kernel. */
uint32_t nvs_family_version(const struct nvs_handle *h);

/* All GPUs in index order; *gpus is malloc'd (free() it), *n may be 0. */
int nvs_gpu_list(struct nvs_handle *h, struct nvs_gpu_info **gpus, size_t *n);
int nvs_gpu_get(struct nvs_handle *h, uint32_t index, struct nvs_gpu_info *gpu);

/*
 * Samples of one GPU with seq >= since (0: the oldest kept). Replaces the
 * contents of s. s->lost counts samples overwritten before this call.
 */
int nvs_samples_get(struct nvs_handle *h, uint32_t gpu, uint64_t since,
		    struct nvs_samples *s);
void nvs_samples_free(struct nvs_samples *s);

/*
 * Needs CAP_NET_ADMIN; a sample_hz above the module's default needs
 * CAP_SYS_ADMIN too (it raises the register-read budget). -EPERM otherwise.
 */
int nvs_gpu_set(struct nvs_handle *h, const struct nvs_set_req *req);

/*
 * Added in LIBNVSIDECAR_1.1. The structs above keep their version 1 size,
 * so programs built against version 1 keep working; what the module
 * gained later comes in structs of its own.
 */

/* The register-read budget of one GPU and what it has spent. */
struct nvs_gpu_budget {
	uint32_t index;
	uint32_t sample_hz;		/* 0: read on demand */
	bool has_mem_hz;		/* false: a module older than mem_hz */
	uint32_t mem_hz;		/* memory-sensor passes a second */
	bool has_mmio_reads;
	uint64_t mmio_reads;		/* 32-bit register reads so far */
};

int nvs_gpu_budget_get(struct nvs_handle *h, uint32_t index, struct nvs_gpu_budget *b);

/* Settings of GPU_SET that struct nvs_set_req has no room for. */
struct nvs_set_ext {
	bool set_mem_hz;
	uint32_t mem_hz;		/* 1..NVS_MEM_HZ_MAX */
};

/*
 * nvs_gpu_set() with ext's settings in the same request (applied all
 * together or not at all); ext may be NULL. A mem_hz above the module's
 * default needs CAP_SYS_ADMIN, like sample_hz.
 */
int nvs_gpu_set_ext(struct nvs_handle *h, const struct nvs_set_req *req,
		    const struct nvs_set_ext *ext);

/*
 * Joins the "events" group (idempotent). nvs_event_recv() waits up to
 * timeout_ms (-1: forever, 0: poll) for one event: 0 with *ev filled,
 * -ETIMEDOUT, -EINTR (a signal), or -ENOBUFS when the socket overflowed
 * and events were lost (later calls keep working).
 */
int nvs_events_subscribe(struct nvs_handle *h);
int nvs_event_recv(struct nvs_handle *h, struct nvs_event_info *ev, int timeout_ms);
int nvs_event_fd(const struct nvs_handle *h);	/* for poll(); -1 before subscribing */

/*
 * Asks the kernel to import the dma-buf behind fd on the PCI device named
 * importer ("0000:01:00.0"; NULL: the GPU's own device) and to compare the
 * mapping with the BAR1 of GPU gpu (NVS_GPU_ANY: none). Needs CAP_NET_ADMIN.
 * 0 with *res filled (res->err says whether a step after the fd lookup
 * failed), or -EBADF, -EINVAL (not a dma-buf), -ENODEV, -EPERM, ...
 */
int nvs_dmabuf_probe(struct nvs_handle *h, int fd, const char *importer,
		     int gpu, struct nvs_dmabuf_result *res);

/* Names for enums, stable (used in JSON and --dump); "unknown" if out of range. */
const char *nvs_status_name(uint32_t status);
const char *nvs_event_name(uint32_t type);
const char *nvs_dmabuf_step_name(uint32_t step);
const char *nvs_dmabuf_verdict_name(uint32_t verdict);
const char *nvs_p2p_name(uint32_t p2p);

/* The loaded module's version from /sys/module/nvsidecar/version. */
int nvs_module_version(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LIBNVSIDECAR_H */
