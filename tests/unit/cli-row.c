// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Unit tests of the record renderer (cli/row.h): one description rendered
 * as text, JSON and a --dump line, each compared byte for byte; every
 * description the commands use passes row_check(), and row_check() refuses
 * a field that one format lacks without saying why. Prints one line per
 * failed check and exits 1 if there was any.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/out.h"
#include "cli/row.h"
#include "cli/row_dmabuf.h"
#include "cli/row_thermal.h"
#include "lib/exit.h"

static int failures, checks;

#define CHECK(cond, ...) do {						\
	++checks;							\
	if (!(cond)) {							\
		++failures;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

/* Everything a description can hold, in one record. */
struct rec {
	char name[16];
	const char *note;	/* NULL: absent */
	int32_t delta;
	uint64_t addr;
	uint8_t small;
	bool on;
	int32_t mc;
	bool has_mc;
	uint64_t bytes;
	uint32_t kind;
	enum out_color color;
	const char *mark;
	bool shown;
};

static const char *kind_name(unsigned int v)
{
	return v == 1 ? "one" : "other";
}

static void say_more(const void *rec)
{
	out_text("(%d)", ((const struct rec *)rec)->delta * 2);
}

#define R struct rec

static const struct row_field list_fields[] = {
	{ .key = "name", .label = "name", .fmt = "%s", .col = 1, .kind = ROW_STR, .flags = ROW_DASH,
	  ROW_VAL(R, name) },
	{ .key = "note", .fmt = " [%s]", .col = 9, .kind = ROW_STRP, ROW_VAL(R, note) },
	{ .key = "delta", .label = "delta", .fmt = "%s ", .col = 2, .kind = ROW_INT, ROW_VAL(R, delta) },
	{ .kind = ROW_PROSE, .prose = say_more },
	{ .key = "addr", .label = "addr", .fmt = "%s", .col = 3, .kind = ROW_UINT, .flags = ROW_HEX,
	  ROW_VAL(R, addr) },
	{ .key = "small", .label = "small", .fmt = "%s", .col = 4, .kind = ROW_UINT, ROW_VAL(R, small),
	  .shown = ROW_AT(R, shown) },
	{ .key = "on", .label = "on", .fmt = "%s", .col = 5, .kind = ROW_BOOL, ROW_VAL(R, on) },
	{ .key = "mc", .label = "temp", .fmt = "%s", .col = 6, .kind = ROW_MC, ROW_VAL(R, mc),
	  .has = ROW_AT(R, has_mc), .color = ROW_AT(R, color), .mark = ROW_AT(R, mark) },
	{ .key = "bytes", .label = "size", .fmt = "%s", .col = 7, .kind = ROW_BYTES, ROW_VAL(R, bytes) },
	{ .key = "kind", .label = "kind", .fmt = "%s", .col = 8, .kind = ROW_ENUM, ROW_VAL(R, kind),
	  .name = kind_name },
};

static const struct row_desc list_desc = {
	.name = "test list", .style = ROW_LIST, .label_width = 8,
	.f = list_fields, .n = sizeof(list_fields) / sizeof(list_fields[0]),
};

static const struct rec fixture = {
	.name = "ab\tc", .note = NULL, .delta = -7, .addr = 0xf8000000ULL, .small = 200, .on = true,
	.mc = -5250, .has_mc = true, .bytes = 3ULL << 20, .kind = 1, .color = OUT_PLAIN, .mark = "*",
	.shown = true,
};

static char got[8192];

/* Renders into got: stdout goes to a temporary file for the while. */
static void render(const struct row_desc *d, const void *rec, enum row_mode m, bool json)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	size_t n;

	got[0] = 0;
	if (!tmp || saved < 0) {
		CHECK(0, "no temporary file");
		return;
	}
	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	out_set_json(json);
	out_begin(true);
	row_render(d, rec, m, "|\n");
	out_finish(out_end() ? NVS_EX_FAIL : NVS_EX_OK);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	out_set_json(false);
	rewind(tmp);
	n = fread(got, 1, sizeof(got) - 1, tmp);
	got[n] = 0;
	fclose(tmp);
}

/*
 * Colour wraps the value and its mark, nothing else. In a child, before
 * anything else is rendered: cli/out.c decides on colour once a process.
 */
