/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The output layer: a subcommand describes its result once, and the same
 * calls render it as text or as JSON (iproute2's print_* pattern). Each
 * value names its JSON key and its text format; OUT_JSON and OUT_TEXT
 * limit an item to one rendering (a table header exists only as text, a
 * raw count only in JSON).
 *
 * Everything a value holds is escaped for where it goes: control bytes and
 * broken UTF-8 never reach a terminal raw, and JSON is always valid UTF-8.
 * Format strings are the program's own; put outside text in values.
 *
 * Failures go through out_fail(): the message on stderr, and with --json
 * also one document on stdout, {"ok":false,"exit":N,"error":"..."}, so a
 * script always gets JSON from --json.
 */
enum out_where {
	OUT_ANY,	/* both renderings */
	OUT_JSON,	/* only in JSON */
	OUT_TEXT,	/* only as text */
};

enum out_color {
	OUT_PLAIN,
	OUT_BOLD,
	OUT_DIM,
	OUT_GOOD,	/* green */
	OUT_WARN,	/* yellow */
	OUT_BAD,	/* red */
	OUT_ALARM,	/* bold red */
	OUT_PEAK,	/* bold yellow: a value at its peak */
};

/*
 * Chooses JSON or text for this run. Called by the dispatcher with what
 * argv asks (--json anywhere), so even an argument error comes out as
 * JSON; a subcommand may call it again once its arguments are parsed.
 */
void out_set_json(bool json);
bool out_json(void);
/* Colour for text on stdout: a terminal, no NO_COLOR; NVSIDECAR_COLOR=always|never wins. */
bool out_color_on(void);
/* The escape sequence for c ("" without colour); out_cfg(OUT_PLAIN) resets. */
const char *out_cfg(enum out_color c);

/*
 * The result document: out_begin() opens the top JSON object (pretty:
 * indented), out_end() ends its content and flushes. The object is closed
 * by out_finish(), which adds "ok" and "exit" equal to the process's exit
 * status, so no command can forget them or disagree with its exit code
 * (top-level "ok"/"exit" a command writes itself are dropped). Returns 0,
 * or -errno when stdout could not be written (a full disk, a closed pipe).
 */
void out_begin(bool pretty);
int out_end(void);
/*
 * One record of a stream (`events --json'): closed and flushed at once,
 * without ok and exit; a failure ends the stream with the error document.
 */
int out_record_end(void);
/*
 * main()'s last word: closes the result document with code, flushes
 * stdout and reports a failed write there on stderr (once; out_end()
 * reports too). Returns code, or NVS_EX_FAIL when the command succeeded
 * but its output was lost. With --json, a failure that wrote no document
 * still gets the error document.
 */
int out_finish(int code);

void out_obj(enum out_where w, const char *key);
void out_obj_end(enum out_where w);
void out_arr(enum out_where w, const char *key);
void out_arr_end(enum out_where w);

/* fmt is printf-style with one conversion for the value (NULL: no text). */
void out_str(enum out_where w, const char *key, const char *fmt, const char *val);	/* NULL: null */
void out_cstr(enum out_where w, enum out_color c, const char *key, const char *fmt, const char *val);
void out_int(enum out_where w, const char *key, const char *fmt, int64_t val);
void out_uint(enum out_where w, const char *key, const char *fmt, uint64_t val);
/* JSON: the string "0x..." (JSON numbers lose precision above 2^53). */
void out_hex(enum out_where w, const char *key, const char *fmt, uint64_t val);
/* JSON: decimals places; NaN and infinities are null. */
void out_double(enum out_where w, const char *key, const char *fmt, double val, int decimals);
void out_bool(enum out_where w, const char *key, const char *fmt, bool val);	/* text: "yes"/"no" */
void out_null(const char *key);	/* JSON only */
/* Text only, a format of the program's own; %s arguments are not escaped. */
void out_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text only: s escaped for the terminal. */
void out_safe(const char *s);

/*
 * Reports a failure and returns code: the message (escaped) on stderr and,
 * in JSON mode, the error document on stdout (once per run, never inside
 * another document; a stream of documents, as `events --json' writes,
 * ends with it).
 */
int out_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * An argument error: the message, then one line pointing at --help, and
 * the error document in JSON mode. Returns NVS_EX_USAGE.
 */
int out_usage(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message on stderr only (progress, hints), escaped. */
void out_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program name for messages ("nvsidecar", or argv[0]). */
extern const char *PROG_NAME;

#endif
