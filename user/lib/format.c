// SPDX-License-Identifier: GPL-2.0 OR MIT
/* m°C as text: the one formatter, so text, JSON and --dump agree. */
#include <inttypes.h>
#include <stdio.h>

#include "lib/format.h"

char *nvs_format_mc(char *buf, size_t len, int32_t mc)
{
	int64_t a = mc < 0 ? -(int64_t)mc : mc;
	unsigned int frac = (unsigned int)(a % 1000);
	/* the fraction's digits, trailing zeros trimmed to at least one */
	static const char *const fmt[] = { "%s%" PRId64 ".%u", "%s%" PRId64 ".%02u", "%s%" PRId64 ".%03u" };
	unsigned int digits = 3;

	while (digits > 1 && frac % 10 == 0) {
		frac /= 10;
		--digits;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(buf, len, fmt[digits - 1], mc < 0 ? "-" : "", a / 1000, frac);
#pragma GCC diagnostic pop
	return buf;
}
