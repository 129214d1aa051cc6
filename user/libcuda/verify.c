// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/env.h"
#include "sys/cuda.h"
#include "libcuda/verify.h"

const int lc_verify_attrs[LC_VERIFY_NATTR] = { 103, 110, 116, 117, 118, 124, 146 };
const char *const lc_verify_attr_names[LC_VERIFY_NATTR] = {
	"HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED",
	"GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED",
	"GPU_DIRECT_RDMA_SUPPORTED",
	"GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS",
	"GPU_DIRECT_RDMA_WRITES_ORDERING",
	"DMA_BUF_SUPPORTED",
	"HOST_ALLOC_DMA_BUF_SUPPORTED",
};

static void describe_fd(int fd, struct lc_verify_result *r)
{
	char path[64], line[256];
	struct stat st;
	FILE *f;

	snprintf(r->fd_kind, sizeof(r->fd_kind), "unknown");
	if (!fstat(fd, &st))
		r->fd_size = st.st_size;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "exp_name:", 9)) {
				line[strcspn(line, "\n")] = 0;
				snprintf(r->fd_kind, sizeof(r->fd_kind), "dma-buf (exporter %s)", line + 9 + strspn(line + 9, " \t"));
				r->fd_dmabuf = true;
			} else if (!strncmp(line, "size:", 5)) {
				r->fd_size = strtoull(line + 5, NULL, 10);
			}
		fclose(f);
	}
	if (!strcmp(r->fd_kind, "unknown")) {
		char target[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			snprintf(r->fd_kind, sizeof(r->fd_kind), "not a dma-buf: %.100s", target);
		}
	}
}

static void child(const struct lc_verify_opts *o, struct lc_verify_result *r)
{
	struct nvs_cuda cu;
	CUdevice dev;
	CUcontext ctx = NULL;
	CUdeviceptr ptr = 0;
	long pg = sysconf(_SC_PAGESIZE);
	int fd = -1, rc;
	char err[512];

	if (nvs_cuda_load(&cu, r->loaded, err, sizeof(err))) {
		snprintf(r->error, sizeof(r->error), "%s", err);
		return;
	}
	r->stage = 1;
	rc = cu.cuInit(0);
	if (rc) {
		snprintf(r->error, sizeof(r->error), "cuInit failed: %s", nvs_cuda_strerror(&cu, rc, err, sizeof(err)));
		return;
	}
	if (cu.cuDriverGetVersion)
		cu.cuDriverGetVersion(&r->driver_version);
	r->stage = 2;
	/* cuDeviceGet only for an ordinal cuDeviceGetCount says exists */
	rc = cu.cuDeviceGetCount(&r->ndevices);
	if (!rc && r->ndevices > o->device)
		rc = cu.cuDeviceGet(&dev, o->device);
	if (rc || r->ndevices <= o->device) {
		snprintf(r->error, sizeof(r->error), "No CUDA device %d (%d found)%s%s", o->device, r->ndevices,
			 rc ? ": " : "", rc ? nvs_cuda_strerror(&cu, rc, err, sizeof(err)) : "");
		return;
	}
	r->stage = 3;
	for (int i = 0; i < LC_VERIFY_NATTR; ++i)
		r->attr_rc[i] = cu.cuDeviceGetAttribute ?
			cu.cuDeviceGetAttribute(&r->attr[i], lc_verify_attrs[i], dev) : -1;
	r->stage = 4;
	if (cu.cuDevicePrimaryCtxRetain && !cu.cuDevicePrimaryCtxRetain(&ctx, dev) && cu.cuCtxSetCurrent)
		cu.cuCtxSetCurrent(ctx);
	r->size = (o->bytes + pg - 1) / pg * pg;
	r->alloc_rc = cu.cuMemAlloc_v2 ? cu.cuMemAlloc_v2(&ptr, r->size) : -1;
	if (r->alloc_rc) {
		snprintf(r->error, sizeof(r->error), "cuMemAlloc of %llu bytes failed: %s",
			 (unsigned long long)r->size, nvs_cuda_strerror(&cu, r->alloc_rc, err, sizeof(err)));
		return;
	}
	r->stage = 5;
	/* the one export path (sys/cuda.c); cuMemAlloc returns a page-aligned range */
	r->export_rc = nvs_cuda_export_dmabuf(&cu, ptr, r->size, &fd, err, sizeof(err));
	if (!r->export_rc && fd >= 0) {
		r->fd = fd;
		describe_fd(fd, r);
		if (o->hook) {
			char busid[32] = "";

			if (cu.cuDeviceGetPCIBusId && cu.cuDeviceGetPCIBusId(busid, sizeof(busid), dev))
				busid[0] = '\0';
			r->hook_ran = true;
			r->hook_rc = o->hook(fd, r->size, o->device, busid, o->hook_arg, r->hook_msg,
					     sizeof(r->hook_msg));
		}
		close(fd);
	}
	if (cu.cuMemFree_v2)
		cu.cuMemFree_v2(ptr);
	if (ctx && cu.cuDevicePrimaryCtxRelease_v2)
		cu.cuDevicePrimaryCtxRelease_v2(dev);
	r->stage = 6;
	/* No dlclose: some drivers run teardown that is not fork-safe; the child exits. */
}

