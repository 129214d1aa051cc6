// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The parts of libnvsidecar that need no kernel: enum names and the module
 * version. Parsers and formatters live in lib/ and cli/: they are not ABI.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libnvsidecar.h"

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

#define NAME_OF(names, v) name_of(names, sizeof(names) / sizeof(names[0]), v)

const char *nvs_status_name(uint32_t status)
{
	static const char *const names[] = {
		[NVS_STATUS_OK] = "ok",
		[NVS_STATUS_NO_DRIVER] = "no-driver",
		[NVS_STATUS_ASLEEP] = "asleep",
		[NVS_STATUS_UNAVAILABLE] = "unavailable",
		[NVS_STATUS_REMOVED] = "removed",
	};
	return NAME_OF(names, status);
}

const char *nvs_event_name(uint32_t type)
{
	static const char *const names[] = {
		[NVS_EVENT_THRESHOLD_CROSSED] = "threshold-crossed",
		[NVS_EVENT_THRESHOLD_CLEARED] = "threshold-cleared",
		[NVS_EVENT_GPU_ADDED] = "gpu-added",
		[NVS_EVENT_GPU_REMOVED] = "gpu-removed",
		[NVS_EVENT_STATUS_CHANGED] = "status-changed",
	};
	return NAME_OF(names, type);
}

const char *nvs_dmabuf_step_name(uint32_t step)
{
	static const char *const names[] = {
		[NVS_DMABUF_STEP_GET] = "get",
		[NVS_DMABUF_STEP_ATTACH] = "attach",
		[NVS_DMABUF_STEP_MAP] = "map",
		[NVS_DMABUF_STEP_FENCE] = "fence",
		[NVS_DMABUF_STEP_DONE] = "done",
	};
	return NAME_OF(names, step);
}

const char *nvs_dmabuf_verdict_name(uint32_t verdict)
{
	static const char *const names[] = {
		[NVS_DMABUF_VERDICT_UNKNOWN] = "unknown",
		[NVS_DMABUF_VERDICT_BAR1] = "bar1",
		[NVS_DMABUF_VERDICT_SYSTEM_RAM] = "system-ram",
		[NVS_DMABUF_VERDICT_ELSEWHERE] = "elsewhere",
		[NVS_DMABUF_VERDICT_MIXED] = "mixed",
	};
	return NAME_OF(names, verdict);
}

const char *nvs_p2p_name(uint32_t p2p)
{
	static const char *const names[] = {
		[NVS_P2P_UNKNOWN] = "unknown",
		[NVS_P2P_ALLOWED] = "allowed",
		[NVS_P2P_REFUSED] = "refused",
		[NVS_P2P_NOT_APPLICABLE] = "not-applicable",
	};
	return NAME_OF(names, p2p);
}

int nvs_module_version(char *buf, size_t len)
{
	int fd, ret;
	ssize_t r;

	if (!len) {
		errno = EINVAL;
		return -EINVAL;
	}
	fd = open("/sys/module/nvsidecar/version", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	ret = r < 0 ? -errno : 0;
	close(fd);
	if (ret) {
		errno = -ret;
		return ret;
	}
	buf[r] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}
