// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <string.h>

#include "libcuda/known.h"

/* 590.48.01: the single byte of the reference post (or $0x40 -> $0x60). */
static const uint64_t b590[] = { 0x42d69b };
/* 615.71.09: three inlined initialisers, or $0x40 and alternate or $0xc0 each. */
static const uint64_t b615[] = { 0x1b3e2b, 0x1b3e51, 0x337022, 0x33704f, 0x4aae5b, 0x4aae80 };
/*
 * 535.261.03 (Debian bookworm libcuda1 535.261.03-1), read with objdump:
 * init site 0x42d410 (or $0x40 at 0x42d419, or $0xffffffc0 at 0x42d43e)
 * and the computed store 0x3cd993 (and $0xffffffdf at 0x3cd99a: ModRM and
 * immediate change).
 */
static const uint64_t b535_261[] = { 0x3cd99b, 0x3cd99c, 0x42d41b, 0x42d440 };
/* 535.216.03 (bookworm-backports 535.216.03-2~bpo12+1), same shapes, read with objdump. */
static const uint64_t b535_216[] = { 0x3cd9db, 0x3cd9dc, 0x42d62b, 0x42d650 };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct lc_known known[] = {
	{ "590.48.01", "e24ade728a7b2280b60f5603855db23ca137d87d342ecac4219157d2cc5c3694", 0,
	  0x5f14, 0x20, b590, N(b590), "reference post (RTX 5090, CUDA 13.1)" },
	{ "615.71.09", "85a8cc8cf00419ceb295ec62c481d05b4cdbdab10f25c5375d6d24bdbe00b4d9", 112475080,
	  0x8f1c, 0x20, b615, N(b615), "landscape.md, prior GDR patch (six sites)" },
	{ "535.261.03", "6ed312ee383dc77b0c583813c632d1cc625ee4fb7881ed3e37dcaf3cf7393b25", 29384912,
	  0x3684, 0x20, b535_261, N(b535_261), "Debian libcuda1 535.261.03-1, read by hand" },
	{ "535.216.03", "3e7bfd636d767be8738a5a713fff067877dfe61a4b4ab309030718b5a68e8195", 29384912,
	  0x3684, 0x20, b535_216, N(b535_216), "Debian libcuda1 535.216.03-2~bpo12+1, read by hand" },
};

const struct lc_known *lc_known_by_hash(const char *sha256)
{
	for (size_t i = 0; i < N(known); ++i)
		if (!strcmp(known[i].sha256, sha256))
			return &known[i];
	return NULL;
}
