// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Unit tests of the CLI toolkit's hardened I/O and text handling
 * (user/lib/io.c, lib/text.c, cli/out.c): atomic output to a regular file, a
 * link, a name of NAME_MAX bytes or "-", and never to a device or a
 * directory; bounded line reading; FIFOs that never hang; escaping for a
 * terminal and for JSON. Prints one line per failed check; exits 1 if any.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/io.h"
#include "lib/json.h"
#include "lib/text.h"

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

static char dir[PATH_MAX];

static int write_file(const char *path, const char *text, char *err, size_t errlen)
{
	struct nvs_ofile o;
	int ret = nvs_ofile_open(&o, path, 0644, err, errlen);

	if (ret)
		return ret;
	fputs(text, o.f);
	ret = nvs_ofile_commit(&o, err, errlen);
	nvs_ofile_discard(&o);
	return ret;
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
}

static void ofile_cases(void)
{
	char path[PATH_MAX + 300], err[8192], buf[64], name[NAME_MAX + 1];
	struct stat st;
	struct nvs_ofile o;

	snprintf(path, sizeof(path), "%s/plain.csv", dir);
	CHECK(!write_file(path, "one\n", err, sizeof(err)), "plain file: %s", err);
	slurp(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "one\n"), "plain file holds `%s'", buf);
	CHECK(!write_file(path, "two\n", err, sizeof(err)), "replace: %s", err);
	slurp(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "two\n"), "replaced file holds `%s'", buf);

	/* A name of NAME_MAX bytes: the temporary name must still fit. */
	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(!write_file(path, "long\n", err, sizeof(err)), "NAME_MAX name: %s", err);
	CHECK(!stat(path, &st) && st.st_size == 5, "NAME_MAX file missing");

	/* A link to a regular file is written through and stays a link. */
	snprintf(path, sizeof(path), "%s/link.csv", dir);
	CHECK(!symlink("plain.csv", path), "symlink: %s", strerror(errno));
	CHECK(!write_file(path, "three\n", err, sizeof(err)), "through a link: %s", err);
	CHECK(!lstat(path, &st) && S_ISLNK(st.st_mode), "the link was replaced");
	snprintf(path, sizeof(path), "%s/plain.csv", dir);
	slurp(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "three\n"), "the link's target holds `%s'", buf);

	/* Devices, directories and FIFOs are refused before anything is written. */
	CHECK(write_file("/dev/null", "x", err, sizeof(err)) == -EEXIST && strstr(err, "character device"),
	      "/dev/null: %s", err);
	CHECK(!stat("/dev/null", &st) && S_ISCHR(st.st_mode), "/dev/null is no longer a device");
	CHECK(write_file(dir, "x", err, sizeof(err)) == -EEXIST && strstr(err, "directory"), "dir: %s", err);
	snprintf(path, sizeof(path), "%s/", dir);
	CHECK(write_file(path, "x", err, sizeof(err)) == -EISDIR, "dir/: %s", err);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(!mkfifo(path, 0600), "mkfifo: %s", strerror(errno));
	CHECK(write_file(path, "x", err, sizeof(err)) == -EEXIST && strstr(err, "FIFO"), "fifo: %s", err);
	snprintf(path, sizeof(path), "%s/missing/x.csv", dir);
	CHECK(write_file(path, "x", err, sizeof(err)) == -ENOENT, "missing dir: %s", err);

	/* "-" is standard output, and nothing is created. */
	CHECK(!nvs_ofile_open(&o, "-", 0644, err, sizeof(err)) && o.f == stdout && o.is_stdout, "-: %s", err);
	CHECK(!nvs_ofile_commit(&o, err, sizeof(err)), "- commit: %s", err);

	/* A discarded file leaves nothing behind. */
	snprintf(path, sizeof(path), "%s/gone.csv", dir);
	CHECK(!nvs_ofile_open(&o, path, 0644, err, sizeof(err)), "open: %s", err);
	fputs("never\n", o.f);
	nvs_ofile_discard(&o);
	CHECK(stat(path, &st) && errno == ENOENT, "a discarded file appeared");
}