static void colour(void)
{
	struct rec r;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		setenv("NVSIDECAR_COLOR", "always", 1);
		r = fixture;
		r.color = OUT_ALARM;
		render(&list_desc, &r, ROW_TEXT, false);
		CHECK(strstr(got, "  \033[1mtemp\033[0m    \033[1;31m-5.25*\033[0m\n") != NULL, "colour:\n%s", got);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the colour check failed");
}

static void formats(void)
{
	struct rec r = fixture;

	render(&list_desc, &r, ROW_TEXT, false);
	CHECK(!strcmp(got, "  name    ab\\tc [-]\n"
			   "  delta   -7 (-14)\n"
			   "  addr    0xf8000000\n"
			   "  small   200\n"
			   "  on      yes\n"
			   "  temp    -5.25*\n"
			   "  size    3145728 (3 MiB)\n"
			   "  kind    one\n"), "text:\n%s", got);

	render(&list_desc, &r, ROW_JSON, true);
	CHECK(!strcmp(got, "{\n"
			   "  \"name\": \"ab\\tc\",\n"
			   "  \"note\": null,\n"
			   "  \"delta\": -7,\n"
			   "  \"addr\": 4160749568,\n"
			   "  \"small\": 200,\n"
			   "  \"on\": true,\n"
			   "  \"mc\": -5250,\n"
			   "  \"bytes\": 3145728,\n"
			   "  \"kind\": \"one\",\n"
			   "  \"ok\": true,\n"
			   "  \"exit\": 0\n"
			   "}\n"), "JSON:\n%s", got);

	render(&list_desc, &r, ROW_DUMP, false);
	CHECK(!strcmp(got, "ab\tc\t-7\t0xf8000000\t200\t1\t-5250\t3145728\tone\t-\n"), "dump: %s", got);

	/* absent values: null in JSON, `-' in text and dump; a hidden line */
	r.name[0] = 0;
	r.note = "n";
	r.has_mc = false;
	r.shown = false;
	r.on = false;
	render(&list_desc, &r, ROW_TEXT, false);
	CHECK(!strcmp(got, "  name    - [n]\n"
			   "  delta   -7 (-14)\n"
			   "  addr    0xf8000000\n"
			   "  on      no\n"
			   "  temp    -*\n"
			   "  size    3145728 (3 MiB)\n"
			   "  kind    one\n"), "text, absent values:\n%s", got);
	render(&list_desc, &r, ROW_DUMP, false);
	CHECK(!strcmp(got, "-\t-7\t0xf8000000\t200\t0\t-\t3145728\tone\tn\n"), "dump, absent values: %s", got);
	render(&list_desc, &r, ROW_JSON, true);
	CHECK(strstr(got, "\"name\": \"\",\n") && strstr(got, "\"mc\": null,\n") && strstr(got, "\"small\": 200,\n"),
	      "JSON, absent values:\n%s", got);
}

/* The values rendered by a thermal row and a dmabuf report. */
static void commands(void)
{
	struct thermal_row t = { .gpu = 1, .busid = "0000:04:00.0", .gname = "gpu1", .mark = " " };
	struct dmabuf_row d = { .code = NVS_EX_OK, .source = "udmabuf", .gpu = -1 };

	snprintf(t.s.label, sizeof(t.s.label), "hotspot");
	t.s.id = 2;
	t.s.valid = t.s.has_max = true;
	t.s.mc = 61001;
	t.s.max = 95000;
	render(&thermal_sensor_row, &t, ROW_TEXT, false);
	CHECK(!strcmp(got, "gpu1   hotspot      61.001          -         -      95.0|\n"), "thermal text: %s", got);
	render(&thermal_sensor_row, &t, ROW_DUMP, false);
	CHECK(!strcmp(got, "1\t0000:04:00.0\t2\thotspot\t1\t61001\t-\t-\t95000\t0\n"), "thermal dump: %s", got);

	d.r.step = NVS_DMABUF_STEP_DONE;
	d.r.size = 65536;
	d.r.verdict = NVS_DMABUF_VERDICT_SYSTEM_RAM;
	d.r.p2p = NVS_P2P_NOT_APPLICABLE;
	dmabuf_row_finish(&d);
	render(&dmabuf_probe_row, &d, ROW_DUMP, false);
	CHECK(!strcmp(got, "udmabuf\t-\t-\t65536\t0\t0\t0\t0\tsystem-ram\t0x0\t0\tnot-applicable\t0\tdone\t0\n"),
	      "dmabuf dump: %s", got);
}

