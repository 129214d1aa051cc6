// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The parts of libnvsidecar that need no kernel: enum names, the module
 * version, argument parsing and the CSV recording format.
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
#include "lib/parse.h"

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

static int fail(int err)
{
	errno = err;
	return -err;
}

int nvs_parse_gpu(const char *s, const struct nvs_gpu_info *gpus, size_t n,
		  uint32_t *index)
{
	uint32_t want;
	const char *p = s;

	if (!s || !*s)
		return fail(EINVAL);
	if (!strncmp(p, "gpu", 3))
		p += 3;
	if (!nvs_parse_u32(p, 0, UINT32_MAX, &want)) {
		for (size_t i = 0; i < n; ++i) {
			if (gpus[i].index == want) {
				*index = want;
				return 0;
			}
		}
		return fail(ENODEV);
	}
	for (size_t i = 0; i < n; ++i) {
		/* "01:00.0" names domain 0's "0000:01:00.0". */
		if (!strcasecmp(gpus[i].busid, s) ||
		    (!strncmp(gpus[i].busid, "0000:", 5) && !strcasecmp(gpus[i].busid + 5, s))) {
			*index = gpus[i].index;
			return 0;
		}
	}
	return fail(strchr(s, ':') ? ENODEV : EINVAL);
}

/* RFC 4180: labels are ours, but quote anything a spreadsheet would split. */
static int csv_cell(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n"))
		return fputs(s, f) < 0 ? -1 : 0;
	if (fputc('"', f) == EOF)
		return -1;
	for (; *s; ++s) {
		if (*s == '"' && fputc('"', f) == EOF)
			return -1;
		if (fputc(*s, f) == EOF)
			return -1;
	}
	return fputc('"', f) == EOF ? -1 : 0;
}

int nvs_csv_header(FILE *f, const char *const *labels, size_t nlabels)
{
	if (fputs("gpu,seq,timestamp_ns", f) < 0)
		goto err;
	for (size_t i = 0; i < nlabels; ++i)
		if (fputc(',', f) == EOF || csv_cell(f, labels[i]))
			goto err;
	if (fputc('\n', f) == EOF)
		goto err;
	return 0;
err:
	return -(errno ? errno : EIO);
}

int nvs_csv_row(FILE *f, uint32_t gpu, const struct nvs_sample_entry *s,
		unsigned int nsensors, const int *col_of_sensor, size_t nlabels)
{
	const int32_t *cell[NVS_MAX_SENSORS + 1] = { 0 };
	char line[64 + NVS_MAX_SENSORS * 13], *p = line;
	size_t left = sizeof(line);
	int w;

	if (nlabels > NVS_MAX_SENSORS || nsensors > NVS_MAX_SENSORS)
		return fail(EINVAL);
	for (unsigned int i = 0; i < nsensors; ++i)
		if (col_of_sensor[i] >= 0 && (size_t)col_of_sensor[i] < nlabels &&
		    (s->valid & (1U << i)))
			cell[col_of_sensor[i]] = &s->mc[i];
	w = snprintf(p, left, "%" PRIu32 ",%" PRIu64 ",%" PRIu64, gpu, s->seq, s->ts_ns);
	p += w;
	left -= w;
	for (size_t c = 0; c < nlabels; ++c) {
		w = cell[c] ? snprintf(p, left, ",%" PRId32, *cell[c]) : snprintf(p, left, ",");
		p += w;
		left -= w;
	}
	*p++ = '\n';
	if (fwrite(line, 1, p - line, f) != (size_t)(p - line))
		return -(errno ? errno : EIO);
	return 0;
}
