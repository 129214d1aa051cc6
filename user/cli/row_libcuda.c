// SPDX-License-Identifier: GPL-2.0 OR MIT
/* libcuda status's store record (cli/row_libcuda.h). */
#include "cli/row_libcuda.h"

static const char *effect_name(unsigned int e)
{
	return lc_effect_name((enum lc_effect)e);
}

#define S struct lc_store
#define NOT_A_COLUMN "dump: its columns are fixed (nvsidecar(8)); "

static const struct row_field fields[] = {
	{ .key = "addr", .fmt = "    %-10s ", .col = 1, .kind = ROW_UINT, .flags = ROW_HEX | ROW_JHEX,
	  ROW_VAL(S, addr) },
	{ .key = "insn", .fmt = "%-40s ", .col = 4, .kind = ROW_STR, ROW_VAL(S, text) },
	{ .key = "effect", .fmt = "%-15s -> ", .col = 2, .kind = ROW_ENUM, ROW_VAL(S, orig), .name = effect_name },
	{ .key = "after_patch", .fmt = "%-15s ", .col = 3, .kind = ROW_ENUM, ROW_VAL(S, now), .name = effect_name },
	{ .key = "window", .kind = ROW_UINT, .flags = ROW_JHEX, ROW_VAL(S, win_start),
	  .why = NOT_A_COLUMN "text: the analysis's detail, for JSON readers" },
	{ .key = "offset", .kind = ROW_INT, ROW_VAL(S, lo),
	  .why = NOT_A_COLUMN "text: the note says what the store writes" },
	{ .key = "width", .kind = ROW_UINT, ROW_VAL(S, width),
	  .why = NOT_A_COLUMN "text: the note says what the store writes" },
	{ .key = "read_modify_write", .kind = ROW_BOOL, ROW_VAL(S, rmw),
	  .why = NOT_A_COLUMN "text: the instruction shows it" },
	{ .key = "initialiser", .fmt = "%s", .kind = ROW_BOOL, ROW_VAL(S, init), .ttrue = "[initialiser] ", .tfalse = "",
	  .why = "dump: an `initialiser ADDR' line after the store lines says it" },
	{ .key = "note", .fmt = "%s\n", .kind = ROW_STR, ROW_VAL(S, note),
	  .why = NOT_A_COLUMN "the note is for people" },
};

const struct row_desc libcuda_store_row = {
	.name = "libcuda store", .tag = "store", .style = ROW_TABLE,
	.f = fields, .n = sizeof(fields) / sizeof(fields[0]),
};
