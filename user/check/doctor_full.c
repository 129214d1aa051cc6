// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * doctor --full: the data path, briefly. `p2p' copies a small pattern
 * between every ordered GPU pair and verifies every byte; `rdma --loopback'
 * writes and reads GPU memory through the NIC (dma-buf when libcuda's gate
 * is open) and verifies it. Each runs as a child of this program, so a CUDA
 * or verbs call that hangs or crashes is bounded by a timeout and cannot
 * take the doctor down; the child's exit status is its verdict (nvsidecar(8)).
 *
 * What --full verified (these runs, and the libcuda and GDR checks of the
 * same run) goes into the verdict cache (check/vcache.h) with the key of
 * what would change it; a later doctor, --quick included (Slurm's health
 * check), reports those results with their age while the key is unchanged
 * and the verdict is younger than NVSIDECAR_VERDICT_MAX_AGE, and says
 * "stale" with the field that changed otherwise. --full itself always runs:
 * an admin who asks for it after a repair must not get yesterday's answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check/doctor.h"
#include "check/vcache.h"
#include "lib/env.h"
#include "lib/exit.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

#define FULL_TIMEOUT_S 60

/*
 * Runs argv with stdout and stderr into out (the last len-1 bytes kept), at
 * most secs seconds. Returns the wait status, or -1 (timed out: *timed_out;
 * could not start: errno).
 */
static int run_child(const char *const argv[], int secs, char *out, size_t len, bool *timed_out)
{
	struct timespec t0, t;
	size_t n = 0;
	int p[2], st = 0;
	pid_t pid;

	*timed_out = false;
	out[0] = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!pid) {
		int nul = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(p[1], STDOUT_FILENO) < 0 ||
		    dup2(p[1], STDERR_FILENO) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "Unable to run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		char buf[4096];
		long left;
		ssize_t r;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = secs * 1000L - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L);
		if (left <= 0) {
			*timed_out = true;
			kill(-pid, SIGKILL);
			break;
		}
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(p[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		/* keep the tail: the summary line comes last */
		if ((size_t)r >= len - 1) {
			memcpy(out, buf + r - (len - 1), len - 1);
			n = len - 1;
		} else {
			if (n + (size_t)r > len - 1) {
				size_t drop = n + (size_t)r - (len - 1);

				memmove(out, out + drop, n - drop);
				n -= drop;
			}
			memcpy(out + n, buf, (size_t)r);
			n += (size_t)r;
		}
		out[n] = 0;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return *timed_out ? -1 : st;
}

/* The last non-empty line of s, for the check's message. */
static const char *last_line(char *s)
{
	char *e = s + strlen(s), *b;

	while (e > s && (e[-1] == '\n' || e[-1] == ' '))
		*--e = 0;
	b = strrchr(s, '\n');
	return b ? b + 1 : s;
}

static void full_store(struct nvs_checks *c, const struct nvs_doctor_opts *o);

static const struct nvs_check *find(const struct nvs_checks *c, const char *name)
{
	for (size_t i = 0; i < c->n; ++i)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

static void full_p2p(struct nvs_checks *c, const struct nvs_doctor_opts *o, char *lib)
{
	const char *argv[] = { o->self, "p2p", "--size", "4M", "--iters", "2", lib[0] ? "--lib" : NULL, lib, NULL };
	char out[2048];
	bool to;
	int st = run_child(argv, FULL_TIMEOUT_S, out, sizeof(out), &to);

	if (st < 0) {
		add(c, CK_FAIL, "full", "full-p2p", to ? "`p2p' did not finish in %d s" : "Unable to run `p2p' (%d)",
		    to ? FULL_TIMEOUT_S : errno);
		fix(c, "A copy that hangs points at a wedged GPU or broken P2P: `nvsidecar p2p' by hand, `dmesg' for Xid errors");
	} else if (!WIFEXITED(st)) {
		add(c, CK_FAIL, "full", "full-p2p", "`p2p' died from signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		fix(c, "Run `nvsidecar p2p' by hand");
	} else if (WEXITSTATUS(st) == NVS_EX_OK) {
		add(c, CK_OK, "full", "full-p2p", "%s", last_line(out));
	} else if (WEXITSTATUS(st) == NVS_EX_FAIL) {
		add(c, CK_FAIL, "full", "full-p2p", "%s", last_line(out));
		fix(c, "A copy between GPUs arrived wrong or failed: `nvsidecar p2p' shows which pair; see docs/p2p.md");
	} else {
		add(c, CK_SKIP, "full", "full-p2p", "CUDA is not usable here: %s", last_line(out));
	}
}

