// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdbool.h>
#include <string.h>

#include "lib/text.h"

size_t nvs_utf8_len(const unsigned char *p)
{
	unsigned int c = p[0];
	size_t n, i;
	unsigned int cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;	/* continuation byte, 0xc0/0xc1 (overlong), 0xf5+ */
	}
	for (i = 1; i < n; ++i) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* The longest escape (backslash, u, four hex digits) and its NUL. */
#define NVS_ESC_MAX	8

/*
 * Unicode's bidirectional controls (U+061C, U+200E/F, U+202A..U+202E,
 * U+2066..U+2069): printed raw they reorder what follows them on the
 * terminal, so a log or table line can show text other than what it holds
 * (CVE-2021-42574, "Trojan Source").
 */
static bool bidi_control(const unsigned char *p, size_t n, unsigned int *cp)
{
	if (n == 2 && p[0] == 0xd8 && p[1] == 0x9c) {
		*cp = 0x061c;
		return true;
	}
	if (n != 3 || p[0] != 0xe2)
		return false;
	*cp = 0x2000 | (p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	return *cp == 0x200e || *cp == 0x200f || (*cp >= 0x202a && *cp <= 0x202e) ||
	       (*cp >= 0x2066 && *cp <= 0x2069);
}

/* The escape for the character at p, or NULL to copy its n bytes as they are. */
static const char *escape_at(const unsigned char *p, size_t *n, char tmp[NVS_ESC_MAX], bool lines)
{
	*n = nvs_utf8_len(p);
	if (*n == 0) {
		*n = 1;
	} else if (*n == 1) {
		if (lines && (*p == '\n' || *p == '\t'))
			return NULL;
		if (*p == '\t')
			return "\\t";
		if (*p == '\n')
			return "\\n";
		if (*p == '\r')
			return "\\r";
		if (*p >= 0x20 && *p != 0x7f)
			return NULL;
	} else if (*n == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
		/* U+0080..U+009F: C1 controls, CSI among them */
		*n = 2;
		snprintf(tmp, NVS_ESC_MAX, "\\x%02x", p[1]);
		return tmp;
	} else {
		unsigned int cp;

		if (!bidi_control(p, *n, &cp))
			return NULL;
		snprintf(tmp, NVS_ESC_MAX, "\\u%04x", cp);
		return tmp;
	}
	snprintf(tmp, NVS_ESC_MAX, "\\x%02x", *p);
	return tmp;
}

static void put(FILE *f, const char *s, bool lines)
{
	const unsigned char *p = (const unsigned char *)s;
	char tmp[NVS_ESC_MAX];

	while (*p) {
		size_t n;
		const char *e = escape_at(p, &n, tmp, lines);

		if (e)
			fputs(e, f);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
}

void nvs_put_text(FILE *f, const char *s)
{
	put(f, s, false);
}

void nvs_put_lines(FILE *f, const char *s)
{
	put(f, s, true);
}

char *nvs_escape_text(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	char tmp[NVS_ESC_MAX];

	if (!len)
		return buf;
	while (*p) {
		size_t n;
		const char *e = escape_at(p, &n, tmp, false);
		size_t w = e ? strlen(e) : n;

		if (o + w >= len)
			break;
		memcpy(buf + o, e ? e : (const char *)p, w);
		o += w;
		p += n;
	}
	buf[o] = '\0';
	return buf;
}

/* Appends c to buf (n bytes needed so far, len its size; kept terminated). */
static size_t add_to(char *buf, size_t len, size_t n, const char *c)
{
	for (; *c; ++c, ++n)
		if (n + 1 < len)
			buf[n] = *c;
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return n;
}

size_t nvs_shell_word(char *buf, size_t len, const char *s)
{
	bool plain = *s != '\0';
	size_t n;

	for (const char *c = s; *c; ++c)
		plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			 (*c >= '0' && *c <= '9') || strchr("%+,-./:=@_", *c);
	if (plain)
		return add_to(buf, len, 0, s);
	n = add_to(buf, len, 0, "'");
	for (char c[2] = { 0 }; *s; ++s) {
		c[0] = *s;
		n = add_to(buf, len, n, *s == '\'' ? "'\\''" : c);
	}
	return add_to(buf, len, n, "'");
}
