/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_TEXT_H
#define LIB_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Text that came from outside (log lines, host names, file names, sysfs)
 * is shown only through these: a terminal must never receive an escape
 * sequence from a user's job, and a JSON parser never invalid UTF-8.
 */

/* Length of the valid UTF-8 sequence at p (1..4), 0 when it is not one. */
size_t nvs_utf8_len(const unsigned char *p);

/*
 * Writes s for a human: valid UTF-8 passes, control bytes (C0, DEL, C1)
 * and bytes that are not UTF-8 become \t, \n, \r or \xNN, and a backslash
 * stays a backslash (the escapes are for reading, not for undoing).
 */
void nvs_put_text(FILE *f, const char *s);
/* The same, but newlines and tabs pass: for messages of several lines. */
void nvs_put_lines(FILE *f, const char *s);
/* The same into buf (always terminated; cut at a character boundary). */
char *nvs_escape_text(const char *s, char *buf, size_t len);

/*
 * s as one word for a POSIX shell, for a command a message tells the admin
 * to paste: s itself when it is letters, digits and %+,-./:=@_ only, else
 * in single quotes, each ' written '\'' (an empty s is ''). Into buf,
 * always terminated; returns the length the whole word needs, as snprintf
 * does: at most 4 * strlen(s) + 2.
 */
size_t nvs_shell_word(char *buf, size_t len, const char *s);

#endif
