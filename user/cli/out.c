// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/out.h"
#include "lib/env.h"
#include "lib/exit.h"
#include "lib/json.h"
#include "lib/text.h"

const char *PROG_NAME = "nvsidecar";

/* One run prints one result: the state is the process's, as in iproute2. */
static struct {
	bool json;
	bool open;		/* a JSON document is being written */
	bool failed;		/* the error document went out */
	bool pending;		/* a result document awaits its ok and exit */
	bool wrote_doc;		/* some document went to stdout */
	bool has_error;		/* the result document has its own "error" */
	bool werr;		/* a failed write to stdout was reported */
	int werrno;		/* the errno of the error document's failed flush */
	int color;		/* -1 undecided */
	struct json j;
} st = { .color = -1 };

static const char *const colors[] = {
	[OUT_PLAIN] = "\033[0m",
	[OUT_BOLD] = "\033[1m",
	[OUT_DIM] = "\033[2m",
	[OUT_GOOD] = "\033[32m",
	[OUT_WARN] = "\033[33m",
	[OUT_BAD] = "\033[31m",
	[OUT_ALARM] = "\033[1;31m",
	[OUT_PEAK] = "\033[1;33m",
};

void out_set_json(bool json)
{
	st.json = json;
}

bool out_json(void)
{
	return st.json;
}

/*
 * The one colour decision: only on a terminal, never with NO_COLOR set;
 * NVSIDECAR_COLOR=always|never overrides both.
 */
static bool want_color(void)
{
	int m = nvs_env_color();

	if (m >= 0)
		return m;
	return !nvs_env_no_color() && isatty(STDOUT_FILENO);
}

bool out_color_on(void)
{
	if (st.color < 0)
		st.color = want_color();
	return st.color;
}

const char *out_cfg(enum out_color c)
{
	return out_color_on() && !st.json ? colors[c] : "";
}

static void note_err(void);

static bool for_json(enum out_where w)
{
	note_err();
	return st.json && w != OUT_TEXT;
}

static bool for_text(enum out_where w, const char *fmt)
{
	note_err();
	return !st.json && w != OUT_JSON && fmt;
}

/*
 * Keeps the errno of the first failed write to stdout: stdio remembers only
 * that one failed, and a later fflush() of an empty buffer sets no errno,
 * which made a full disk or a closed pipe read "Input/output error".
 */
static void note_err(void)
{
	int e = errno;

	if (ferror(stdout) && !st.werrno)
		st.werrno = e ? e : EIO;
	errno = e;
}

/* The ok and exit of the result document are the layer's: see out_finish(). */
static bool owned_key(const char *key)
{
	return st.json && st.j.depth == 1 && key && (!strcmp(key, "ok") || !strcmp(key, "exit"));
}

/* Writes the final status into the result document and closes it. */
static void close_result(int code, const char *msg)
{
	json_bool(&st.j, "ok", code == 0);
	json_int(&st.j, "exit", code);
	if (msg && !st.has_error)
		json_str(&st.j, "error", msg);
	json_obj_close(&st.j);
	errno = 0;
	json_end(&st.j);
	note_err();
	st.pending = false;
}

void out_begin(bool pretty)
{
	if (!st.json)
		return;
	/* a stream: the record before this one is complete as it is */
	if (st.pending) {
		json_obj_close(&st.j);
		json_end(&st.j);
		note_err();
		st.pending = false;
	}
	st.wrote_doc = true;
	st.has_error = false;
	json_init(&st.j, stdout, pretty);
	json_obj_open(&st.j, NULL);
	st.open = true;
}

/*
 * Flushes stdout; a failed write (a full disk, a closed pipe with SIGPIPE
 * ignored) is said once on stderr, since the result it carried is lost.
 */
static int stdout_ok(void)
{
	int e;

	note_err();
	errno = 0;
	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	/* the first failed write's errno: a later flush has none, or a stale one */
	e = st.werrno ? st.werrno : errno ? errno : EIO;
	if (!st.werrno)
		st.werrno = e;
	if (!st.werr)
		fprintf(stderr, "write error: %s (standard output)\n", strerror(e));
	st.werr = true;
	return -e;
}

/*
 * In JSON mode the top object stays open: only out_finish() knows the
 * process's exit status, which the document carries as ok and exit. What
 * was written so far is flushed, so a failed write is still seen here.
 */
int out_end(void)
{
	if (st.json && st.open)
		st.pending = true;
	st.open = false;
	return stdout_ok();
}

int out_record_end(void)
{
	if (st.json && st.open) {
		json_obj_close(&st.j);
		json_end(&st.j);
	}
	st.open = false;
	return stdout_ok();
}

