// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Bus ids by hand rather than sscanf("%x"): %x takes a sign, "0x",
 * leading spaces and wraps on overflow, so four sscanf sites accepted
 * different things. Here every field is hex digits only, bounded.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/busid.h"

/* Up to max hex digits, at least one; *s moves past them. */
static bool hex_field(const char **s, unsigned int max, uint32_t *out)
{
	const char *p = *s;
	uint32_t v = 0;
	unsigned int n = 0;

	while (isxdigit((unsigned char)*p)) {
		if (++n > max)
			return false;
		v = v << 4 | (uint32_t)(isdigit((unsigned char)*p) ? *p - '0' :
					 tolower((unsigned char)*p) - 'a' + 10);
		++p;
	}
	*s = p;
	*out = v;
	return n > 0;
}

int nvs_busid_parse(const char *s, struct nvs_busid *out)
{
	uint32_t f[4];
	unsigned int n = 0;
	const char *p = s;

	if (!s)
		return -EINVAL;
	/* up to three ':'-separated fields, then '.' and the function */
	for (;;) {
		if (n == 3 || !hex_field(&p, 8, &f[n]))
			return -EINVAL;
		++n;
		if (*p == '.')
			break;
		if (*p++ != ':')
			return -EINVAL;
	}
	++p;
	if (n < 2 || !hex_field(&p, 1, &f[n]) || *p)
		return -EINVAL;
	if (n == 2) {		/* BB:DD.F */
		f[3] = f[2];
		f[2] = f[1];
		f[1] = f[0];
		f[0] = 0;
	}
	if (f[1] > 0xff || f[2] > 0x1f || f[3] > 7)
		return -EINVAL;
	out->domain = f[0];
	out->bus = (uint8_t)f[1];
	out->dev = (uint8_t)f[2];
	out->fn = (uint8_t)f[3];
	return 0;
}

bool nvs_busid_eq(const struct nvs_busid *a, const struct nvs_busid *b)
{
	return a->domain == b->domain && a->bus == b->bus && a->dev == b->dev && a->fn == b->fn;
}

bool nvs_bdf_ok(const char *s)
{
	struct nvs_busid b;

	return !nvs_busid_parse(s, &b);
}

int nvs_busid_name(const struct nvs_busid *b, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%04x:%02x:%02x.%x", b->domain, b->bus, b->dev, b->fn);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

bool nvs_same_busid(const char *a, const char *b)
{
	struct nvs_busid x, y;

	return !nvs_busid_parse(a, &x) && !nvs_busid_parse(b, &y) && nvs_busid_eq(&x, &y);
}
