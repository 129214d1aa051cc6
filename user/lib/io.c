// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/env.h"
#include "lib/io.h"

#define TMP_TAG ".nvsidecar-"

static int fail(char *err, size_t errlen, int e, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return -e;
}

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/*
 * mkdir -p: each missing component with mode, the first real failure
 * reported with the component it hit (mkdir's own errno, not the ENOENT a
 * later step would see). A component that exists must be a directory.
 */
int nvs_make_dirs(const char *dir, mode_t mode, char *failed, size_t len)
{
	char p[PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (!stat(dir, &st) && S_ISDIR(st.st_mode))
		return 0;	/* there already: nothing touched */
	if (!n || n >= sizeof(p)) {
		snprintf(failed, len, "%s", dir);
		return n ? -ENAMETOOLONG : -ENOENT;
	}
	memcpy(p, dir, n + 1);
	for (char *s = p + 1;; ++s) {
		char c = *s;

		if (c && c != '/')
			continue;
		*s = 0;
		if (mkdir(p, mode) < 0) {
			int e = errno;

			if (e != EEXIST || stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
				snprintf(failed, len, "%s", p);
				return e == EEXIST ? -ENOTDIR : -e;
			}
		}
		*s = c;
		if (!c)
			return 0;
	}
}

int nvs_dlopen_path_ok(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;

	if (!strchr(path, '/') || stat(path, &st) < 0 || S_ISREG(st.st_mode))
		return 0;
	snprintf(err, errlen, "Unable to load %s: not a regular file (%s): pass %s",
		 path, S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a special file", what);
	return -ENOEXEC;
}

int nvs_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * dir/.NAME.nvsidecar-PID, the name a file has between linkat() and
 * rename(); NAME is shortened so that a long file name still fits.
 */
static bool tmp_name(char *buf, size_t len, const char *dir, const char *base)
{
	int keep = NAME_MAX - 1 - (int)strlen(TMP_TAG) - 10;
	int n = snprintf(buf, len, "%s/.%.*s" TMP_TAG "%d", dir, keep, base, (int)getpid());

	return n > 0 && (size_t)n < len;
}

/*
 * The final name to write: a new file, a regular file, or a link to one;
 * with nofollow, the entry itself (anything but a directory).
 */
static int check_target(const char *path, bool nofollow, char *final, size_t len, char *err, size_t errlen)
{
	struct stat st;
	size_t n = strlen(path);

	if (!n || path[n - 1] == '/')
		return fail(err, errlen, EISDIR, "`%s' names a directory: give a file name%s", path,
			    ", or - for standard output");
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return fail(err, errlen, errno, "Unable to create a file next to `%s': %s", path,
				    strerror(errno));
		snprintf(final, len, "%s", path);
		return 0;
	}
	/* the entry itself is replaced, whatever it is, except a directory */
	if (nofollow) {
		if (S_ISDIR(st.st_mode))
			return fail(err, errlen, EISDIR, "`%s' is a directory%s", path, "");
		snprintf(final, len, "%s", path);
		return 0;
	}
	if (S_ISLNK(st.st_mode)) {
		if (stat(path, &st) < 0)
			return fail(err, errlen, ENOENT, "`%s' is a symbolic link to nothing (%s)", path,
				    strerror(errno));
		if (S_ISREG(st.st_mode)) {
			if (!realpath(path, final))
				return fail(err, errlen, errno, "Unable to resolve `%s': %s", path,
					    strerror(errno));
			return 0;
		}
	}
	if (!S_ISREG(st.st_mode)) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%s, not a regular file", kind_of(st.st_mode));
		return fail(err, errlen, EEXIST,
			    "`%s' is %s: give a new or regular file name, or - for standard output",
			    path, msg);
	}
	snprintf(final, len, "%s", path);
	return 0;
}

