/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_FORMAT_H
#define LIB_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* m°C as "-12.345" (exact, trailing zeros trimmed to at least one decimal). */
char *nvs_format_mc(char *buf, size_t len, int32_t mc);

#endif