static void full_rdma(struct nvs_checks *c, const struct nvs_doctor_opts *o, char *lib)
{
	const struct nvs_check *gate = find(c, "gdr-dmabuf");
	bool dmabuf = gate && gate->res == CK_OK;
	const char *argv[] = { o->self, "rdma", "--loopback", "--mem", dmabuf ? "cuda-dmabuf" : "cuda-peermem",
			       "--sizes", "64K,1M", "--iters", "4", "--timeout", "10",
			       lib[0] ? "--cuda-lib" : NULL, lib, NULL };
	char out[2048];
	bool to;
	int st;

	if (!dmabuf && access("/sys/module/nvidia_peermem", F_OK)) {
		add(c, CK_SKIP, "full", "full-rdma", "no path to GPU memory for RDMA: libcuda's dma-buf gate is closed and nvidia-peermem is not loaded");
		return;
	}
	st = run_child(argv, FULL_TIMEOUT_S, out, sizeof(out), &to);
	if (st < 0) {
		add(c, CK_FAIL, "full", "full-rdma", to ? "`rdma --loopback' did not finish in %d s" : "Unable to run `rdma' (%d)",
		    to ? FULL_TIMEOUT_S : errno);
		fix(c, "`nvsidecar rdma --loopback --mem %s' by hand; docs/rdma.md", dmabuf ? "cuda-dmabuf" : "cuda-peermem");
	} else if (!WIFEXITED(st)) {
		add(c, CK_FAIL, "full", "full-rdma", "`rdma' died from signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (WEXITSTATUS(st) == NVS_EX_OK) {
		add(c, CK_OK, "full", "full-rdma", "%s", last_line(out));
	} else if (WEXITSTATUS(st) == NVS_EX_MISSING) {
		add(c, CK_SKIP, "full", "full-rdma", "%s", last_line(out));
	} else {
		add(c, CK_FAIL, "full", "full-rdma", "%s", last_line(out));
		fix(c, "`nvsidecar rdma --loopback --mem %s' shows every transfer; docs/rdma.md", dmabuf ? "cuda-dmabuf" : "cuda-peermem");
	}
}

void nvs_doctor_full(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	char lib[4200] = "";

	if (!o->self) {
		add(c, CK_SKIP, "full", "full", "no program to run the checks with");
		return;
	}
	/* the library applications will load: the patched copy when it is usable */
	if (o->patched[0]) {
		const struct nvs_check *p = find(c, "libcuda-patched");

		if (p && p->res == CK_OK)
			snprintf(lib, sizeof(lib), "%s/libcuda.so.1", o->patched);
	}
	if (!lib[0] && o->lib[0])
		snprintf(lib, sizeof(lib), "%s", o->lib);
	full_p2p(c, o, lib);
	full_rdma(c, o, lib);
	full_store(c, o);
}

/* "42 s", "17 min", "5 h", "3 days" */
static const char *age_str(int64_t s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%lld s", (long long)s);
	else if (s < 2 * 3600)
		snprintf(buf, len, "%lld min", (long long)(s / 60));
	else if (s < 2 * 86400)
		snprintf(buf, len, "%lld h", (long long)(s / 3600));
	else
		snprintf(buf, len, "%lld days", (long long)(s / 86400));
	return buf;
}

static bool cached_layer(const char *layer)
{
	return !strcmp(layer, "full") || !strcmp(layer, "libcuda") || !strcmp(layer, "gdr");
}

/*
 * A verdict setting the doctor cannot use is said, with the value it has
 * and what is used instead: a silent default would store or look for the
 * verdict somewhere else than the admin meant (review A4). After
 * full_store's own line, so that it is not stored in the verdict.
 */
static void settings_warn(struct nvs_checks *c, const char *dir)
{
	const char *v = nvs_env_state_dir_bad();

	if (v) {
		add(c, CK_WARN, "full", "full-cache-settings",
		    "NVSIDECAR_STATE_DIR=`%.200s' is %s: the verdict is kept in %s instead", v,
		    v[0] ? "not an absolute path" : "empty", dir);
		fix(c, "Set NVSIDECAR_STATE_DIR to an absolute path (a per-node writable directory), or remove the setting, in /etc/default/nvsidecar");
	}
	v = nvs_env_verdict_max_age_bad();
	if (v) {
		add(c, CK_WARN, "full", "full-cache-settings",
		    "NVSIDECAR_VERDICT_MAX_AGE=`%.100s' is not a number of seconds from 0 to %u: using %u s", v,
		    NVS_VERDICT_MAX_AGE_MAX, NVS_VCACHE_MAX_AGE_DEF);
		fix(c, "Set NVSIDECAR_VERDICT_MAX_AGE to plain seconds (e.g. 3600 for an hour, no unit), or remove the setting, in /etc/default/nvsidecar");
	}
}

static void full_store(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct nvs_vcache *v = calloc(1, sizeof(*v));
	char dir[4096], err[4400];
	int64_t now = (int64_t)time(NULL);

	if (!v) {
		add(c, CK_WARN, "full", "full-cache", "Out of memory: the verdict was not stored");
		return;
	}
	nvs_vcache_dir(o->root, dir, sizeof(dir));
	nvs_vkey_read(&v->key, o->root);
	v->written = now;
	for (size_t i = 0; i < c->n && v->n < NVS_VCACHE_MAX; ++i) {
		const struct nvs_check *k = &c->v[i];
		struct nvs_vresult *r = &v->r[v->n];

		if (!cached_layer(k->layer))
			continue;
		r->res = k->res;
		r->verified = now;
		snprintf(r->layer, sizeof(r->layer), "%s", k->layer);
		snprintf(r->name, sizeof(r->name), "%s", k->name);
		snprintf(r->msg, sizeof(r->msg), "%s", k->msg);
		snprintf(r->fix, sizeof(r->fix), "%s", k->fix);
		v->n++;
	}
	if (nvs_vcache_save(v, dir, err, sizeof(err))) {
		add(c, CK_WARN, "full", "full-cache", "the verdict was not stored: %s", err);
		fix(c, "Later `doctor' runs and Slurm's health check cannot use this verdict: make %s writable, or set NVSIDECAR_STATE_DIR to a per-node writable directory (a read-only root needs one)",
		    dir);
	} else {
		add(c, CK_OK, "full", "full-cache", "verdict stored in %s/%s for later runs (driver %s %s, kernel %s, BIOS %s %s)",
		    dir, NVS_VCACHE_FILE, v->key.v[VK_DRIVER], v->key.v[VK_FLAVOUR], v->key.v[VK_KERNEL],
		    v->key.v[VK_BIOS_VERSION], v->key.v[VK_BIOS_DATE]);
	}
	settings_warn(c, dir);
	free(v);
}

void nvs_doctor_cached(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct nvs_vcache *v = calloc(1, sizeof(*v));
	struct nvs_vkey *now_key = calloc(1, sizeof(*now_key));
	unsigned int max_age = nvs_env_verdict_max_age(NVS_VCACHE_MAX_AGE_DEF);
	char dir[4096], err[4400], a[32];
	int64_t now = (int64_t)time(NULL), age;
	enum nvs_vkey_field f;
	int ret;

	if (!v || !now_key) {
		add(c, CK_WARN, "full", "full-cache", "Out of memory: the last `doctor --full' verdict was not read");
		goto out;
	}
	nvs_vcache_dir(o->root, dir, sizeof(dir));
	settings_warn(c, dir);
	ret = nvs_vcache_load(v, dir, err, sizeof(err));
	/* never ran --full here: nothing to say on every run */
	if (ret == -ENOENT)
		goto out;
	if (ret) {
		add(c, CK_WARN, "full", "full-cache", "the last `doctor --full' verdict is unusable: %s", err);
		fix(c, "`nvsidecar doctor --full' rewrites it");
		goto out;
	}
	age = now - v->written;
	if (age < 0) {
		add(c, CK_WARN, "full", "full-cache", "the last `doctor --full' verdict in %s is dated %lld s in the future: not used",
		    dir, (long long)-age);
		fix(c, "Check the clock, then run `nvsidecar doctor --full'");
		goto out;
	}
	nvs_vkey_read(now_key, o->root);
	f = nvs_vkey_diff(&v->key, now_key);
	if (f != VK_N) {
		add(c, CK_WARN, "full", "full-cache",
		    "stale: the last `doctor --full' verdict (%s old) was verified with %s `%s', now `%s': its results are not used",
		    age_str(age, a, sizeof(a)), nvs_vkey_name(f), v->key.v[f], now_key->v[f]);
		fix(c, "Run `nvsidecar doctor --full' to verify P2P, RDMA and libcuda again after the change");
		goto out;
	}
	if (age > max_age) {
		add(c, CK_WARN, "full", "full-cache",
		    "the last `doctor --full' verdict is %s old, older than %u s (NVSIDECAR_VERDICT_MAX_AGE): its results are not used",
		    age_str(age, a, sizeof(a)), max_age);
		fix(c, "Run `nvsidecar doctor --full' periodically (nvsidecar-doctor.timer with NVSIDECAR_DOCTOR_ARGS=--full, docs/cluster.md)");
		goto out;
	}
	for (size_t i = 0; i < v->n; ++i) {
		const struct nvs_vresult *r = &v->r[i];

		/* the layers this run checked itself are its own answer */
		if (o->mode == NVS_DOCTOR_DEFAULT && strcmp(r->layer, "full"))
			continue;
		add(c, r->res, r->layer, r->name, "%s (verified %s ago by `doctor --full', key unchanged)", r->msg,
		    age_str(now - r->verified, a, sizeof(a)));
		if (r->fix[0])
			fix(c, "%s", r->fix);
	}
out:
	free(v);
	free(now_key);
}