static int ofile_open(struct nvs_ofile *o, const char *path, mode_t mode, bool nofollow, char *err, size_t errlen)
{
	char *copy;
	const char *slash, *base;
	int fd, ret;

	memset(o, 0, sizeof(*o));
	o->mode = mode;
	o->nofollow = nofollow;
	if (!nofollow && !strcmp(path, "-")) {
		o->f = stdout;
		o->is_stdout = true;
		return 0;
	}
	ret = check_target(path, nofollow, o->path, sizeof(o->path), err, errlen);
	if (ret)
		return ret;
	copy = o->path;
	slash = strrchr(copy, '/');
	base = slash ? slash + 1 : copy;
	if (strlen(base) > NAME_MAX)
		return fail(err, errlen, ENAMETOOLONG, "Unable to create `%s': %s", path,
			    strerror(ENAMETOOLONG));
	if (!slash)
		snprintf(o->dir, sizeof(o->dir), ".");
	else if (slash == copy)
		snprintf(o->dir, sizeof(o->dir), "/");
	else
		snprintf(o->dir, sizeof(o->dir), "%.*s", (int)(slash - copy), copy);
	if (!tmp_name(o->tmp, sizeof(o->tmp), o->dir, base))
		return fail(err, errlen, ENAMETOOLONG, "Unable to create `%s': %s", path,
			    strerror(ENAMETOOLONG));

	/* Unnamed until complete: a crash leaves nothing behind. */
	fd = open(o->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		unlink(o->tmp);
		fd = open(o->tmp, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, mode);
		o->named = fd >= 0;
	}
	if (fd < 0)
		return fail(err, errlen, errno, "Unable to create a file next to `%s': %s", path,
			    strerror(errno));
	o->f = fdopen(fd, "w");
	if (!o->f) {
		ret = -errno;
		close(fd);
		nvs_ofile_discard(o);
		snprintf(err, errlen, "Unable to open `%s': %s", o->tmp, strerror(-ret));
		return ret;
	}
	return 0;
}

int nvs_ofile_open(struct nvs_ofile *o, const char *path, mode_t mode, char *err, size_t errlen)
{
	return ofile_open(o, path, mode, false, err, errlen);
}

int nvs_ofile_commit(struct nvs_ofile *o, char *err, size_t errlen)
{
	char proc[64];
	struct stat st;
	int fd, ret;

	if (o->is_stdout) {
		if (fflush(stdout) || ferror(stdout))
			return fail(err, errlen, errno ? errno : EIO, "Unable to write standard output: %s%s",
				    strerror(errno ? errno : EIO), "");
		o->f = NULL;
		return 0;
	}
	fd = fileno(o->f);
	if (fflush(o->f) || ferror(o->f) || fchmod(fd, o->mode) < 0 || fsync(fd) < 0) {
		ret = errno ? errno : EIO;
		return fail(err, errlen, ret, "Unable to write `%s': %s", o->path, strerror(ret));
	}
	/* It may have been replaced by something else while we wrote. */
	if (!lstat(o->path, &st) && (o->nofollow ? S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
		return fail(err, errlen, EEXIST, "`%s' became %s while writing; nothing was replaced",
			    o->path, kind_of(st.st_mode));
	if (!o->named) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		unlink(o->tmp);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) < 0)
			return fail(err, errlen, errno, "Unable to create `%s': %s", o->tmp, strerror(errno));
		o->named = true;
	}
	if (rename(o->tmp, o->path) < 0)
		return fail(err, errlen, errno, "Unable to rename the new file to `%s': %s", o->path,
			    strerror(errno));
	o->named = false;
	fclose(o->f);
	o->f = NULL;
	nvs_fsync_dir(o->dir);
	return 0;
}

void nvs_ofile_discard(struct nvs_ofile *o)
{
	if (o->f && !o->is_stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->named)
		unlink(o->tmp);
	o->named = false;
}

static int write_atomic(const char *dir, const char *name, const void *buf, size_t len, mode_t mode,
			bool nofollow, char *err, size_t errlen)
{
	unsigned int delay = nvs_env_test_write_delay_ms();
	char path[4096 + 256];
	struct nvs_ofile o;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = ofile_open(&o, path, mode, nofollow, err, errlen);
	if (ret)
		return ret;
	for (size_t done = 0; done < len;) {
		size_t chunk = len - done > (1 << 20) ? 1 << 20 : len - done;

		if (fwrite((const char *)buf + done, 1, chunk, o.f) != chunk) {
			ret = errno ? -errno : -EIO;
			snprintf(err, errlen, "Unable to write `%s': %s", path, strerror(-ret));
			goto out;
		}
		done += chunk;
		if (delay)	/* tests: widen the window for an interrupted write */
			usleep((useconds_t)delay * 1000);
	}
	ret = nvs_ofile_commit(&o, err, errlen);
out:
	nvs_ofile_discard(&o);
	return ret;
}

