// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "check/idlefix.h"
#include "lib/busid.h"
#include "lib/io.h"
#include "sys/cuda.h"
#include "sys/nvml.h"

#define MAX_STATE 64

static const char *const action_name[] = {
	[NVS_IF_IDLE] = "idle", [NVS_IF_BUSY] = "busy", [NVS_IF_COUNTING] = "stuck",
	[NVS_IF_WOULD_FIX] = "would-fix", [NVS_IF_FIXED] = "fixed", [NVS_IF_FIX_FAILED] = "fix-failed",
	[NVS_IF_UNKNOWN] = "unknown",
};

const char *nvs_idlefix_action_name(enum nvs_idlefix_action a)
{
	return a <= NVS_IF_UNKNOWN ? action_name[a] : "?";
}

void nvs_idlefix_opts_init(struct nvs_idlefix_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->threshold = 90;
	o->checks = 3;
	o->timeout_s = 30;
	o->state = NVS_IDLEFIX_STATE;
}

struct entry {
	char busid[32];
	unsigned int count;
};

/*
 * The state file holds only "BUSID COUNT" lines, at most MAX_STATE of them
 * (an empty file is one where nothing is counting). Anything else at that
 * path is not ours: a typo such as --state /etc/fstab must be refused, not
 * read as an empty history and replaced. Returns 0 (n entries), -ENOENT (no
 * file yet: an empty history), -EINVAL (not a state file), or -errno.
 */
static int load_state(const char *path, struct entry *e, size_t max, size_t *n, char *err, size_t errlen)
{
	char buf[MAX_STATE * 48 + 1], *line, *save = NULL;
	ssize_t len;
	struct stat st;
	int fd, ret;

	*n = 0;
	/* O_NONBLOCK: a FIFO at that path must not hang the open */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (ret != -ENOENT)
			snprintf(err, errlen, "Unable to open --state `%s': %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size >= (off_t)sizeof(buf)) {
		ret = -EINVAL;
		goto not_ours;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to read --state `%s': %s", path, strerror(-ret));
		goto out;
	}
	buf[len] = 0;
	ret = -EINVAL;
	if (memchr(buf, 0, (size_t)len) || (len && buf[len - 1] != '\n'))
		goto not_ours;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t id = strspn(line, "0123456789abcdefABCDEF:.");
		char *end;

		if (*n == max || id < 7 || id >= sizeof(e->busid) || line[id] != ' ' ||
		    !strchr("123456789", line[id + 1]))
			goto not_ours;
		errno = 0;
		e[*n].count = (unsigned int)strtoul(line + id + 1, &end, 10);
		if (errno || *end)
			goto not_ours;
		snprintf(e[*n].busid, sizeof(e->busid), "%.*s", (int)id, line);
		++*n;
	}
	ret = 0;
	goto out;
not_ours:
	snprintf(err, errlen, "--state `%s' is not an idle-fix state file (only \"BUSID COUNT\" lines); "
		 "refusing to read or replace it: pass the path of a new or existing state file", path);
out:
	close(fd);
	return ret;
}

static int save_state(const char *path, const struct nvs_idlefix_result *r, char *err, size_t errlen)
{
	char dir[PATH_MAX], buf[MAX_STATE * 48];
	const char *slash = strrchr(path, '/');
	size_t len = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
	for (size_t i = 0; i < r->n && i < MAX_STATE; ++i)
		if (r->v[i].count)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %u\n", r->v[i].busid, r->v[i].count);
	return nvs_write_atomic(dir, slash ? slash + 1 : path, buf, len, 0644, err, errlen);
}

/* The admin's next step when the state's place cannot be written. */
static const char *state_hint(int e)
{
	switch (e) {
	case EACCES: case EPERM:
		return "; run as root, or pass --state FILE in a directory you can write";
	case EROFS:
		return "; pass --state FILE on a writable file system (the counts must last from one run to the next)";
	case ENOSPC: case EDQUOT:
		return "; free space there, or pass --state FILE on another file system";
	default:
		return "";
	}
}

/*
 * The state's place exists but could not take a write: a full or failing
 * file system, an I/O failure (exit 1 like a save that fails), not a usage
 * error. EACCES and EROFS keep their own codes (4 and 2, in --help).
 */
static bool state_io_error(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EIO;
}

