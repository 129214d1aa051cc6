/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_DUMP_LIBCUDA_H
#define CLI_DUMP_LIBCUDA_H

#include "libcuda/report.h"

/* libcuda status --dump: the analysis as "key<TAB>value..." lines. */
void nvs_dump_libcuda(const struct lc_report *r);

#endif