int nvs_write_atomic(const char *dir, const char *name, const void *buf, size_t len, mode_t mode,
		     char *err, size_t errlen)
{
	return write_atomic(dir, name, buf, len, mode, false, err, errlen);
}

int nvs_write_atomic_nofollow(const char *dir, const char *name, const void *buf, size_t len, mode_t mode,
			      char *err, size_t errlen)
{
	return write_atomic(dir, name, buf, len, mode, true, err, errlen);
}

void nvs_clean_stale_temps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[4096 + 256];
		const char *t = strstr(de->d_name, TMP_TAG);
		pid_t pid;

		if (de->d_name[0] != '.' || !t || !t[strlen(TMP_TAG)] ||
		    strspn(t + strlen(TMP_TAG), "0123456789") != strlen(t + strlen(TMP_TAG)))
			continue;
		pid = atoi(t + strlen(TMP_TAG));
		if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
}

void nvs_open_error(const char *path, int e, char *why, size_t len)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (e == ENOENT && !lstat(path, &st) && S_ISLNK(st.st_mode) &&
	    (n = readlink(path, target, sizeof(target) - 1)) > 0) {
		target[n] = 0;
		snprintf(why, len, "%s (a symbolic link to `%s', which does not exist)", strerror(e), target);
		return;
	}
	snprintf(why, len, "%s", strerror(e));
}

bool nvs_named_fifo(const char *path)
{
	char real[PATH_MAX];
	struct stat st;

	if (!strcmp(path, "-") || lstat(path, &st) < 0)
		return false;
	/* a link to a FIFO is one too; /dev/fd/N of a pipe resolves to nothing */
	if (S_ISLNK(st.st_mode) && (!realpath(path, real) || lstat(real, &st) < 0))
		return false;
	return S_ISFIFO(st.st_mode);
}

int nvs_input_type(const char *path, mode_t mode, bool fifo_ok, const char *hint, char *err, size_t errlen)
{
	if (S_ISREG(mode) || (fifo_ok && S_ISFIFO(mode)))
		return 0;
	if (S_ISDIR(mode)) {
		snprintf(err, errlen, "`%s' is a directory: %s", path, hint);
		return -EISDIR;
	}
	snprintf(err, errlen, "`%s' is not a regular file (%s): %s", path, kind_of(mode), hint);
	return -EINVAL;
}

static int fill(struct nvs_ifile *in, char *err, size_t errlen);

int nvs_ifile_open(struct nvs_ifile *in, const char *path, size_t max_line, uint64_t max_total,
		   char *err, size_t errlen)
{
	struct stat st;
	int flags;

	memset(in, 0, sizeof(*in));
	in->fd = -1;
	if (!path)
		return fail(err, errlen, EINVAL, "No input named%s%s", "", "");
	in->max_line = max_line;
	in->max_total = max_total;
	if (!strcmp(path, "-")) {
		in->fd = STDIN_FILENO;
		snprintf(in->name, sizeof(in->name), "standard input");
	} else {
		snprintf(in->name, sizeof(in->name), "%s", path);
		/* O_NONBLOCK: opening a FIFO that has no writer must not wait for one. */
		in->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (in->fd < 0) {
			int e = errno;
			char why[PATH_MAX + 96];

			nvs_open_error(path, e, why, sizeof(why));
			return fail(err, errlen, e, "Unable to open `%s': %s", path, why);
		}
		in->own = true;
	}
	if (fstat(in->fd, &st) < 0) {
		int e = errno;

		nvs_ifile_close(in);
		return fail(err, errlen, e, "Unable to read `%s': %s", path, strerror(e));
	}
	/* standard input may be a terminal or /dev/null, never a directory */
	if (in->own || S_ISDIR(st.st_mode)) {
		int ret = nvs_input_type(path, st.st_mode, true, "pass a file, a pipe, or - for standard input",
					 err, errlen);

		if (ret) {
			nvs_ifile_close(in);
			return ret;
		}
	}
	in->fifo = S_ISFIFO(st.st_mode);
	if (in->own && in->fifo) {
		/*
		 * Still O_NONBLOCK: a read of a FIFO that no writer holds is
		 * the end (0), one whose writer has not written yet is EAGAIN,
		 * else data, kept for the first line. So a note can say which.
		 */
		int ret = fill(in, err, errlen);

		if (ret && ret != -EAGAIN) {
			nvs_ifile_close(in);
			return ret;
		}
		in->no_writer = !ret && in->eof && !in->end;
		if (errlen)
			err[0] = 0;
	}
	/* Reads block again; a FIFO without a writer reads as empty. */
	flags = fcntl(in->fd, F_GETFL);
	if (in->own && flags >= 0)
		fcntl(in->fd, F_SETFL, flags & ~O_NONBLOCK);
	return 0;
}