int out_finish(int code)
{
	/* output that was lost is a failure, whatever the command returned */
	if (stdout_ok() < 0 && code == NVS_EX_OK)
		code = NVS_EX_FAIL;
	if (st.json && st.pending) {
		close_result(code, NULL);
		if (stdout_ok() < 0 && code == NVS_EX_OK)
			code = NVS_EX_FAIL;
	} else if (st.json && !st.wrote_doc && !st.failed && code != NVS_EX_OK) {
		/* a failure said on stderr only: --json still gets its document */
		out_fail(code, "%s failed with exit status %d; its message is on standard error", PROG_NAME, code);
		if (stdout_ok() < 0)
			code = code ? code : NVS_EX_FAIL;
	}
	return code;
}

void out_obj(enum out_where w, const char *key)
{
	if (for_json(w))
		json_obj_open(&st.j, key);
}

void out_obj_end(enum out_where w)
{
	if (for_json(w))
		json_obj_close(&st.j);
}

void out_arr(enum out_where w, const char *key)
{
	if (for_json(w))
		json_arr_open(&st.j, key);
}

void out_arr_end(enum out_where w)
{
	if (for_json(w))
		json_arr_close(&st.j);
}

/* printf(fmt, escaped val), padding and all. */
static void text_str(const char *fmt, const char *val)
{
	char buf[4096];

	printf(fmt, nvs_escape_text(val ? val : "", buf, sizeof(buf)));
}

void out_str(enum out_where w, const char *key, const char *fmt, const char *val)
{
	/* a key is written once: the failure merged into the document may not add it */
	if (st.json && st.j.depth == 1 && key && !strcmp(key, "error"))
		st.has_error = true;
	if (for_json(w))
		json_str(&st.j, key, val);
	else if (for_text(w, fmt))
		text_str(fmt, val);
}

void out_cstr(enum out_where w, enum out_color c, const char *key, const char *fmt, const char *val)
{
	if (for_json(w)) {
		json_str(&st.j, key, val);
	} else if (for_text(w, fmt)) {
		fputs(out_cfg(c), stdout);
		text_str(fmt, val);
		if (c != OUT_PLAIN)
			fputs(out_cfg(OUT_PLAIN), stdout);
	}
}

void out_int(enum out_where w, const char *key, const char *fmt, int64_t val)
{
	if (owned_key(key))
		return;
	if (for_json(w))
		json_int(&st.j, key, val);
	else if (for_text(w, fmt))
		printf(fmt, (long long)val);
}

void out_uint(enum out_where w, const char *key, const char *fmt, uint64_t val)
{
	if (for_json(w))
		json_uint(&st.j, key, val);
	else if (for_text(w, fmt))
		printf(fmt, (unsigned long long)val);
}

void out_hex(enum out_where w, const char *key, const char *fmt, uint64_t val)
{
	char buf[24];

	if (for_json(w)) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)val);
		json_str(&st.j, key, buf);
	} else if (for_text(w, fmt)) {
		printf(fmt, (unsigned long long)val);
	}
}

void out_double(enum out_where w, const char *key, const char *fmt, double val, int decimals)
{
	if (for_json(w))
		json_double(&st.j, key, val, decimals);
	else if (for_text(w, fmt))
		printf(fmt, val);
}

void out_bool(enum out_where w, const char *key, const char *fmt, bool val)
{
	if (owned_key(key))
		return;
	if (for_json(w))
		json_bool(&st.j, key, val);
	else if (for_text(w, fmt))
		printf(fmt, val ? "yes" : "no");
}

void out_null(const char *key)
{
	if (st.json)
		json_null(&st.j, key);
}

void out_text(const char *fmt, ...)
{
	va_list ap;

	if (st.json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

void out_safe(const char *s)
{
	if (!st.json)
		nvs_put_text(stdout, s);
}

static void error_doc(int code, const char *msg)
{
	struct json j;

	/* never inside a document, and once: a stream ends with it */
	if (!st.json || st.open || st.failed)
		return;
	st.failed = true;
	/* a result document written already carries the failure itself */
	if (st.pending) {
		close_result(code, msg);
		return;
	}
	st.wrote_doc = true;
	json_init(&j, stdout, false);
	json_obj_open(&j, NULL);
	json_bool(&j, "ok", false);
	json_int(&j, "exit", code);
	json_str(&j, "error", msg);
	json_obj_close(&j);
	errno = 0;
	json_end(&j);
	note_err();
}

static void vfail(int code, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fflush(stdout);
	nvs_put_lines(stderr, msg);
	fputc('\n', stderr);
	error_doc(code, msg);
}

int out_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(code, fmt, ap);
	va_end(ap);
	return code;
}

int out_usage(const char *sub, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(NVS_EX_USAGE, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try `%s%s%s --help'.\n", PROG_NAME, sub ? " " : "", sub ? sub : "");
	return NVS_EX_USAGE;
}

void out_note(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nvs_put_lines(stderr, msg);
	fputc('\n', stderr);
}
