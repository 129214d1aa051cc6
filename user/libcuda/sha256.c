// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * SHA-256 for the manifest and the stale-copy check. The helper links no
 * crypto library, and libcuda is ~100 MB, so the x86 SHA extensions are
 * used when the CPU has them (about 5x the portable code).
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <immintrin.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcuda/sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void blocks_c(uint32_t st[8], const uint8_t *p, size_t n)
{
	for (; n; --n, p += 64) {
		uint32_t w[64], a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5],
			 g = st[6], h = st[7];

		for (int i = 0; i < 16; ++i)
			w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
			       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
		for (int i = 16; i < 64; ++i)
			w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) + w[i - 7] +
			       (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) + w[i - 16];
		for (int i = 0; i < 64; ++i) {
			uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
			uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

			h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
		}
		st[0] += a; st[1] += b; st[2] += c; st[3] += d;
		st[4] += e; st[5] += f; st[6] += g; st[7] += h;
	}
}

__attribute__((target("sha,sse4.1,ssse3"), optimize("O3")))
static void blocks_ni(uint32_t st[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i t = _mm_loadu_si128((const __m128i *)&st[0]);
	__m128i s1 = _mm_loadu_si128((const __m128i *)&st[4]);
	__m128i s0;

	/* The instructions want the state as ABEF and CDGH. */
	t = _mm_shuffle_epi32(t, 0xb1);
	s1 = _mm_shuffle_epi32(s1, 0x1b);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xf0);

	for (; n; --n, p += 64) {
		__m128i save0 = s0, save1 = s1, m[4], msg;

		/* unrolled, so m[] stays in registers */
#pragma GCC unroll 16
		for (int g = 0; g < 16; ++g) {
			if (g < 4) {
				m[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			} else {
				__m128i x = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);

				x = _mm_add_epi32(x, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
				m[g & 3] = _mm_sha256msg2_epu32(x, m[(g + 3) & 3]);
			}
			msg = _mm_add_epi32(m[g & 3], _mm_loadu_si128((const __m128i *)&K[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
			msg = _mm_shuffle_epi32(msg, 0x0e);
			s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	t = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	s0 = _mm_blend_epi16(t, s1, 0xf0);
	s1 = _mm_alignr_epi8(s1, t, 8);
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}

static bool have_sha_ni(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	if (!(b & (1u << 29)))
		return false;
	__get_cpuid(1, &a, &b, &c, &d);
	return (c & (1u << 19)) && (c & (1u << 9));	/* SSE4.1, SSSE3 */
}

void lc_sha256_init(struct lc_sha256 *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->st, iv, sizeof(iv));
	c->n = 0;
	c->total = 0;
	c->ni = have_sha_ni();
}

void lc_sha256_update(struct lc_sha256 *c, const void *data, size_t len)
{
	void (*blocks)(uint32_t *, const uint8_t *, size_t) = c->ni ? blocks_ni : blocks_c;
	const uint8_t *p = data;

	c->total += len;
	if (c->n) {
		size_t k = 64 - c->n < len ? 64 - c->n : len;

		memcpy(c->buf + c->n, p, k);
		c->n += k;
		p += k;
		len -= k;
		if (c->n < 64)
			return;
		blocks(c->st, c->buf, 1);
		c->n = 0;
	}
	blocks(c->st, p, len / 64);
	p += len / 64 * 64;
	c->n = len % 64;
	memcpy(c->buf, p, c->n);
}

void lc_sha256_final(struct lc_sha256 *c, char hex[65])
{
	void (*blocks)(uint32_t *, const uint8_t *, size_t) = c->ni ? blocks_ni : blocks_c;
	uint8_t tail[128] = { 0 };
	uint64_t bits = c->total * 8;
	size_t tl = c->n < 56 ? 64 : 128;

	memcpy(tail, c->buf, c->n);
	tail[c->n] = 0x80;
	for (int i = 0; i < 8; ++i)
		tail[tl - 1 - i] = bits >> (8 * i);
	blocks(c->st, tail, tl / 64);
	for (int i = 0; i < 8; ++i)
		snprintf(hex + 8 * i, 9, "%08x", c->st[i]);
}

void lc_sha256_hex(const void *data, size_t len, char hex[65])
{
	struct lc_sha256 c;

	lc_sha256_init(&c);
	lc_sha256_update(&c, data, len);
	lc_sha256_final(&c, hex);
}

/*
 * A mapped file, a window at a time: each window's pages are dropped once
 * hashed, so a file of any size costs one window of memory, not its size.
 */
void lc_sha256_mapped(const void *map, size_t len, char hex[65])
{
	struct lc_sha256 c;

	lc_sha256_init(&c);
	for (size_t done = 0; done < len;) {
		size_t k = len - done > LC_SHA256_WINDOW ? LC_SHA256_WINDOW : len - done;

		lc_sha256_update(&c, (const uint8_t *)map + done, k);
		madvise((uint8_t *)map + done, k, MADV_DONTNEED);
		done += k;
	}
	lc_sha256_final(&c, hex);
}

int lc_sha256_file(const char *path, char hex[65])
{
	static uint8_t buf[1 << 20];
	struct lc_sha256 c;
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	/* read in a stream: memory stays at one buffer whatever the size */
	lc_sha256_init(&c);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		lc_sha256_update(&c, buf, n);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	lc_sha256_final(&c, hex);
out:
	close(fd);
	return ret;
}
