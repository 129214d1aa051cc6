// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/initramfs.h"

#define MEMBER_MAX (64u << 20)
#define NAME_MAX_CPIO 4096

/* A byte source: the image itself, or a decompressor's output. */
struct src {
	int fd;
	uint64_t off;		/* bytes consumed from fd (the image: its file offset) */
	unsigned char buf[65536];
	size_t start, end;
	bool eof;
};

static int fill(struct src *s)
{
	ssize_t r;

	if (s->start < s->end || s->eof)
		return 0;
	s->start = s->end = 0;
	do
		r = read(s->fd, s->buf, sizeof(s->buf));
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (!r)
		s->eof = true;
	s->end = (size_t)r;
	return 0;
}

/* Reads n bytes into dst (NULL: skips them). -EPIPE at a short end. */
static int take(struct src *s, void *dst, uint64_t n)
{
	while (n) {
		size_t k;
		int ret = fill(s);

		if (ret)
			return ret;
		if (s->start == s->end)
			return -EPIPE;
		k = s->end - s->start < n ? s->end - s->start : (size_t)n;
		if (dst) {
			memcpy(dst, s->buf + s->start, k);
			dst = (char *)dst + k;
		}
		s->start += k;
		s->off += k;
		n -= k;
	}
	return 0;
}

/* The next byte without consuming it; -1 at the end. */
static int peek(struct src *s)
{
	if (fill(s) || s->start == s->end)
		return -1;
	return s->buf[s->start];
}

static bool hexfield(const char *p, uint32_t *v)
{
	char tmp[9], *end;

	memcpy(tmp, p, 8);
	tmp[8] = 0;
	*v = (uint32_t)strtoul(tmp, &end, 16);
	return end == tmp + 8;
}

static bool wanted(const char *path, const char *const names[])
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	for (size_t i = 0; names[i]; ++i)
		if (!strcmp(b, names[i]))
			return true;
	return false;
}

/*
 * One cpio archive from s, up to and including its trailer. Returns 1 with
 * the member, 0 at the trailer without it, -errno (err) on a broken archive.
 */
static int scan_cpio(struct src *s, const char *const names[], char *member, size_t mlen, void **data,
		     size_t *size, char *err, size_t errlen)
{
	static const char trailer[] = "TRAILER!!!";
	char hdr[110], *name = NULL;
	int ret;

	name = malloc(NAME_MAX_CPIO + 4);
	if (!name)
		return -ENOMEM;
	for (;;) {
		uint32_t fsize, nsize;
		uint64_t pad;

		ret = take(s, hdr, sizeof(hdr));
		if (ret || (memcmp(hdr, "070701", 6) && memcmp(hdr, "070702", 6)) || !hexfield(hdr + 54, &fsize) ||
		    !hexfield(hdr + 94, &nsize) || !nsize || nsize > NAME_MAX_CPIO) {
			snprintf(err, errlen, "not a newc cpio archive where one should be (%s)",
				 ret ? strerror(-ret) : "bad header");
			ret = ret ? ret : -EINVAL;
			goto out;
		}
		/* header and name are padded together to 4 bytes */
		pad = (4 - (sizeof(hdr) + nsize) % 4) % 4;
		ret = take(s, name, nsize + pad);
		if (ret)
			goto broken;
		name[nsize - 1] = 0;
		if (!strcmp(name, trailer)) {
			ret = 0;
			goto out;
		}
		pad = (4 - fsize % 4) % 4;
		if (wanted(name, names)) {
			if (fsize > MEMBER_MAX) {
				snprintf(err, errlen, "%s in the initramfs is %u bytes, more than a module can be", name,
					 fsize);
				ret = -EFBIG;
				goto out;
			}
			*data = malloc(fsize ? fsize : 1);
			if (!*data) {
				ret = -ENOMEM;
				goto out;
			}
			ret = take(s, *data, fsize);
			if (ret) {
				free(*data);
				*data = NULL;
				goto broken;
			}
			*size = fsize;
			snprintf(member, mlen, "%s", name);
			ret = 1;
			goto out;
		}
		ret = take(s, NULL, (uint64_t)fsize + pad);
		if (ret)
			goto broken;
	}
broken:
	snprintf(err, errlen, "the cpio archive ends in the middle of `%s' (%s)", name, strerror(-ret));
out:
	free(name);
	return ret;
}

