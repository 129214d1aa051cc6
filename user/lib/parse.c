// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The number, size, temperature and duration parsers every subcommand and
 * doctor.conf use. They reject signs, overflow, NaN and trailing junk
 * instead of wrapping, and set errno as well as returning -errno.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/parse.h"

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
