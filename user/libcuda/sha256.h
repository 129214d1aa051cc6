/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_SHA256_H
#define LIBCUDA_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

/* Streaming: init, update any number of times, final (64 hex digits + NUL). */
struct lc_sha256 {
	uint32_t st[8];
	uint8_t buf[64];
	size_t n;
	uint64_t total;
	bool ni;
};

void lc_sha256_init(struct lc_sha256 *c);
void lc_sha256_update(struct lc_sha256 *c, const void *data, size_t len);
void lc_sha256_final(struct lc_sha256 *c, char hex[65]);

/* Bytes hashed per window of a mapping (lc_sha256_mapped). */
#define LC_SHA256_WINDOW (8u << 20)

/* SHA-256 of a buffer, as 64 lowercase hex digits plus NUL. */
void lc_sha256_hex(const void *data, size_t len, char hex[65]);
/* Same for a read-only file mapping; drops each window's pages once hashed. */
void lc_sha256_mapped(const void *map, size_t len, char hex[65]);
/* Same for a file, read in a stream; 0 or -errno. */
int lc_sha256_file(const char *path, char hex[65]);

#endif
