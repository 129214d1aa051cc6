/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_PROMETHEUS_H
#define CLI_PROMETHEUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "check/doctor.h"

/*
 * node_exporter's textfile for this run into path (a directory gets
 * nvsidecar.prom), atomically. 0, or -errno with err.
 */
int nvs_doctor_textfile(const struct nvs_checks *c, const struct nvs_doctor_opts *o, bool healthy,
			const char *path, char *err, size_t errlen);
/* The same text, to any stream (tests, --textfile -). */
void nvs_doctor_metrics(FILE *f, const struct nvs_checks *c, const struct nvs_doctor_opts *o, bool healthy);

#endif
