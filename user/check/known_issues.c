// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The known-issues table's reader and its predicate language (see
 * known_issues.h; the grammar is in the table's header comment). A
 * condition is checked when the table is read, so a typo is an admin
 * error with its file and line, not a row that silently never matches;
 * the same recursive-descent walk evaluates it later against the node.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/known_issues.h"
#include "lib/io.h"

const char *const nvs_ki_components[] = {
	"kernel", "driver", "libcuda", "nccl", "ucx", "libfabric", "rdma-core", NULL,
};

const char *const nvs_ki_gpu_families[] = { "gb20x", "nvidia", NULL };

static const char *const atom_kinds[] = { "module", "path", "reg", "flavour", "have", "gpus", NULL };

/* parentheses nest at most this deep: the walk is recursive */
#define MAX_DEPTH 32

static bool in_list(const char *const *list, const char *s, size_t n)
{
	for (; *list; ++list)
		if (strlen(*list) == n && !strncmp(*list, s, n))
			return true;
	return false;
}

/* A table version: numbers joined by single dots. */
static bool is_version(const char *p, size_t n)
{
	bool digit = false;

	for (size_t i = 0; i < n; ++i) {
		/* a dot only after a digit */
		if (p[i] == '.' && !digit)
			return false;
		if (p[i] != '.' && (p[i] < '0' || p[i] > '9'))
			return false;
		digit = p[i] != '.';
	}
	return digit;
}

/* One number of a version as read from the node: digits, stopping at anything else. */
static unsigned long long ver_part(const char **pp, bool *more)
{
	const char *p = *pp;
	unsigned long long v = 0;

	while (*p >= '0' && *p <= '9') {
		if (v < 1000000000000ULL)
			v = v * 10 + (unsigned long long)(*p - '0');
		++p;
	}
	*more = *p == '.' && p[1] >= '0' && p[1] <= '9';
	*pp = *more ? p + 1 : p;
	return v;
}

int nvs_ki_vercmp(const char *a, const char *b)
{
	bool ma = *a >= '0' && *a <= '9', mb = *b >= '0' && *b <= '9';

	/* missing parts are 0: 6.4 == 6.4.0 */
	while (ma || mb) {
		unsigned long long x = ma ? ver_part(&a, &ma) : 0, y = mb ? ver_part(&b, &mb) : 0;

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

enum op { OP_GE, OP_LE, OP_GT, OP_LT, OP_EQ, OP_NE, OP_NONE };

/* The comparison at p (its length in *n), or OP_NONE. */
static enum op read_op(const char *p, size_t *n)
{
	static const struct {
		const char *s;
		enum op op;
	} ops[] = { { ">=", OP_GE }, { "<=", OP_LE }, { "!=", OP_NE }, { ">", OP_GT }, { "<", OP_LT }, { "=", OP_EQ } };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
		*n = strlen(ops[i].s);
		if (!strncmp(p, ops[i].s, *n))
			return ops[i].op;
	}
	*n = 0;
	return OP_NONE;
}

static bool compare(const char *have, enum op op, const char *want)
{
	int c = nvs_ki_vercmp(have, want);

	switch (op) {
	case OP_GE:
		return c >= 0;
	case OP_LE:
		return c <= 0;
	case OP_GT:
		return c > 0;
	case OP_LT:
		return c < 0;
	case OP_EQ:
		return c == 0;
	case OP_NE:
		return c != 0;
	default:
		return false;
	}
}

/* ---- the condition: expr = term ('|' term)*, term = factor ('&' factor)* ---- */

struct walk {
	const char *p;
	const struct nvs_ki_facts *f;	/* NULL: only check the syntax */
	char *err;
	size_t errlen;
	int depth;
};

static void fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(w->err, w->errlen, fmt, ap);
	va_end(ap);
}

static void skip_space(struct walk *w)
{
	w->p += strspn(w->p, " ");
}