static const struct {
	unsigned char magic[6];
	size_t len;
	const char *argv[4];
} decompressors[] = {
	{ { 0x1f, 0x8b }, 2, { "gzip", "-dc", NULL } },
	{ { 0x28, 0xb5, 0x2f, 0xfd }, 4, { "zstd", "-dcq", NULL } },
	{ { 0xfd, '7', 'z', 'X', 'Z', 0 }, 6, { "xz", "-dc", NULL } },
	{ { 0x5d, 0, 0 }, 3, { "xz", "--format=lzma", "-dc", NULL } },
	{ { 0x02, 0x21, 0x4c, 0x18 }, 4, { "lz4", "-dc", NULL } },
	{ { 'B', 'Z', 'h' }, 3, { "bzip2", "-dc", NULL } },
	{ { 0x89, 'L', 'Z', 'O' }, 4, { "lzop", "-dc", NULL } },
};

/* The decompressor for the bytes at s's position, or -1. */
static int which_decompressor(struct src *s)
{
	unsigned char m[6] = { 0 };
	size_t have;

	if (fill(s))
		return -1;
	have = s->end - s->start < sizeof(m) ? s->end - s->start : sizeof(m);
	memcpy(m, s->buf + s->start, have);
	for (size_t i = 0; i < sizeof(decompressors) / sizeof(decompressors[0]); ++i)
		if (have >= decompressors[i].len && !memcmp(m, decompressors[i].magic, decompressors[i].len))
			return (int)i;
	return -1;
}

