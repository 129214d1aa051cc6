/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_ROW_LIBCUDA_H
#define CLI_ROW_LIBCUDA_H

#include "cli/row.h"
#include "libcuda/gate.h"

/*
 * libcuda status: one store to the capability byte (struct lc_store): a
 * text line, a JSON object of "stores", a --dump line
 * "store addr effect after_patch insn".
 */
extern const struct row_desc libcuda_store_row;

#endif
