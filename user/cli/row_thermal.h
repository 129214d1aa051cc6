/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_ROW_THERMAL_H
#define CLI_ROW_THERMAL_H

#include "cli/row.h"
#include "libnvsidecar.h"

/* One sensor of one GPU, as `thermal' shows it (a row of its table). */
struct thermal_row {
	struct nvs_sensor_info s;
	uint32_t gpu;		/* the N in gpuN */
	const char *busid;
	const char *gname;	/* "gpu0" on a GPU's first row, "" below it */
	enum out_color color;	/* of the reading: alarm, at its peak, dim when not valid */
	const char *mark;	/* "*" when the reading is at its peak (--watch), else " " */
};

/* thermal: text table row, the JSON sensor object, the --dump line. */
extern const struct row_desc thermal_sensor_row;

#endif