/*
 * The child's time limit. cuInit on a wedged GPU can block for ever (the
 * driver waits on the hardware); verify must end with a verdict instead,
 * so a health check or a script around it never hangs. Two minutes is far
 * more than a healthy cuInit plus one allocation takes.
 */
#define LC_VERIFY_TIMEOUT_S 120

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Reads the child's report until it is whole, the child closes the pipe,
 * or deadline (CLOCK_MONOTONIC ms) passes. Returns the bytes read, or -1
 * when the deadline passed first.
 */
static ssize_t read_report(int fd, struct lc_verify_result *r, long long deadline)
{
	size_t got = 0;

	while (got < sizeof(*r)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return -1;
		n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		n = read(fd, (char *)r + got, sizeof(*r) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

/*
 * SIGKILL reaches a child stuck in the driver only when the driver lets
 * go: wait for it a moment, then leave it rather than hang with it.
 */
static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	for (int i = 0; i < 40; ++i) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		usleep(50 * 1000);
	}
}

int lc_verify(const struct lc_verify_opts *o, struct lc_verify_result *r)
{
	unsigned int limit = nvs_env_test_verify_timeout_s(LC_VERIFY_TIMEOUT_S);
	int p[2], status;
	pid_t pid;
	struct stat st;
	ssize_t got;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!stat(o->lib, &st) && S_ISDIR(st.st_mode))
		snprintf(r->loaded, sizeof(r->loaded), "%s/libcuda.so.1", o->lib);
	else
		snprintf(r->loaded, sizeof(r->loaded), "%s", o->lib);
	/* A path with a slash makes dlopen load exactly that file. */
	if (!strchr(r->loaded, '/')) {
		char tmp[4096];

		snprintf(tmp, sizeof(tmp), "./%.4000s", r->loaded);
		snprintf(r->loaded, sizeof(r->loaded), "%s", tmp);
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (!pid) {
		close(p[0]);
		child(o, r);
		if (write(p[1], r, sizeof(*r)) != sizeof(*r))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	got = read_report(p[0], r, now_ms() + limit * 1000LL);
	close(p[0]);
	if (got < 0)
		kill_child(pid);
	else
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (got != (ssize_t)sizeof(*r)) {
		char loaded[4096];

		snprintf(loaded, sizeof(loaded), "%s", r->loaded);
		memset(r, 0, sizeof(*r));
		snprintf(r->loaded, sizeof(r->loaded), "%s", loaded);
		r->fd = -1;
		if (got < 0) {
			snprintf(r->error, sizeof(r->error),
				 "The child loading %.300s timed out after %u s and was killed: a cuInit or a GPU allocation stuck on a wedged GPU does this (check dmesg and `nvidia-smi')",
				 loaded, limit);
			return -ETIMEDOUT;
		}
		if (WIFSIGNALED(status))
			snprintf(r->error, sizeof(r->error), "The child loading %.400s was killed by signal %d (%s)",
				 loaded, WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			snprintf(r->error, sizeof(r->error), "The child loading %.400s exited with status %d before reporting",
				 loaded, WEXITSTATUS(status));
		return -ECHILD;
	}
	return 0;
}
