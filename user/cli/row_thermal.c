// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * thermal's sensor record (cli/row_thermal.h). --dump columns, documented
 * in nvsidecar(8): gpu busid id label valid mc peak low max alarm, m°C
 * integers and `-' where there is no value.
 */
#include "cli/row_thermal.h"

#define T struct thermal_row

static const struct row_field fields[] = {
	{ .col = 1, .kind = ROW_UINT, ROW_VAL(T, gpu),
	  .why = "JSON and text: the GPU's object and its first row name it" },
	{ .col = 2, .kind = ROW_STRP, ROW_VAL(T, busid),
	  .why = "JSON: in the GPU's object; text: status shows bus ids" },
	{ .fmt = "%-6s ", .kind = ROW_STRP, ROW_VAL(T, gname),
	  .why = "the table's first column; JSON and dump carry the gpu index" },
	{ .key = "id", .col = 3, .kind = ROW_UINT, ROW_VAL(T, s.id),
	  .why = "text: the row's place in the table is the id" },
	{ .key = "label", .fmt = "%-9s ", .col = 4, .kind = ROW_STR, ROW_VAL(T, s.label) },
	{ .key = "valid", .col = 5, .kind = ROW_BOOL, ROW_VAL(T, s.valid),
	  .why = "text: a reading that is not valid is dim, its value `-'" },
	{ .key = "mc", .fmt = "%9s", .col = 6, .kind = ROW_MC, ROW_VAL(T, s.mc),
	  .has = ROW_AT(T, s.valid), .color = ROW_AT(T, color), .mark = ROW_AT(T, mark) },
	{ .key = "peak_mc", .fmt = " %9s", .col = 7, .kind = ROW_MC, ROW_VAL(T, s.peak),
	  .has = ROW_AT(T, s.has_peak) },
	{ .key = "low_mc", .fmt = " %9s", .col = 8, .kind = ROW_MC, ROW_VAL(T, s.low),
	  .has = ROW_AT(T, s.has_low) },
	{ .key = "max_mc", .fmt = " %9s", .col = 9, .kind = ROW_MC, ROW_VAL(T, s.max),
	  .has = ROW_AT(T, s.has_max) },
	{ .key = "alarm", .fmt = "%s", .col = 10, .kind = ROW_BOOL, ROW_VAL(T, s.alarm),
	  .ttrue = "  ALARM", .tfalse = "" },
};

const struct row_desc thermal_sensor_row = {
	.name = "thermal sensor", .style = ROW_TABLE, .f = fields, .n = sizeof(fields) / sizeof(fields[0]),
};
