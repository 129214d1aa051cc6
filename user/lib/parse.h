/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_PARSE_H
#define LIB_PARSE_H

#include <stdint.h>

/*
 * Parsers return 0 or -EINVAL / -ERANGE (errno set too) and accept
 * surrounding nothing: the whole string must be consumed.
 */
int nvs_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* Decimal digits only, no sign, space or base prefix; overflow is -ERANGE. */
int nvs_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * A byte count: digits with an optional binary suffix K, M, G or T (also
 * KiB, MiB, ...; a bare or trailing B is allowed), within [min, max] and a
 * multiple of align (0 or 1: any). A value that would overflow is -ERANGE,
 * never wrapped.
 */
int nvs_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t align, uint64_t *out);
/* "0.6", "-1.25", "3" in thousandths within [min, max]; no nan, inf or exponents. */
int nvs_parse_milli(const char *s, int64_t min, int64_t max, int64_t *out);
/* "95", "95.5", "-3.25" °C to m°C, within [min_mc, max_mc]. */
int nvs_parse_celsius(const char *s, int32_t min_mc, int32_t max_mc, int32_t *out);
/* "30", "1.5", "250ms", "2s", "5m" to milliseconds, within [min_ms, max_ms]. */
int nvs_parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out);

#endif