/*
 * mkdir -p of path's directory (/run/nvsidecar is gone after a reboot).
 * A failure is said as what it is (EACCES on the directory, not ENOENT on
 * the lock file inside it).
 */
static int make_parent(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX], failed[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int ret;

	if (!slash || slash == path)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	ret = nvs_make_dirs(dir, 0755, failed, sizeof(failed));
	if (ret)
		snprintf(err, errlen, "Unable to create the directory `%s' for the state file %s: %s%s", failed, path,
			 strerror(-ret), state_hint(-ret));
	return ret;
}

/*
 * The child: load libcuda, find the GPU by bus id, create a context and
 * destroy it. Its own process, so that the driver tears everything down
 * when it exits, and a call that hangs on a wedged GPU is killed.
 */
static void __attribute__((noreturn)) child(const struct nvs_idlefix_opts *o, const char *busid, int wfd)
{
	struct nvs_cuda cu;
	char err[4400], id[64], e[160];
	CUcontext ctx = NULL;
	int ndev = 0;
	CUresult r;

	if (nvs_cuda_load(&cu, o->lib, err, sizeof(err))) {
		dprintf(wfd, "%s", err);
		_exit(1);
	}
	if (!cu.cuCtxCreate_v2 || !cu.cuCtxDestroy_v2 || !cu.cuDeviceGetPCIBusId) {
		dprintf(wfd, "%s has no cuCtxCreate_v2, cuCtxDestroy_v2 or cuDeviceGetPCIBusId", cu.path);
		_exit(1);
	}
	r = cu.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = cu.cuDeviceGetCount(&ndev);
	if (r != CUDA_SUCCESS) {
		dprintf(wfd, "cuInit: %s", nvs_cuda_strerror(&cu, r, e, sizeof(e)));
		_exit(1);
	}
	for (int d = 0; d < ndev; ++d) {
		CUdevice dev;

		if (cu.cuDeviceGet(&dev, d) != CUDA_SUCCESS ||
		    cu.cuDeviceGetPCIBusId(id, sizeof(id), dev) != CUDA_SUCCESS || !nvs_same_busid(id, busid))
			continue;
		r = cu.cuCtxCreate_v2(&ctx, 0, dev);
		if (r != CUDA_SUCCESS) {
			dprintf(wfd, "cuCtxCreate: %s", nvs_cuda_strerror(&cu, r, e, sizeof(e)));
			_exit(1);
		}
		r = cu.cuCtxDestroy_v2(ctx);
		if (r != CUDA_SUCCESS) {
			dprintf(wfd, "cuCtxDestroy: %s", nvs_cuda_strerror(&cu, r, e, sizeof(e)));
			_exit(1);
		}
		_exit(0);
	}
	dprintf(wfd, "CUDA has no device at %s (%d device(s))", busid, ndev);
	_exit(1);
}