/* a word of an atom: anything up to a space, an operator or a parenthesis */
static size_t word(const char *p)
{
	return strcspn(p, " &|!()");
}

static bool expr(struct walk *w);

/* gpus:FAMILY OP COUNT (gpus:gb20x>=2): the node's count of that family's GPUs */
static bool gpus_atom(struct walk *w, const char *arg)
{
	size_t fn = strcspn(arg, "<>="), on, cn;
	enum op op = read_op(arg + fn, &on);
	const char *cnt = arg + fn + on;
	char fam[16], have[24];
	long n;

	if (!in_list(nvs_ki_gpu_families, arg, fn) || fn >= sizeof(fam)) {
		fail(w, "gpus:%.*s names no GPU family; known: gb20x, nvidia", (int)(fn > 40 ? 40 : fn), arg);
		return false;
	}
	cn = strlen(cnt);
	if (op == OP_NONE || !cn || cn > 3 || strspn(cnt, "0123456789") != cn) {
		fail(w, "gpus:%s needs >=, <=, >, < or = and a count, e.g. gpus:gb20x>=2", arg);
		return false;
	}
	if (!w->f || !w->f->gpus)
		return false;
	memcpy(fam, arg, fn);
	fam[fn] = 0;
	n = w->f->gpus(w->f->ctx, fam);
	if (n < 0)
		return false;
	snprintf(have, sizeof(have), "%ld", n);
	return compare(have, op, cnt);
}

/* NAME:ARG or NAME OP VERSION */
static bool atom(struct walk *w)
{
	const char *name = w->p;
	size_t n = strcspn(name, " &|!()<>=:"), on, vn;
	char nbuf[32], arg[256];
	enum op op;

	if (!n) {
		fail(w, "expected a fact at `%.20s'", name);
		return false;
	}
	if (n >= sizeof(nbuf)) {
		fail(w, "unknown fact `%.*s'", (int)(n > 40 ? 40 : n), name);
		return false;
	}
	memcpy(nbuf, name, n);
	nbuf[n] = 0;
	w->p += n;
	if (*w->p == ':') {
		size_t an;

		++w->p;
		an = word(w->p);
		if (!in_list(atom_kinds, nbuf, n)) {
			fail(w, "unknown fact `%s:'; known: module:, path:, reg:, flavour:, have:, gpus:", nbuf);
			return false;
		}
		if (!an || an >= sizeof(arg)) {
			fail(w, "`%s:' needs a value (up to %zu characters)", nbuf, sizeof(arg) - 1);
			return false;
		}
		memcpy(arg, w->p, an);
		arg[an] = 0;
		w->p += an;
		if (!strcmp(nbuf, "path") && arg[0] != '/') {
			fail(w, "path:%s is not absolute", arg);
			return false;
		}
		if (!strcmp(nbuf, "reg") && (!strchr(arg, '=') || arg[0] == '=')) {
			fail(w, "reg:%s is not KEY=VALUE", arg);
			return false;
		}
		if (!strcmp(nbuf, "flavour") && strcmp(arg, "open") && strcmp(arg, "proprietary")) {
			fail(w, "flavour:%s is neither open nor proprietary", arg);
			return false;
		}
		if (!strcmp(nbuf, "have") && !in_list(nvs_ki_components, arg, an)) {
			fail(w, "have:%s names no component the doctor reads", arg);
			return false;
		}
		if (!strcmp(nbuf, "gpus"))
			return gpus_atom(w, arg);
		return w->f ? w->f->atom(w->f->ctx, nbuf, arg) : false;
	}
	if (!in_list(nvs_ki_components, nbuf, n)) {
		fail(w, "unknown fact `%s'; versions known: kernel, driver, libcuda, nccl, ucx, libfabric, rdma-core",
		     nbuf);
		return false;
	}
	op = read_op(w->p, &on);
	if (op == OP_NONE) {
		fail(w, "`%s' needs a comparison (>=, <=, >, <, =, !=) and a version", nbuf);
		return false;
	}
	w->p += on;
	vn = word(w->p);
	if (!is_version(w->p, vn) || vn >= sizeof(arg)) {
		fail(w, "`%s%.*s' is not a version (numbers and dots)", nbuf, (int)(vn > 40 ? 40 : vn), w->p);
		return false;
	}
	memcpy(arg, w->p, vn);
	arg[vn] = 0;
	w->p += vn;
	if (w->f) {
		const char *have = w->f->version(w->f->ctx, nbuf);

		return have && compare(have, op, arg);
	}
	return false;
}

