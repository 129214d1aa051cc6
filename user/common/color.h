/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef TERM_H
#define TERM_H

#include <stdbool.h>

/*
 * Colour on standard output: only on a terminal, never with NO_COLOR set;
 * NVSIDECAR_COLOR=always|never overrides both.
 */
bool want_color(void);

#endif
