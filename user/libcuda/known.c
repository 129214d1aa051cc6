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

/*
 * The rest of Debian's archive, read with objdump (docs/libcuda.md, "Hand-read
 * builds"; tests/libcuda/real-builds.tsv): the 525 tesla build's
 * initialiser is orb $0x40 to memory (0x3f8d10, immediate at 0x3f8d16); the
 * others have the 535 shapes at other addresses.
 */
static const uint64_t b525_147[] = { 0x39bdd3, 0x39bdd4, 0x3f8d16 };
static const uint64_t b535_274[] = { 0x3cda9b, 0x3cda9c, 0x42d51b, 0x42d540 };
static const uint64_t b550_54[] = { 0x39319b, 0x39319c, 0x3f2fbb, 0x3f2fe0 };
static const uint64_t b550_163[] = { 0x39732b, 0x39732c, 0x3f763b, 0x3f7660 };
static const uint64_t b555_58[] = { 0x35691b, 0x35691c, 0x3b497b, 0x3b49a0 };

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
	{ "525.147.05", "bd8c9ddb311e601339992435f075bce9791bb2f72648ff3e435b272335bb1a43", 29867944,
	  0x3844, 0x20, b525_147, N(b525_147), "Debian libnvidia-tesla-cuda1 525.147.05, read by hand" },
	{ "535.274.02", "e9b8b1a1556dd438a5f8868987deb90a945d46ddd6a71ca48bd0a2e2aee34425", 29384912,
	  0x3684, 0x20, b535_274, N(b535_274), "Debian libnvidia-tesla-535-cuda1 535.274.02, read by hand" },
	{ "550.54.15", "685a6623d4d574442e94d748f040b1fd36edf665f1e10f17ed9efc2efa74acf6", 28392536,
	  0x3c5c, 0x20, b550_54, N(b550_54), "Debian libnvidia-tesla-550-cuda1 550.54.15, read by hand" },
	{ "550.163.01", "98b825dd17a2430866fde4ce6211b35b0be5531d29b2ef8f9063cfe067d681ff", 28712096,
	  0x3c5c, 0x20, b550_163, N(b550_163), "Debian libcuda1 550.163.01, read by hand" },
	{ "555.58.02", "86245223685716b4309d780a488b5e29acaa0b46c984df241fd5d34ef9e1f7df", 28094872,
	  0x3dec, 0x20, b555_58, N(b555_58), "Debian libcuda1 555.58.02 (experimental), read by hand" },
};

const struct lc_known *lc_known_by_hash(const char *sha256)
{
	for (size_t i = 0; i < N(known); ++i)
		if (!strcmp(known[i].sha256, sha256))
			return &known[i];
	return NULL;
}
