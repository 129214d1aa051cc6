// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The shared plumbing of the fuzz targets (fuzz.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static int memfd = -1;
static char path[64];
static char dir[4096];

const char *nvs_fuzz_path(const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (memfd < 0) {
		memfd = memfd_create("nvs-fuzz-input", MFD_CLOEXEC);
		if (memfd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	if (ftruncate(memfd, 0))
		return NULL;
	while (done < size) {
		ssize_t w = pwrite(memfd, data + done, size - done, (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return NULL;
		done += (size_t)w;
	}
	return path;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_dir(void)
{
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *nvs_fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "%s/nvs-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		abort();
	}
	atexit(rm_dir);
	return dir;
}
