/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_KNOWN_H
#define LIBCUDA_KNOWN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Driver builds whose gate was read by hand elsewhere. Only a cross-check
 * of what the locator derives: a library not listed here is analysed the
 * same way, and a listed one whose analysis disagrees is refused.
 */
struct lc_known {
	const char *version;
	const char *sha256;
	uint64_t size;		/* 0: not recorded */
	uint32_t field;
	uint8_t mask;
	const uint64_t *bytes;	/* file offsets of every byte the patch changes */
	size_t nbytes;
	const char *source;
};

const struct lc_known *lc_known_by_hash(const char *sha256);

#endif
