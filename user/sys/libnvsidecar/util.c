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

/*
 * The one unsigned parser: decimal digits only (no sign, space or base
 * prefix, so "010" is ten and "0x10" is refused), checked for overflow
 * before it can wrap.
 */
static int parse_digits(const char *s, uint64_t *out, const char **rest)
{
	uint64_t v = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); ++s) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10) {
			while (isdigit((unsigned char)*s))
				++s;
			*rest = s;
			return -ERANGE;
		}
		v = v * 10 + d;
	}
	*out = v;
	*rest = s;
	return 0;
}

int nvs_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *rest;
	uint64_t v;
	int ret = parse_digits(s, &v, &rest);

	/* Text after the digits makes it not a number, however large. */
	if (ret == -EINVAL || *rest)
		return fail(EINVAL);
	if (ret || v < min || v > max)
		return fail(ERANGE);
	*out = v;
	return 0;
}

int nvs_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int ret = nvs_parse_u64(s, min, max, &v);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

int nvs_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t align, uint64_t *out)
{
	const char *rest;
	unsigned int shift = 0;
	uint64_t v;
	int ret = parse_digits(s, &v, &rest);

	if (ret == -EINVAL)
		return fail(EINVAL);
	switch (*rest) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	}
	if (shift)
		++rest;
	if (!strcmp(rest, "iB") && shift)
		rest += 2;
	else if (!strcmp(rest, "B"))
		++rest;
	if (*rest)
		return fail(EINVAL);
	/* 17179869185G must not become 1 GiB. */
	if (ret || v > UINT64_MAX >> shift)
		return fail(ERANGE);
	v <<= shift;
	if (v < min || v > max || (align > 1 && v % align))
		return fail(ERANGE);
	*out = v;
	return 0;
}

/*
 * Decimal fixed point without floating point, so "95.001" is exactly
 * 95001 m°C and there is no rounding surprise at the range limits.
 */
static int parse_fixed3(const char *s, int64_t *out, const char **rest)
{
	bool neg = false, digits = false;
	int64_t ip = 0, fp = 0;
	int fd = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	for (; isdigit((unsigned char)*s); ++s) {
		digits = true;
		if (ip > INT64_MAX / 10 / 1000 - 10)
			return -ERANGE;
		ip = ip * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (++s; isdigit((unsigned char)*s); ++s) {
			digits = true;
			if (fd < 3) {
				fp = fp * 10 + (*s - '0');
				++fd;
			} else if (*s != '0') {
				return -EINVAL;	/* finer than 1 m°C / 1 ms */
			}
		}
	}
	if (!digits)
		return -EINVAL;
	for (; fd < 3; ++fd)
		fp *= 10;
	*out = (neg ? -1 : 1) * (ip * 1000 + fp);
	*rest = s;
	return 0;
}

int nvs_parse_celsius(const char *s, int32_t min_mc, int32_t max_mc, int32_t *out)
{
	const char *rest;
	int64_t v;
	int ret;

	if (!s)
		return fail(EINVAL);
	ret = parse_fixed3(s, &v, &rest);
	if (ret)
		return fail(-ret);
	if (!strcmp(rest, "C") || !strcmp(rest, "°C"))
		rest += strlen(rest);
	if (*rest)
		return fail(EINVAL);
	if (v < min_mc || v > max_mc)
		return fail(ERANGE);
	*out = (int32_t)v;
	return 0;
}

int nvs_parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out)
{
	const char *rest;
	int64_t v;
	int ret;

	if (!s || *s == '-' || *s == '+')
		return fail(EINVAL);
	ret = parse_fixed3(s, &v, &rest);
	if (ret)
		return fail(-ret);
	/* v is in thousandths of the unit. */
	if (!strcmp(rest, "ms")) {
		if (v % 1000)
			return fail(EINVAL);
		v /= 1000;
	} else if (!strcmp(rest, "m")) {
		if (v > INT64_MAX / 60)
			return fail(ERANGE);
		v *= 60;
	} else if (!strcmp(rest, "h")) {
		if (v > INT64_MAX / 3600)
			return fail(ERANGE);
		v *= 3600;
	} else if (*rest && strcmp(rest, "s")) {
		return fail(EINVAL);
	}
	if ((uint64_t)v < min_ms || (uint64_t)v > max_ms)
		return fail(ERANGE);
	*out = (uint64_t)v;
	return 0;
}

int nvs_parse_milli(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *rest;
	int64_t v;
	int ret;

	/* Decimal only: strtod would take "nan", "inf" and "0x1p-1". */
	if (!s)
		return fail(EINVAL);
	ret = parse_fixed3(s, &v, &rest);
	if (ret)
		return fail(-ret);
	if (*rest)
		return fail(EINVAL);
	if (v < min || v > max)
		return fail(ERANGE);
	*out = v;
	return 0;
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

char *nvs_format_mc(char *buf, size_t len, int32_t mc)
{
	int64_t a = mc < 0 ? -(int64_t)mc : mc;
	unsigned int frac = (unsigned int)(a % 1000);
	int digits = 3;

	while (digits > 1 && frac % 10 == 0) {
		frac /= 10;
		--digits;
	}
	snprintf(buf, len, "%s%" PRId64 ".%0*u", mc < 0 ? "-" : "", a / 1000, digits, frac);
	return buf;
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