static int fill(struct nvs_ifile *in, char *err, size_t errlen)
{
	ssize_t n;

	if (in->start) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	if (!in->cap || (in->cap - 1 - in->end < 4096 && in->cap < in->max_line + 2)) {
		size_t cap = in->cap ? in->cap * 2 : 65536;
		char *b;

		if (cap > in->max_line + 2)
			cap = in->max_line + 2;
		b = realloc(in->buf, cap);
		if (!b)
			return fail(err, errlen, ENOMEM, "Unable to read `%s': %s", in->name, strerror(ENOMEM));
		in->buf = b;
		in->cap = cap;
	}
	do
		n = read(in->fd, in->buf + in->end, in->cap - 1 - in->end);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(err, errlen, errno, "Unable to read `%s': %s", in->name, strerror(errno));
	if (!n)
		in->eof = true;
	in->end += (size_t)n;
	in->total += (uint64_t)n;
	if (in->max_total && in->total > in->max_total) {
		char lim[32];

		snprintf(lim, sizeof(lim), "%llu", (unsigned long long)in->max_total);
		return fail(err, errlen, EFBIG, "`%s' is larger than %s bytes: not the input this command reads",
			    in->name, lim);
	}
	return 0;
}

int nvs_ifile_line(struct nvs_ifile *in, char **line, size_t *len, bool *cut, char *err, size_t errlen)
{
	for (;;) {
		char *nl = in->end > in->start ? memchr(in->buf + in->start, '\n', in->end - in->start) : NULL;
		int ret;

		if (nl || (in->eof && in->end > in->start)) {
			size_t n = nl ? (size_t)(nl - (in->buf + in->start)) : in->end - in->start;

			*line = in->buf + in->start;
			(*line)[n] = '\0';
			*len = n;
			*cut = !nl;
			in->start += n + (nl ? 1 : 0);
			in->lineno++;
			if (n > in->max_line)
				goto too_long;
			return 1;
		}
		if (in->eof)
			return 0;
		if (in->end - in->start > in->max_line) {
			in->lineno++;
			goto too_long;
		}
		ret = fill(in, err, errlen);
		if (ret)
			return ret;
	}
too_long:
	snprintf(err, errlen, "`%s' line %zu is longer than %zu bytes: not the text this command reads",
		 in->name, in->lineno, in->max_line);
	return -E2BIG;
}

void nvs_ifile_close(struct nvs_ifile *in)
{
	if (in->own && in->fd >= 0)
		close(in->fd);
	free(in->buf);
	memset(in, 0, sizeof(*in));
	in->fd = -1;
}

int nvs_read_all(const char *path, uint64_t max, char **buf, size_t *len, char *err, size_t errlen)
{
	struct nvs_ifile in;
	int ret = nvs_ifile_open(&in, path, max, max, err, errlen);

	*buf = NULL;
	*len = 0;
	if (ret)
		return ret;
	while (!in.eof && !(ret = fill(&in, err, errlen)))
		;
	if (!ret) {
		*buf = in.buf;
		*len = in.end;
		in.buf[in.end] = '\0';
		in.buf = NULL;
	}
	nvs_ifile_close(&in);
	return ret;
}