static bool factor(struct walk *w)
{
	bool v;

	skip_space(w);
	if (*w->p == '!') {
		++w->p;
		return !factor(w);
	}
	if (*w->p != '(')
		return atom(w);
	if (++w->depth > MAX_DEPTH) {
		fail(w, "parentheses nested deeper than %d", MAX_DEPTH);
		return false;
	}
	++w->p;
	v = expr(w);
	skip_space(w);
	if (*w->p != ')')
		fail(w, "missing `)'");
	else
		++w->p;
	--w->depth;
	return v;
}

static bool term(struct walk *w)
{
	bool v = factor(w);

	for (skip_space(w); *w->p == '&' && !w->err[0]; skip_space(w)) {
		bool r;

		++w->p;
		/* evaluated either way: every part of the condition is checked */
		r = factor(w);
		v = v && r;
	}
	return v;
}

static bool expr(struct walk *w)
{
	bool v = term(w);

	for (skip_space(w); *w->p == '|' && !w->err[0]; skip_space(w)) {
		bool r;

		++w->p;
		r = term(w);
		v = v || r;
	}
	return v;
}

/* Walks cond; "" err and the value, or the first error in err. */
static bool walk_cond(const char *cond, const struct nvs_ki_facts *f, char *err, size_t errlen)
{
	struct walk w = { .p = cond, .f = f, .err = err, .errlen = errlen };
	bool v;

	err[0] = 0;
	if (!strcmp(cond, "-"))
		return true;
	v = expr(&w);
	skip_space(&w);
	if (!err[0] && *w.p)
		fail(&w, "unexpected `%.20s'", w.p);
	return !err[0] && v;
}

/* ---- the versions column: "*" or OP VERSION[,OP VERSION]... ---- */

static bool walk_versions(const char *spec, const char *have, char *err, size_t errlen)
{
	const char *p = spec;
	bool v = true;

	err[0] = 0;
	if (!strcmp(spec, "*"))
		return true;
	while (*p) {
		size_t on, vn = strcspn(p, ",");
		enum op op = read_op(p, &on);
		char want[64];

		if (op == OP_NONE || vn <= on || !is_version(p + on, vn - on) || vn - on >= sizeof(want)) {
			snprintf(err, errlen, "versions `%.40s': each part is a comparison and a version, e.g. >=1.21.0,<1.21.2",
				 spec);
			return false;
		}
		memcpy(want, p + on, vn - on);
		want[vn - on] = 0;
		v = v && have && compare(have, op, want);
		p += vn;
		if (*p == ',' && !*++p) {
			snprintf(err, errlen, "versions `%.40s' ends with a comma", spec);
			return false;
		}
	}
	return v;
}

bool nvs_ki_match(const struct nvs_ki_row *r, const struct nvs_ki_facts *f)
{
	char err[256];

	if (strcmp(r->component, "-")) {
		const char *have = f->version(f->ctx, r->component);

		if (!have || !walk_versions(r->versions, have, err, sizeof(err)))
			return false;
	}
	return walk_cond(r->cond, f, err, sizeof(err));
}

/* ---- the file ---- */