static void ifile_cases(void)
{
	char path[PATH_MAX + 32], err[512], *line;
	struct nvs_ifile in;
	size_t n;
	bool cut;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/in.txt", dir);
	f = fopen(path, "w");
	fputs("short\n0123456789abcdef\nlast", f);
	fclose(f);
	CHECK(!nvs_ifile_open(&in, path, 10, 0, err, sizeof(err)), "open: %s", err);
	r = nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err));
	CHECK(r == 1 && !strcmp(line, "short") && n == 5 && !cut, "line 1: %d `%s'", r, line);
	r = nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err));
	CHECK(r == -E2BIG && strstr(err, "line 2 is longer than 10 bytes"), "long line: %d %s", r, err);
	nvs_ifile_close(&in);

	CHECK(!nvs_ifile_open(&in, path, 100, 0, err, sizeof(err)), "open: %s", err);
	while ((r = nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err))) == 1 && !cut)
		;
	CHECK(r == 1 && cut && !strcmp(line, "last"), "cut last line: %d `%s'", r, line);
	CHECK(nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err)) == 0, "end after the cut line");
	nvs_ifile_close(&in);

	/* the total is bounded as it is read, not after */
	CHECK(!nvs_ifile_open(&in, path, 100, 8, err, sizeof(err)), "open: %s", err);
	r = nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err));
	CHECK(r == -EFBIG && strstr(err, "larger than 8 bytes"), "total bound: %d %s", r, err);
	nvs_ifile_close(&in);

	CHECK(nvs_ifile_open(&in, "/dev/zero", 100, 0, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "character device"), "/dev/zero: %s", err);
	CHECK(nvs_ifile_open(&in, dir, 100, 0, err, sizeof(err)) == -EISDIR, "dir: %s", err);
	/* A FIFO without a writer: open returns, reading ends at once. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	alarm(5);
	CHECK(!nvs_ifile_open(&in, path, 100, 0, err, sizeof(err)), "fifo: %s", err);
	CHECK(nvs_ifile_line(&in, &line, &n, &cut, err, sizeof(err)) == 0, "fifo reads as empty");
	alarm(0);
	nvs_ifile_close(&in);
}

static void text_cases(void)
{
	static const struct { const char *in, *text, *json; } c[] = {
		{ "plain", "plain", "\"plain\"" },
		{ "95 \xc2\xb0\x43", "95 \xc2\xb0\x43", "\"95 \xc2\xb0\x43\"" },
		{ "a\x1b[2Jb", "a\\x1b[2Jb", "\"a\\u001b[2Jb\"" },
		{ "tab\tnl\ncr\r", "tab\\tnl\\ncr\\r", "\"tab\\tnl\\ncr\\r\"" },
		{ "del\x7f", "del\\x7f", "\"del\\u007f\"" },
		{ "csi\xc2\x9b", "csi\\x9b", "\"csi\\u009b\"" },
		{ "bad\xff\xfe", "bad\\xff\\xfe", "\"bad\\ufffd\\ufffd\"" },
		{ "over\xc0\xaf", "over\\xc0\\xaf", "\"over\\ufffd\\ufffd\"" },
		{ "surr\xed\xa0\x80", "surr\\xed\\xa0\\x80", "\"surr\\ufffd\\ufffd\\ufffd\"" },
		{ "cut\xe2\x82", "cut\\xe2\\x82", "\"cut\\ufffd\\ufffd\"" },
		{ "q\"b\\", "q\"b\\", "\"q\\\"b\\\\\"" },
		{ "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },
		/* bidi controls (T3-18): escaped on the terminal, kept in JSON */
		{ "rtl \xe2\x80\xae gnp.exe", "rtl \\u202e gnp.exe", "\"rtl \xe2\x80\xae gnp.exe\"" },
		{ "i\xe2\x81\xa6x\xe2\x81\xa9", "i\\u2066x\\u2069", "\"i\xe2\x81\xa6x\xe2\x81\xa9\"" },
		{ "m\xe2\x80\x8f\xd8\x9c", "m\\u200f\\u061c", "\"m\xe2\x80\x8f\xd8\x9c\"" },
		{ "dash\xe2\x80\x94", "dash\xe2\x80\x94", "\"dash\xe2\x80\x94\"" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); ++i) {
		char buf[128], *js = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&js, &len);
		struct json j;

		nvs_escape_text(c[i].in, buf, sizeof(buf));
		CHECK(!strcmp(buf, c[i].text), "text %zu: `%s', want `%s'", i, buf, c[i].text);
		json_init(&j, f, false);
		json_str(&j, NULL, c[i].in);
		fclose(f);
		CHECK(!strcmp(js, c[i].json), "json %zu: %s, want %s", i, js, c[i].json);
		free(js);
	}
}

int main(void)
{
	char tmpl[] = "/tmp/nvs-unit-io.XXXXXX";
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", tmpl);
	ofile_cases();
	ifile_cases();
	text_cases();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("FAIL cleaning %s\n", dir);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
