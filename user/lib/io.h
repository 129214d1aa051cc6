/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_IO_H
#define LIB_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Hardened file I/O for every subcommand.
 *
 * Output files appear whole or not at all: the data goes to an unnamed
 * file in the target's directory, which gets its name only when complete
 * (fsync, rename, fsync of the directory); a crash or a kill leaves
 * nothing. A target that exists must be a regular file (a symbolic link is
 * followed to one), so /dev/null or a directory is refused before any work
 * starts; "-" means standard output.
 *
 * Inputs are read once, so a pipe or process substitution works the same
 * as a file; a FIFO without a writer ends at once instead of hanging;
 * devices, directories and sockets are refused; a line and the whole input
 * are bounded, with a message that says which limit was hit.
 */

struct nvs_ofile {
	FILE *f;		/* write the content here */
	bool is_stdout;
	bool named;		/* the temporary file has a name (no O_TMPFILE) */
	bool nofollow;		/* replace a link at the final name, never write through it */
	mode_t mode;
	char path[4096];	/* the final name (a link already resolved) */
	char dir[4096];
	char tmp[4096];		/* the temporary name, at commit or without O_TMPFILE */
};

/*
 * Checks the target and opens the temporary file. mode is the final file's
 * (0666 & ~umask for data files). Returns 0, or -errno with an
 * admin-readable message in err.
 */
int nvs_ofile_open(struct nvs_ofile *o, const char *path, mode_t mode, char *err, size_t errlen);
/* Publishes the file under its name (stdout: flushes). 0 or -errno with err. */
int nvs_ofile_commit(struct nvs_ofile *o, char *err, size_t errlen);
/* Drops whatever was not committed; safe to call twice. */
void nvs_ofile_discard(struct nvs_ofile *o);
/* dir/name from one buffer, atomically as above. */
int nvs_write_atomic(const char *dir, const char *name, const void *buf, size_t len, mode_t mode,
		     char *err, size_t errlen);
/*
 * The same for a file the program owns in its own directory (the verdict):
 * the final name is never followed: a symbolic link, a FIFO or a device
 * there is replaced by the new file (rename replaces the entry itself), a
 * directory refused; the temporary file is created O_EXCL|O_NOFOLLOW.
 */
int nvs_write_atomic_nofollow(const char *dir, const char *name, const void *buf, size_t len, mode_t mode,
			      char *err, size_t errlen);
/* Removes temporaries that a killed run left in dir (named only briefly). */
void nvs_clean_stale_temps(const char *dir);
/*
 * mkdir -p dir with mode for what it creates. 0, or -errno with the
 * component that could not be created (or is not a directory) in failed.
 */
int nvs_make_dirs(const char *dir, mode_t mode, char *failed, size_t len);
/* fsync a directory so that a rename in it is durable. */
int nvs_fsync_dir(const char *dir);

/*
 * Why opening path failed with errno e, for "Unable to open `PATH': WHY":
 * strerror(e), and for a dangling symbolic link the target it names that
 * is missing (admin review L5: "No such file or directory" alone sent the
 * admin looking for a file that is there, as a link).
 */
void nvs_open_error(const char *path, int e, char *why, size_t len);

/*
 * Whether path is a FIFO in the file system, named directly or through
 * symbolic links: not "-", and not the pipe behind a /dev/fd/N link
 * (bash's <(...)), whose link ends in "pipe:[N]", no file. lstat() and
 * realpath() only: opening a FIFO to read it waits for a writer.
 */
bool nvs_named_fifo(const char *path);

/*
 * A library path the admin named for dlopen() must be a regular file (a
 * link to one is fine): dlopen of a FIFO blocks in open(). stat() opens
 * nothing, so this cannot hang. A bare name (searched in the library path)
 * and a missing file are left to dlopen's own message. -ENOEXEC with the
 * reason, ending "pass WHAT".
 */
int nvs_dlopen_path_ok(const char *path, const char *what, char *err, size_t errlen);

/*
 * The one rule for what an input may be, by the mode stat() gave for
 * path: a regular file, or also a FIFO (a pipe) with fifo_ok. 0, or
 * -EISDIR for a directory and -EINVAL for anything else (a device, a
 * socket), with "`PATH' is a directory: HINT" or "`PATH' is not a regular
 * file (a FIFO): HINT" in err. nvs_ifile_open() applies it (fifo_ok).
 */
int nvs_input_type(const char *path, mode_t mode, bool fifo_ok, const char *hint, char *err, size_t errlen);

struct nvs_ifile {
	int fd;
	bool own;		/* close fd at the end (not standard input) */
	char name[256];		/* for messages: the path, or "standard input" */
	char *buf;
	size_t cap, start, end;
	size_t max_line;
	uint64_t max_total, total;
	size_t lineno;
	bool eof;
	bool fifo;		/* a FIFO (named, or a pipe behind a /dev/fd link) */
	bool no_writer;		/* a FIFO with no writer when opened: it reads as empty */
};

/*
 * Opens path ("-": standard input) for one reading pass with lines of at
 * most max_line bytes and at most max_total bytes in all (0: no limit on
 * the total). A FIFO with no writer is not waited for: it ends at once,
 * with no_writer set (one whose writer is there but has not written yet is
 * read as usual). Returns 0, or -errno with err.
 */
int nvs_ifile_open(struct nvs_ifile *in, const char *path, size_t max_line, uint64_t max_total,
		   char *err, size_t errlen);
/*
 * The next line, without its newline, NUL-terminated in *line (len bytes;
 * it may hold NUL bytes, which callers take as binary input). *cut is set
 * when the input ended without a newline. Returns 1, 0 at the end, or
 * -errno with err: -E2BIG for an over-long line, -EFBIG past max_total.
 */
int nvs_ifile_line(struct nvs_ifile *in, char **line, size_t *len, bool *cut, char *err, size_t errlen);
void nvs_ifile_close(struct nvs_ifile *in);
/* The whole input in a malloc'd, NUL-terminated buffer, within max bytes. */
int nvs_read_all(const char *path, uint64_t max, char **buf, size_t *len, char *err, size_t errlen);

#endif
