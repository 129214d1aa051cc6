// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * One renderer for records described as data (cli/row.h). Text and JSON
 * go through cli/out.h, so escaping and colour stay that layer's; a --dump
 * line is written raw, as the dump printers it replaces wrote it (its
 * columns are documented in nvsidecar(8): never reorder them, only append).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/row.h"
#include "lib/format.h"

#define ROW_MAX_COLS 64

static const void *member(const void *rec, size_t at)
{
	return (const char *)rec + at - 1;
}

static bool flag(const void *rec, size_t at, bool dflt)
{
	return at ? *(const bool *)member(rec, at) : dflt;
}

/* Integers of any width: descriptions name members as they are declared. */
static int64_t get_int(const struct row_field *f, const void *rec)
{
	const void *p = member(rec, f->at);

	switch (f->size) {
	case 1: return *(const int8_t *)p;
	case 2: return *(const int16_t *)p;
	case 4: return *(const int32_t *)p;
	default: return *(const int64_t *)p;
	}
}

static uint64_t get_uint(const struct row_field *f, const void *rec)
{
	const void *p = member(rec, f->at);

	switch (f->size) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static const char *get_str(const struct row_field *f, const void *rec)
{
	if (f->kind == ROW_STRP)
		return *(const char *const *)member(rec, f->at);
	return member(rec, f->at);
}

static bool present(const struct row_field *f, const void *rec)
{
	if (!flag(rec, f->has, true))
		return false;
	return f->kind != ROW_STRP || get_str(f, rec);
}

/* "65536 (64 KiB)": the exact count for scripts, the unit for people. */
static void human_bytes(char *buf, size_t len, uint64_t v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	uint64_t h = v;
	unsigned int u = 0;

	while (u < 4 && h >= 1024 && !(h % 1024)) {
		h /= 1024;
		++u;
	}
	snprintf(buf, len, "%" PRIu64 " (%" PRIu64 " %s)", v, h, unit[u]);
}

/*
 * The value as text or a dump cell. Returns NULL for a string, which is
 * then *s (unbounded, so never copied into buf).
 */
static const char *cell(const struct row_field *f, const void *rec, bool text, char *buf, size_t len)
{
	const char *s;

	if (!present(f, rec))
		return "-";
	switch (f->kind) {
	case ROW_STR:
	case ROW_STRP:
		s = get_str(f, rec);
		return (f->flags & ROW_DASH) && !s[0] ? "-" : s;
	case ROW_INT:
		snprintf(buf, len, "%" PRId64, get_int(f, rec));
		break;
	case ROW_UINT:
		snprintf(buf, len, (f->flags & ROW_HEX) ? "0x%" PRIx64 : "%" PRIu64, get_uint(f, rec));
		break;
	case ROW_BOOL:
		if (text)
			return get_uint(f, rec) ? (f->ttrue ? f->ttrue : "yes") : (f->tfalse ? f->tfalse : "no");
		snprintf(buf, len, "%d", get_uint(f, rec) ? 1 : 0);
		break;
	case ROW_MC:
		if (text)
			return nvs_format_mc(buf, len, (int32_t)get_int(f, rec));
		snprintf(buf, len, "%" PRId64, get_int(f, rec));
		break;
	case ROW_BYTES:
		if (text)
			human_bytes(buf, len, get_uint(f, rec));
		else
			snprintf(buf, len, "%" PRIu64, get_uint(f, rec));
		break;
	case ROW_ENUM:
		return f->name((unsigned int)get_uint(f, rec));
	case ROW_PROSE:
		return "";
	}
	return buf;
}

static void json_field(const struct row_field *f, const void *rec)
{
	if (!f->key || f->kind == ROW_PROSE)
		return;
	if (!flag(rec, f->has, true)) {
		out_null(f->key);
		return;
	}
	switch (f->kind) {
	case ROW_STR:
	case ROW_STRP:
		out_str(OUT_JSON, f->key, NULL, get_str(f, rec));
		break;
	case ROW_INT:
	case ROW_MC:
		out_int(OUT_JSON, f->key, NULL, get_int(f, rec));
		break;
	case ROW_UINT:
	case ROW_BYTES:
		if (f->flags & ROW_JHEX)
			out_hex(OUT_JSON, f->key, NULL, get_uint(f, rec));
		else
			out_uint(OUT_JSON, f->key, NULL, get_uint(f, rec));
		break;
	case ROW_BOOL:
		out_bool(OUT_JSON, f->key, NULL, get_uint(f, rec));
		break;
	case ROW_ENUM:
		out_str(OUT_JSON, f->key, NULL, f->name((unsigned int)get_uint(f, rec)));
		break;
	case ROW_PROSE:
		break;
	}
}

static void text_field(const struct row_desc *d, const struct row_field *f, const void *rec, bool *open)
{
	enum out_color c = f->color ? *(const enum out_color *)member(rec, f->color) : OUT_PLAIN;
	char buf[64];

	if (!flag(rec, f->shown, true))
		return;
	if (f->label && d->style == ROW_LIST) {
		if (*open)
			out_text("\n");
		out_text("  %s%s%s%*s", out_cfg(OUT_BOLD), f->label, out_cfg(OUT_PLAIN),
			 d->label_width - (int)strlen(f->label), "");
		*open = true;
	}
	if (f->kind == ROW_PROSE) {
		f->prose(rec);
		return;
	}
	if (!f->fmt)
		return;
	/* plain text gets no escape at all, as the hand-written tables had it */
	if (c != OUT_PLAIN)
		fputs(out_cfg(c), stdout);
	out_str(OUT_TEXT, NULL, f->fmt, cell(f, rec, true, buf, sizeof(buf)));
	if (f->mark)
		out_str(OUT_TEXT, NULL, "%s", *(const char *const *)member(rec, f->mark));
	if (c != OUT_PLAIN)
		fputs(out_cfg(OUT_PLAIN), stdout);
}

static void dump_line(const struct row_desc *d, const void *rec)
{
	char buf[ROW_MAX_COLS][32];
	const char *v[ROW_MAX_COLS] = { 0 };
	int ncol = 0;

	for (size_t i = 0; i < d->n; ++i) {
		const struct row_field *f = &d->f[i];

		if (f->col <= 0 || f->col > ROW_MAX_COLS)
			continue;
		v[f->col - 1] = cell(f, rec, false, buf[f->col - 1], sizeof(buf[0]));
		if (f->col > ncol)
			ncol = f->col;
	}
	if (d->tag)
		printf("%s%s", d->tag, ncol ? "\t" : "");
	for (int c = 0; c < ncol; ++c)
		printf("%s%s", c ? "\t" : "", v[c] ? v[c] : "-");
	putchar('\n');
}

enum row_mode row_mode(bool dump)
{
	return dump ? ROW_DUMP : out_json() ? ROW_JSON : ROW_TEXT;
}

void row_render(const struct row_desc *d, const void *rec, enum row_mode m, const char *end)
{
	bool open = false;

	if (m == ROW_DUMP) {
		dump_line(d, rec);
		return;
	}
	for (size_t i = 0; i < d->n; ++i) {
		if (m == ROW_JSON)
			json_field(&d->f[i], rec);
		else
			text_field(d, &d->f[i], rec, &open);
	}
	if (m != ROW_TEXT)
		return;
	if (d->style == ROW_LIST && open)
		out_text("\n");
	else if (d->style == ROW_TABLE && end)
		out_text("%s", end);
}

static int bad(char *err, size_t len, const struct row_desc *d, const struct row_field *f, const char *what)
{
	snprintf(err, len, "%s: field %s: %s", d->name, f ? f->key ? f->key : f->label ? f->label : "?" : "-", what);
	return -1;
}

int row_check(const struct row_desc *d, char *err, size_t len)
{
	bool seen[ROW_MAX_COLS + 1] = { 0 };
	int ncol = 0;

	for (size_t i = 0; i < d->n; ++i) {
		const struct row_field *f = &d->f[i];
		bool text = f->fmt || f->label || f->kind == ROW_PROSE;

		if (f->kind == ROW_PROSE) {
			if (!f->prose || f->key || f->col)
				return bad(err, len, d, f, "prose is text only and needs .prose");
			continue;
		}
		if (!f->at || !f->size)
			return bad(err, len, d, f, "no value (ROW_VAL)");
		if (f->kind == ROW_ENUM && !f->name)
			return bad(err, len, d, f, "an enum needs .name");
		if ((!f->key || !f->col || !text) && !f->why)
			return bad(err, len, d, f, !f->key ? "missing from JSON without a why" :
				   !f->col ? "missing from --dump without a why" : "missing from text without a why");
		if (f->col < 0 || f->col > ROW_MAX_COLS)
			return bad(err, len, d, f, "dump column out of range");
		if (f->col) {
			if (seen[f->col])
				return bad(err, len, d, f, "dump column used twice");
			seen[f->col] = true;
			if (f->col > ncol)
				ncol = f->col;
		}
		for (size_t k = 0; k < i && f->key; ++k)
			if (d->f[k].key && !strcmp(d->f[k].key, f->key))
				return bad(err, len, d, f, "JSON key used twice");
	}
	for (int c = 1; c <= ncol; ++c)
		if (!seen[c])
			return bad(err, len, d, NULL, "a dump column has no field");
	return 0;
}