static bool fix_gpu(const struct nvs_idlefix_opts *o, const char *busid, char *msg, size_t len)
{
	struct timespec t0, t;
	int p[2], st = 0;
	size_t n = 0;
	pid_t pid;

	msg[0] = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(msg, len, "pipe: %s", strerror(errno));
		return false;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (!pid) {
		close(p[0]);
		child(o, busid, p[1]);
	}
	close(p[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		long left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = (long)o->timeout_s * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(p[0]);
			snprintf(msg, len, "creating the context did not finish in %u s (the GPU may be wedged: `nvidia-smi', `dmesg' for Xid)",
				 o->timeout_s);
			return false;
		}
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(p[0], msg + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		msg[n] = 0;
		if (n >= len - 1)
			break;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return true;
	if (!msg[0])
		snprintf(msg, len, "the context child %s %d", WIFSIGNALED(st) ? "died from signal" : "exited",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return false;
}

int nvs_idlefix_run(const struct nvs_idlefix_opts *o, struct nvs_idlefix_result *r, char *err, size_t errlen)
{
	struct entry prev[MAX_STATE];
	struct nvs_nvml_gpu *g = NULL;
	struct nvs_nvml n;
	char lock[PATH_MAX];
	size_t np = 0, ng = 0;
	int lfd, ret;

	memset(r, 0, sizeof(*r));
	ret = nvs_nvml_open(&n, o->nvml, err, errlen);
	if (ret)
		return ret;
	ret = nvs_nvml_gpus(&n, &g, &ng, err, errlen);
	nvs_nvml_close(&n);
	if (ret)
		return ret;

	/*
	 * Check the path before anything is created beside it. A dry run
	 * only reads: no directory, no lock file, no state written.
	 */
	ret = load_state(o->state, prev, MAX_STATE, &np, err, errlen);
	if (ret && ret != -ENOENT) {
		free(g);
		return ret;
	}
	if (o->dry_run) {
		lfd = -1;
		goto counted;
	}
	/* one run at a time: the timer and an admin by hand would both count */
	ret = make_parent(o->state, err, errlen);
	if (ret) {
		r->save_failed = state_io_error(-ret);
		free(g);
		return ret;
	}
	snprintf(lock, sizeof(lock), "%s.lock", o->state);
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		ret = lfd < 0 ? -errno : -EBUSY;
		snprintf(err, errlen, "%s %s: %s%s", lfd < 0 ? "Unable to open" : "Another idle-fix holds", lock,
			 lfd < 0 ? strerror(-ret) : "try again later", lfd < 0 ? state_hint(-ret) : "");
		r->save_failed = lfd < 0 && state_io_error(-ret);
		if (lfd >= 0)
			close(lfd);
		free(g);
		return ret;
	}
	/* again under the lock: the run before us may have just replaced it */
	ret = load_state(o->state, prev, MAX_STATE, &np, err, errlen);
	if (ret && ret != -ENOENT)
		goto out;
counted:
	r->v = calloc(ng ? ng : 1, sizeof(*r->v));
	if (!r->v) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto out;
	}
	r->n = ng;
	openlog("nvsidecar-idle-fix", LOG_PID, LOG_DAEMON);
	for (size_t i = 0; i < ng; ++i) {
		struct nvs_idlefix_gpu *x = &r->v[i];
		unsigned int before = 0;

		snprintf(x->busid, sizeof(x->busid), "%s", g[i].busid);
		x->util = g[i].util;
		x->procs = g[i].procs;
		x->power_mw = g[i].power_mw;
		x->power_ok = g[i].power_ok;
		for (size_t k = 0; k < np; ++k)
			if (nvs_same_busid(prev[k].busid, x->busid))
				before = prev[k].count;
		if (!g[i].util_ok || !g[i].procs_ok || !x->busid[0]) {
			x->action = NVS_IF_UNKNOWN;
			snprintf(x->msg, sizeof(x->msg), "%s", g[i].err[0] ? g[i].err : "NVML did not answer");
			continue;
		}
		if (x->procs) {
			x->action = NVS_IF_BUSY;
			continue;
		}
		if (x->util < o->threshold) {
			x->action = NVS_IF_IDLE;
			continue;
		}
		x->count = before + 1;
		if (x->count < o->checks) {
			x->action = NVS_IF_COUNTING;
			continue;
		}
		if (o->dry_run) {
			x->action = NVS_IF_WOULD_FIX;
			syslog(LOG_INFO, "%s at %u%% utilisation with no process for %u checks: would create and destroy a CUDA context (--dry-run)",
			       x->busid, x->util, x->count);
			continue;
		}
		if (fix_gpu(o, x->busid, x->msg, sizeof(x->msg))) {
			char pw[32] = "";

			if (x->power_ok)
				snprintf(pw, sizeof(pw), " and %u W", x->power_mw / 1000);
			x->action = NVS_IF_FIXED;
			syslog(LOG_NOTICE, "%s at %u%% utilisation%s with no process for %u checks: created and destroyed a CUDA context",
			       x->busid, x->util, pw, x->count);
		} else {
			x->action = NVS_IF_FIX_FAILED;
			syslog(LOG_WARNING, "%s at %u%% utilisation with no process for %u checks: creating a CUDA context failed: %s",
			       x->busid, x->util, x->count, x->msg);
		}
		/* judged afresh from the next run on */
		x->count = 0;
	}
	closelog();
	ret = o->dry_run ? 0 : save_state(o->state, r, err, errlen);
	if (ret) {
		/* the GPUs were judged (and maybe fixed): only the counts are lost */
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, "; this run's counts were not saved, so idle GPUs start counting again%s",
			 state_hint(-ret));
		nvs_idlefix_free(r);
		r->save_failed = true;
	}
out:
	if (lfd >= 0)
		close(lfd);
	free(g);
	return ret;
}

void nvs_idlefix_free(struct nvs_idlefix_result *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}
