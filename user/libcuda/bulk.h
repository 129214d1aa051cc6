/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_BULK_H
#define LIBCUDA_BULK_H

#include <stddef.h>
#include <stdint.h>

#include "libcuda/elf.h"
#include "libcuda/gate.h"

/*
 * Every memset/memcpy/memmove call and rep stos/movs in the executable
 * segments whose constant length covers +field from its destination, with
 * where the destination comes from (see struct lc_bulk). 0 or -errno.
 */
int lc_bulk_scan(const struct lc_elf *e, uint32_t field, struct lc_bulk **out, size_t *n, char *err,
		 size_t errlen);

#endif
