/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_JSON_H
#define LIB_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A small streaming JSON writer: the caller opens and closes objects and
 * arrays, the writer inserts commas and escapes strings. A key is given for
 * members of an object and NULL for elements of an array.
 */
#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool pretty;
};

void json_init(struct json *j, FILE *f, bool pretty);
void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);
void json_str(struct json *j, const char *key, const char *val);	/* NULL: null */
void json_int(struct json *j, const char *key, int64_t val);
void json_uint(struct json *j, const char *key, uint64_t val);
void json_double(struct json *j, const char *key, double val, int decimals);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline. */
void json_end(struct json *j);

#endif
