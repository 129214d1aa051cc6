// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <math.h>

#include "lib/json.h"
#include "lib/text.h"

void json_init(struct json *j, FILE *f, bool pretty)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->pretty = pretty;
}

/*
 * RFC 8259 strings: quotes, backslashes and control characters escaped,
 * DEL and C1 controls too (JSON is read on terminals), and any byte that
 * is not part of valid UTF-8 replaced by U+FFFD so that every parser
 * accepts the document.
 */
static void put_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = nvs_utf8_len(p);

		if (!n) {
			fputs("\\ufffd", f);
			++p;
			continue;
		}
		if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
			fprintf(f, "\\u%04x", p[1]);
		} else if (n > 1) {
			fwrite(p, 1, n, f);
		} else {
			static const char *const esc[] = {
				['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t",
			};

			if (*p < sizeof(esc) / sizeof(esc[0]) && esc[*p])
				fputs(esc[*p], f);
			else if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		p += n;
	}
	fputc('"', f);
}

static void indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; ++i)
		fputs("  ", j->f);
}

/* Separator and key before a value at the current depth. */
static void member(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth > 0)
		indent(j);
	j->first[j->depth] = false;
	if (key) {
		put_escaped(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open(struct json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close(struct json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void json_obj_open(struct json *j, const char *key) { open(j, key, '{'); }
void json_obj_close(struct json *j) { close(j, '}'); }
void json_arr_open(struct json *j, const char *key) { open(j, key, '['); }
void json_arr_close(struct json *j) { close(j, ']'); }

void json_str(struct json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		put_escaped(j->f, val);
	else
		fputs("null", j->f);
}

void json_int(struct json *j, const char *key, int64_t val)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)val);
}

void json_uint(struct json *j, const char *key, uint64_t val)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_double(struct json *j, const char *key, double val, int decimals)
{
	member(j, key);
	/* JSON has no NaN or infinity. */
	if (isnan(val) || isinf(val))
		fputs("null", j->f);
	else
		fprintf(j->f, "%.*f", decimals, val);
}

void json_bool(struct json *j, const char *key, bool val)
{
	member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