static void add_err(struct nvs_ki_table *t, const char *path, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_err(struct nvs_ki_table *t, const char *path, unsigned int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (t->nerr++ >= NVS_KI_MAX_ERRS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(t->errs[t->nerr - 1], sizeof(t->errs[0]), "%.200s:%u: %s", path, line, msg);
}

/* Copies a field, false when it does not fit. */
static bool field(char *dst, size_t len, const char *src)
{
	return snprintf(dst, len, "%s", src) < (int)len;
}

static bool valid_id(const char *s)
{
	if (!*s)
		return false;
	for (; *s; ++s)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

/* Parses one line into r; "" err, or why it is not a row. */
static void parse_row(const struct nvs_ki_table *t, char *line, struct nvs_ki_row *r, char *err, size_t errlen)
{
	static const char *const names[] = { "id", "component", "versions", "condition",
					     "severity", "consequence", "fix", "source" };
	char *col[8], *p = line, sev[8];
	size_t n = 1, len[8];

	err[0] = 0;
	for (const char *q = line; *q; ++q)
		n += *q == '\t';
	if (n != 8) {
		snprintf(err, errlen, "%zu tab-separated columns, expected 8 (%s)", n,
			 "id, component, versions, condition, severity, consequence, fix, source");
		return;
	}
	for (size_t i = 0; i < 8; ++i) {
		col[i] = p;
		p += strcspn(p, "\t");
		len[i] = (size_t)(p - col[i]);
		if (*p)
			*p++ = 0;
	}
	for (size_t i = 0; i < 8; ++i)
		if (!len[i] || col[i][0] == ' ' || col[i][len[i] - 1] == ' ') {
			snprintf(err, errlen, "column %zu (%s) is empty or starts or ends with a space", i + 1,
				 names[i]);
			return;
		}
	if (!field(r->id, sizeof(r->id), col[0]) || !valid_id(r->id)) {
		snprintf(err, errlen, "id `%.40s': lower-case letters, digits and dashes, up to %zu", col[0],
			 sizeof(r->id) - 1);
		return;
	}
	for (size_t i = 0; i < t->n; ++i)
		if (!strcmp(t->v[i].id, r->id)) {
			snprintf(err, errlen, "id `%s' is already used on line %u", r->id, t->v[i].line);
			return;
		}
	if (strcmp(col[1], "-") && !in_list(nvs_ki_components, col[1], len[1])) {
		snprintf(err, errlen, "component `%.40s' is not one the doctor reads (%s)", col[1],
			 "kernel, driver, libcuda, nccl, ucx, libfabric, rdma-core, or -");
		return;
	}
	field(r->component, sizeof(r->component), col[1]);
	if (!field(r->versions, sizeof(r->versions), col[2])) {
		snprintf(err, errlen, "versions longer than %zu characters", sizeof(r->versions) - 1);
		return;
	}
	if (!strcmp(r->component, "-") && strcmp(r->versions, "*")) {
		snprintf(err, errlen, "versions must be * when the component is -");
		return;
	}
	walk_versions(r->versions, NULL, err, errlen);
	if (err[0])
		return;
	if (!field(r->cond, sizeof(r->cond), col[3])) {
		snprintf(err, errlen, "condition longer than %zu characters", sizeof(r->cond) - 1);
		return;
	}
	{
		char why[256];

		walk_cond(r->cond, NULL, why, sizeof(why));
		if (why[0]) {
			snprintf(err, errlen, "condition: %s", why);
			return;
		}
	}
	if (!field(sev, sizeof(sev), col[4]) || (strcmp(sev, "WARN") && strcmp(sev, "FAIL"))) {
		snprintf(err, errlen, "severity `%.20s' is neither WARN nor FAIL", col[4]);
		return;
	}
	r->fail = !strcmp(sev, "FAIL");
	if (!field(r->consequence, sizeof(r->consequence), col[5]) || !field(r->fix, sizeof(r->fix), col[6]) ||
	    !field(r->source, sizeof(r->source), col[7])) {
		snprintf(err, errlen, "consequence or fix longer than %zu, or source longer than %zu characters",
			 sizeof(r->fix) - 1, sizeof(r->source) - 1);
		return;
	}
	/* one or more addresses, separated by single spaces */
	for (const char *p = r->source; *p; p += strcspn(p, " "), p += *p == ' ')
		if (strncmp(p, "https://", 8) || strcspn(p, " ") <= 8) {
			snprintf(err, errlen, "source `%.60s' is not https:// addresses separated by spaces", r->source);
			return;
		}
}

/* Text an admin can read: printable ASCII or UTF-8 bytes, and tabs. */
static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			return false;
		else if (s[i] == 0x7f)
			return false;
	return true;
}

/* Why path is not a table, by what stat() says it is (lib/io's one rule); 0 for a regular file. */
static int not_regular(const struct stat *st, const char *path, char *why, size_t len)
{
	return nvs_input_type(path, st->st_mode, false,
			      "the known-issues table is a regular file (NVSIDECAR_DATADIR names its directory)", why, len);
}

int nvs_ki_load(struct nvs_ki_table *t, const char *path)
{
	char *line, err[400];
	unsigned int no = 0;
	struct nvs_ifile in;
	struct stat st;
	size_t n;
	bool cut;
	int ret;

	memset(t, 0, sizeof(*t));
	/*
	 * stat() first: a FIFO or a device is named, never opened (opening
	 * one may wait, or do something); fstat() again on what was opened,
	 * in case the name changed in between.
	 */
	if (stat(path, &st) < 0) {
		ret = -errno;
		snprintf(t->why, sizeof(t->why), "%s", strerror(-ret));
		return ret;
	}
	ret = not_regular(&st, path, t->why, sizeof(t->why));
	if (ret)
		return ret;
	/* lines up to the whole cap: an over-long row is that row's error, not the table's */
	ret = nvs_ifile_open(&in, path, NVS_KI_MAX_BYTES, NVS_KI_MAX_BYTES, t->why, sizeof(t->why));
	if (ret)
		return ret;
	if (fstat(in.fd, &st) < 0) {
		ret = -errno;
		snprintf(t->why, sizeof(t->why), "%s", strerror(-ret));
	} else {
		ret = not_regular(&st, path, t->why, sizeof(t->why));
	}
	while (!ret && (ret = nvs_ifile_line(&in, &line, &n, &cut, t->why, sizeof(t->why))) > 0) {
		struct nvs_ki_row r;

		ret = 0;
		++no;
		/* a UTF-8 byte order mark, which some editors write first (doctor.conf skips it too) */
		if (no == 1 && n >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) {
			line += 3;
			n -= 3;
		}
		if (n && line[n - 1] == '\r')
			line[--n] = 0;
		if (!n || line[0] == '#')
			continue;
		if (strlen(line) != n || !printable(line, n)) {
			add_err(t, path, no, "a NUL or control character");
			continue;
		}
		if (n > 4096) {
			add_err(t, path, no, "longer than 4096 characters");
			continue;
		}
		if (t->n >= NVS_KI_MAX_ROWS) {
			add_err(t, path, no, "more than %d rows; the rest are not read", NVS_KI_MAX_ROWS);
			break;
		}
		memset(&r, 0, sizeof(r));
		r.line = no;
		parse_row(t, line, &r, err, sizeof(err));
		if (err[0]) {
			add_err(t, path, no, "%s", err);
			continue;
		}
		if (!(t->n & (t->n + 1)) || !t->v) {
			struct nvs_ki_row *v = realloc(t->v, (t->n * 2 + 2) * sizeof(*v));

			if (!v) {
				ret = -ENOMEM;
				snprintf(t->why, sizeof(t->why), "%s", strerror(ENOMEM));
				break;
			}
			t->v = v;
		}
		t->v[t->n++] = r;
	}
	nvs_ifile_close(&in);
	if (ret < 0) {
		char why[sizeof(t->why)];

		memcpy(why, t->why, sizeof(why));
		nvs_ki_free(t);
		memcpy(t->why, why, sizeof(why));
		return ret;
	}
	return 0;
}

void nvs_ki_free(struct nvs_ki_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