/*
 * Every key in the JSON, every column in the dump line, every text field
 * in the text: a description's promise, kept by the renderer.
 */
static void every_format(const struct row_desc *d, const void *rec)
{
	int cols = 0, tabs = 0;

	render(d, rec, ROW_JSON, true);
	for (size_t i = 0; i < d->n; ++i) {
		char key[80];

		if (!d->f[i].key)
			continue;
		snprintf(key, sizeof(key), "\"%s\": ", d->f[i].key);
		CHECK(strstr(got, key) != NULL, "%s: key %s missing from JSON", d->name, d->f[i].key);
	}
	render(d, rec, ROW_DUMP, false);
	for (size_t i = 0; i < d->n; ++i)
		if (d->f[i].col > cols)
			cols = d->f[i].col;
	for (const char *p = got; *p; ++p)
		tabs += *p == '\t';
	CHECK(tabs == cols - 1, "%s: %d dump columns, the description has %d", d->name, tabs + 1, cols);
	render(d, rec, ROW_TEXT, false);
	for (size_t i = 0; i < d->n; ++i)
		if (d->f[i].label && (!d->f[i].shown || *((const bool *)rec + d->f[i].shown - 1)))
			CHECK(strstr(got, d->f[i].label) != NULL, "%s: label %s missing from text", d->name,
			      d->f[i].label);
}

static void descriptions(void)
{
	static const struct row_desc *const all[] = { &list_desc, &thermal_sensor_row, &dmabuf_probe_row };
	struct dmabuf_row d = { .code = NVS_EX_NOT_BAR1, .source = "cuda", .cuda_dev = "RTX", .has_gpu = true,
				.gpu = 0, .gpu_busid = "0000:03:00.0" };
	struct thermal_row t = { .gpu = 0, .busid = "0000:03:00.0", .gname = "gpu0", .mark = " " };
	struct row_field broken[sizeof(list_fields) / sizeof(list_fields[0])];
	struct row_desc b = list_desc;
	struct rec plain = fixture;
	char err[256];

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i)
		CHECK(!row_check(all[i], err, sizeof(err)), "%s", err);

	/* a field left out of one format without a why is refused */
	b.f = broken;
	memcpy(broken, list_fields, sizeof(broken));
	broken[2].col = 0;
	CHECK(row_check(&b, err, sizeof(err)) && strstr(err, "delta") && strstr(err, "--dump"),
	      "a field missing from --dump passed: %s", err);
	memcpy(broken, list_fields, sizeof(broken));
	broken[4].key = NULL;
	CHECK(row_check(&b, err, sizeof(err)) && strstr(err, "JSON"), "a field missing from JSON passed: %s", err);
	memcpy(broken, list_fields, sizeof(broken));
	broken[5].label = broken[5].fmt = NULL;
	CHECK(row_check(&b, err, sizeof(err)) && strstr(err, "text"), "a field missing from text passed: %s", err);
	memcpy(broken, list_fields, sizeof(broken));
	broken[1].col = 1;
	CHECK(row_check(&b, err, sizeof(err)) && strstr(err, "twice"), "a dump column used twice passed: %s", err);
	memcpy(broken, list_fields, sizeof(broken));
	broken[9].key = "name";
	CHECK(row_check(&b, err, sizeof(err)) && strstr(err, "twice"), "a JSON key used twice passed: %s", err);

	/* --dump writes strings raw, as it always has: no tab in this one */
	snprintf(plain.name, sizeof(plain.name), "abc");
	every_format(&list_desc, &plain);
	snprintf(t.s.label, sizeof(t.s.label), "mem0");
	every_format(&thermal_sensor_row, &t);
	d.r.step = NVS_DMABUF_STEP_MAP;
	d.r.err = 12;
	dmabuf_row_finish(&d);
	every_format(&dmabuf_probe_row, &d);
}

int main(void)
{
	unsetenv("NVSIDECAR_COLOR");
	setenv("NO_COLOR", "1", 1);
	colour();
	formats();
	commands();
	descriptions();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
