// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's check registry: the list every layer adds its checks to,
 * and the questions asked of it. Its own file so that the layers
 * (check/doctor_*.c) depend on it and not on the run in check/doctor.c,
 * which calls them: the two used to call each other.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/doctor.h"

static const char *const result_name[] = { "OK", "WARN", "FAIL", "SKIP" };

const char *nvs_check_result_name(enum nvs_check_result r)
{
	return r <= CK_SKIP ? result_name[r] : "?";
}

void nvs_check_add(struct nvs_checks *c, enum nvs_check_result res, const char *layer, const char *name,
		   const char *fmt, ...)
{
	struct nvs_check *k;
	va_list ap;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct nvs_check *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	k = &c->v[c->n++];
	memset(k, 0, sizeof(*k));
	k->res = res;
	snprintf(k->layer, sizeof(k->layer), "%s", layer);
	snprintf(k->name, sizeof(k->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
}

void nvs_check_fix(struct nvs_checks *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->n || c->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(c->v[c->n - 1].fix, sizeof(c->v[c->n - 1].fix), fmt, ap);
	va_end(ap);
}

const char *nvs_doctor_path(const struct nvs_doctor_opts *o, const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", o->root && *o->root ? o->root : "", path);
	return buf;
}

const struct nvs_check *nvs_doctor_first(const struct nvs_checks *c, bool strict)
{
	for (size_t i = 0; i < c->n; ++i)
		if (c->v[i].res == CK_FAIL)
			return &c->v[i];
	for (size_t i = 0; strict && i < c->n; ++i)
		if (c->v[i].res == CK_WARN)
			return &c->v[i];
	return NULL;
}

void nvs_doctor_opts_init(struct nvs_doctor_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->expect_gpus = -1;
}

void nvs_checks_free(struct nvs_checks *c)
{
	free(c->v);
	free(c->gpus);
	memset(c, 0, sizeof(*c));
}
