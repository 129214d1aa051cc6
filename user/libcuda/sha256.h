/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_SHA256_H
#define LIBCUDA_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* SHA-256 of a buffer, as 64 lowercase hex digits plus NUL. */
void lc_sha256_hex(const void *data, size_t len, char hex[65]);
/* Same for a file; 0 or -errno. */
int lc_sha256_file(const char *path, char hex[65]);

#endif
