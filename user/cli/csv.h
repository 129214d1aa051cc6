/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_CSV_H
#define CLI_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libnvsidecar.h"

/*
 * CSV recording format (thermal --record): a header line "gpu,seq,
 * timestamp_ns,<label>,..." over the given column labels, then one row per
 * sample; a cell is the value in m°C, empty when the sensor was not valid
 * or the GPU has no sensor of that label. col_of_sensor[i] is the column
 * (0-based among the labels) of sensor i of that GPU, or -1.
 */
int nvs_csv_header(FILE *f, const char *const *labels, size_t nlabels);
int nvs_csv_row(FILE *f, uint32_t gpu, const struct nvs_sample_entry *s,
		unsigned int nsensors, const int *col_of_sensor, size_t nlabels);

#endif