/* The rest of image from offset off, through the decompressor: its stdout in *fd. */
static pid_t spawn(const char *image, uint64_t off, int d, int *fd, char *err, size_t errlen)
{
	int p[2], e[2];
	pid_t pid;
	char why[160] = "";

	if (pipe2(p, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		int in = open(image, O_RDONLY | O_CLOEXEC);

		if (in < 0 || lseek(in, (off_t)off, SEEK_SET) < 0 || dup2(in, STDIN_FILENO) < 0 ||
		    dup2(p[1], STDOUT_FILENO) < 0)
			_exit(126);
		execvp(decompressors[d].argv[0], (char *const *)decompressors[d].argv);
		dprintf(e[1], "%s", strerror(errno));
		_exit(127);
	}
	close(p[1]);
	close(e[1]);
	/* exec succeeded when the error pipe closes without a word */
	if (read(e[0], why, sizeof(why) - 1) > 0) {
		snprintf(err, errlen, "cannot run `%s' to read its %s-compressed archive: %s (install it)",
			 decompressors[d].argv[0], decompressors[d].argv[0], why);
		close(e[0]);
		close(p[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(e[0]);
	*fd = p[0];
	return pid;
}

int nvs_initramfs_find(const char *image, const char *const names[], char *member, size_t mlen,
		       void **data, size_t *size, char *err, size_t errlen)
{
	struct src *s = NULL, *z = NULL;
	int ret = 0;

	*data = NULL;
	*size = 0;
	member[0] = 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = open(image, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to open %s: %s", image, strerror(errno));
		goto out;
	}
	for (;;) {
		int c, d;

		/* the padding between archives */
		while ((c = peek(s)) == 0)
			take(s, NULL, 1);
		if (c < 0)
			break;		/* the end of the image */
		if (c == '0') {
			ret = scan_cpio(s, names, member, mlen, data, size, err, errlen);
			if (ret)
				break;
			continue;
		}
		d = which_decompressor(s);
		if (d < 0) {
			snprintf(err, errlen, "%s: unknown data at offset %llu (not cpio, not a known compression)", image,
				 (unsigned long long)s->off);
			ret = -EINVAL;
			break;
		}
		/* a compressed archive runs to the end of the image */
		z = calloc(1, sizeof(*z));
		if (!z) {
			ret = -ENOMEM;
			break;
		}
		{
			pid_t pid = spawn(image, s->off, d, &z->fd, err, errlen);

			if (pid < 0) {
				ret = -ENOEXEC;
				break;
			}
			/* several archives may follow each other inside the compressed stream */
			while (!ret) {
				while ((c = peek(z)) == 0)
					take(z, NULL, 1);
				if (c < 0)
					break;
				ret = scan_cpio(z, names, member, mlen, data, size, err, errlen);
				if (!ret)
					continue;
			}
			close(z->fd);
			kill(pid, SIGTERM);	/* done early: the rest is not needed */
			waitpid(pid, NULL, 0);
		}
		break;
	}
out:
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	free(z);
	return ret;
}

int nvs_unpack(const void *in, size_t n, void **out, size_t *outn, char *err, size_t errlen)
{
	struct src probe = { .fd = -1 };
	int d, p[2], q[2];
	pid_t writer, dec;
	size_t cap = 0, len = 0;
	char *buf = NULL;
	int ret = 0;

	*out = NULL;
	*outn = 0;
	probe.end = n < sizeof(probe.buf) ? n : sizeof(probe.buf);
	memcpy(probe.buf, in, probe.end);
	probe.eof = true;
	d = which_decompressor(&probe);
	if (d < 0) {
		*out = malloc(n ? n : 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out, in, n);
		*outn = n;
		return 0;
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(q, O_CLOEXEC) < 0) {
		ret = -errno;
		close(p[0]);
		close(p[1]);
		return ret;
	}
	/* one child feeds the bytes, the decompressor turns them into the module */
	writer = fork();
	if (!writer) {
		const char *c = in;
		size_t left = n;

		close(p[0]);
		while (left) {
			ssize_t w = write(p[1], c, left);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				_exit(1);
			c += w;
			left -= (size_t)w;
		}
		_exit(0);
	}
	dec = writer < 0 ? -1 : fork();
	if (!dec) {
		if (dup2(p[0], STDIN_FILENO) < 0 || dup2(q[1], STDOUT_FILENO) < 0)
			_exit(126);
		execvp(decompressors[d].argv[0], (char *const *)decompressors[d].argv);
		_exit(127);
	}
	close(p[0]);
	close(p[1]);
	close(q[1]);
	if (writer < 0 || dec < 0) {
		ret = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 65536) {
			char *nb;

			if (cap > MEMBER_MAX) {
				ret = -EFBIG;
				snprintf(err, errlen, "a module that decompresses to over %u bytes", MEMBER_MAX);
				goto out;
			}
			nb = realloc(buf, cap ? cap * 2 : 1 << 20);
			if (!nb) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap ? cap * 2 : 1 << 20;
		}
		r = read(q[0], buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
out:
	close(q[0]);
	if (writer > 0) {
		kill(writer, SIGTERM);
		waitpid(writer, NULL, 0);
	}
	if (dec > 0) {
		int st = 0;

		waitpid(dec, &st, 0);
		if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st))) {
			ret = -EIO;
			snprintf(err, errlen, "`%s' could not decompress the module%s", decompressors[d].argv[0],
				 WIFEXITED(st) && WEXITSTATUS(st) == 127 ? " (is it installed?)" : "");
		}
	}
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*outn = len;
	return 0;
}

/* The value of "\0key=" in a .modinfo string table, found in the raw bytes. */
static void modinfo_field(const char *ko, size_t n, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	buf[0] = 0;
	for (size_t i = 1; i + kl < n; ++i) {
		const char *v, *e;

		if (ko[i - 1] || memcmp(ko + i, key, kl))
			continue;
		v = ko + i + kl;
		e = memchr(v, 0, n - (size_t)(v - ko));
		if (!e || e - v >= (ptrdiff_t)len)
			continue;
		snprintf(buf, len, "%.*s", (int)(e - v), v);
		return;
	}
}

void nvs_modinfo(const void *ko, size_t n, char *version, size_t vlen, char *srcversion, size_t slen)
{
	modinfo_field(ko, n, "version=", version, vlen);
	modinfo_field(ko, n, "srcversion=", srcversion, slen);
}
