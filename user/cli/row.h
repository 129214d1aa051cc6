/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_ROW_H
#define CLI_ROW_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/out.h"

/*
 * A record described once, as data, and rendered as text, JSON or a
 * --dump line by one renderer, so that a value added to a record reaches
 * every format or says why not (HACKING.md, "Adding a field").
 *
 * A description is an array of fields over one C struct (usually a view
 * the command fills: its own values and a copy of the library's result).
 * Fields are rendered in array order for text and JSON; a --dump line puts
 * each field at its column (1-based), so columns never move when a field
 * is inserted elsewhere. Text is either a list (one "  label  value" line
 * per labelled field, later unlabelled fields continuing it) or a table
 * row (each field's fmt as it is, the record's end string after the last).
 */
enum row_kind {
	ROW_STR,	/* char array member */
	ROW_STRP,	/* const char * member; NULL is absent */
	ROW_INT,	/* signed integer member of any size */
	ROW_UINT,	/* unsigned integer member of any size */
	ROW_BOOL,	/* bool: JSON true/false, dump 1/0, text yes/no or ttrue/tfalse */
	ROW_MC,		/* int32_t milli-degrees C: text "61.0", JSON and dump the integer */
	ROW_BYTES,	/* uint64_t bytes: text "65536 (64 KiB)", JSON and dump the integer */
	ROW_ENUM,	/* uint32_t named by .name(): a string everywhere */
	ROW_PROSE,	/* text only: .prose() writes words that explain the values */
};

enum row_flags {
	ROW_DASH = 1 << 0,	/* an empty string is "-" in text and dump (JSON keeps "") */
	ROW_HEX = 1 << 1,	/* ROW_UINT: text and dump write 0x%x (JSON keeps the number) */
	ROW_JHEX = 1 << 2,	/* ROW_UINT: JSON writes the string "0x..." (cli/out.h's out_hex) */
};

/* Where a member lives: 0 is "none", so an unset member of a field is none. */
#define ROW_AT(type, member) (offsetof(type, member) + 1)
#define ROW_VAL(type, member) .at = ROW_AT(type, member), .size = sizeof(((type *)0)->member)

struct row_field {
	const char *key;	/* JSON key; NULL: not in JSON */
	const char *label;	/* list text: starts a line "  label  " */
	const char *fmt;	/* text: printf format with one %s for the value; NULL: not in text */
	int col;		/* --dump column, 1-based; 0: not in --dump */
	enum row_kind kind;
	unsigned int flags;	/* enum row_flags */
	size_t at, size;	/* the value: ROW_VAL(type, member) */
	size_t has;		/* ROW_AT of a bool: false means absent (JSON null, "-") */
	size_t color;		/* ROW_AT of an enum out_color for this field's text */
	size_t mark;		/* ROW_AT of a const char * written inside the colour after the value */
	size_t shown;		/* ROW_AT of a bool: false leaves the field out of text */
	const char *ttrue, *tfalse;	/* ROW_BOOL text instead of yes/no */
	const char *(*name)(unsigned int v);	/* ROW_ENUM */
	void (*prose)(const void *rec);	/* ROW_PROSE */
	/* Required when the field is missing from a format: why (tests/unit/cli-row.c checks). */
	const char *why;
};

enum row_style {
	ROW_LIST,	/* text: labelled lines */
	ROW_TABLE,	/* text: one table row */
};

struct row_desc {
	const char *name;	/* for test messages */
	const char *tag;	/* --dump: the line's first cell, naming the record ("store") */
	enum row_style style;
	int label_width;	/* ROW_LIST: the label column's width */
	const struct row_field *f;
	size_t n;
};

enum row_mode {
	ROW_TEXT,
	ROW_JSON,	/* the fields, into the JSON object open now (cli/out.h) */
	ROW_DUMP,	/* one tab-separated line on stdout */
};

/* The mode this run renders in: --json and --dump as parsed. */
enum row_mode row_mode(bool dump);
/*
 * Renders rec as described; end is written after a table row's text
 * ("\n", or "\e[K\n" while redrawing in place).
 */
void row_render(const struct row_desc *d, const void *rec, enum row_mode m, const char *end);
/*
 * Checks a description: every field in every format or a why, dump
 * columns 1..N each once, JSON keys once, kinds with what they need.
 * Returns 0, or -1 with the first problem in err.
 */
int row_check(const struct row_desc *d, char *err, size_t len);

#endif
