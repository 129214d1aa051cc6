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
 *
 * A GPU a job holds is not a broken GPU. In exclusive-process compute mode
 * (what Slurm sites set so that jobs do not share a GPU) the driver refuses
 * every other process a context: cuDevicePrimaryCtxRetain and cuCtxCreate
 * return CUDA_ERROR_DEVICE_UNAVAILABLE (46), which cuda.h documents as
 * "the requested CUDA device is unavailable at the current time. Devices
 * are often unavailable due to use of CU_COMPUTEMODE_EXCLUSIVE_PROCESS or
 * CU_COMPUTEMODE_PROHIBITED" (the runtime's cudaErrorDevicesUnavailable,
 * also 46: "CUDA-capable device(s) is/are busy or unavailable"). Before
 * its runs --full asks every GPU, in a child of its own (busy_probe): the
 * compute mode (CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, 20, needs no context)
 * and a primary context. A check that needs a GPU that answers 46, or one
 * an admin set to PROHIBITED on purpose, is SKIP with that reason and does
 * not run; a run that a job's new context beat to a GPU (the child's exit
 * status NVS_EX_BUSY, never its output's text) is SKIP the same way. Any
 * other answer (999, 101 ...) fails, even beside a busy GPU. The verdict
 * stores the SKIP (it claims nothing passed) with the last real
 * verification it carries, which goes stale past max_age however often a
 * SKIP is recorded; a FAIL the previous verdict held for that check, with
 * the same key and still in force, is kept instead: a busy GPU is no
 * evidence of a repair, and dropping the FAIL would let the health check
 * resume a drained node (full_store). So is a full-rdma FAIL of another
 * GPU than the one this run's loopback verified.
 */
#include <dirent.h>
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
#include "check/ladder.h"
#include "check/vcache.h"
#include "sys/cuda.h"
#include "lib/env.h"
#include "lib/exit.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

#define FULL_TIMEOUT_S 60
/* asking each GPU for its mode and a context: seconds, not a minute */
#define PROBE_TIMEOUT_S 15

#define PROBE_MAX 64

/*
 * What busy_probe found: per GPU, F free, B busy (46 in exclusive-process
 * mode), P prohibited, E another error (err: the CUresult).
 */
struct gpu_probe {
	bool ok;		/* the probe answered: n and st are real */
	bool failed;		/* it hung: full-probe failed, nothing else runs */
	int n;
	char st[PROBE_MAX + 1];
	char mode[PROBE_MAX + 1];	/* the compute mode digit, '?' when not asked */
	int err[PROBE_MAX];
};

/* What this run did that full_store needs besides the checks. */
struct full_run {
	/*
	 * The checks this run could not verify: skipped because a GPU was
	 * busy, CUDA not usable, the probe hung (review H1). Their previous
	 * FAIL or WARN in force is kept (kept_fail).
	 */
	const char *unverified[4];
	size_t nunverified;
	/* full-p2p ran on the free GPUs only: these were left out ("" when none) */
	char p2p_left_out[256];
	int rdma_gpu;		/* the GPU full-rdma ran on; -1: it did not run */
};

static void __attribute__((noreturn)) exec_child(const void *arg)
{
	const char *const *argv = arg;

	execv(argv[0], (char *const *)argv);
	fprintf(stderr, "Unable to run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* How a child of run_fn ended. */
struct run_end {
	bool timed_out;		/* past its time: killed */
	bool unreaped;		/* and still there REAP_GRACE_MS after SIGKILL */
	pid_t pid;
};

/* after SIGKILL: how long a child has to go before it is left behind */
#define REAP_GRACE_MS 5000

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Reaps pid, waiting until the monotonic time until_ms at the latest;
 * false when it has not ended by then. Never blocks longer: a child stuck
 * in the kernel (state D, a wedged GPU) does not end on SIGKILL until the
 * driver lets go, which may be never.
 */
static bool reap_by(pid_t pid, int *st, long long until_ms)
{
	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return true;
		if (now_ms() >= until_ms)
			return false;
		usleep(20 * 1000);
	}
}

/*
 * Runs fn(arg) in a child of its own, its stdout and stderr into out (the
 * last len-1 bytes kept), at most secs seconds. Returns the wait status,
 * or -1: timed out (end->timed_out; end->unreaped when the child did not
 * go after SIGKILL either: it is left behind, end->pid), or could not
 * start (errno).
 */
static int run_fn(void (*fn)(const void *), const void *arg, int secs, char *out, size_t len, struct run_end *end)
{
	long long t0, until;
	size_t n = 0;
	int p[2], st = 0;
	pid_t pid;

	memset(end, 0, sizeof(*end));
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
		fn(arg);
		fflush(NULL);
		_exit(0);
	}
	end->pid = pid;
	close(p[1]);
	t0 = now_ms();
	until = t0 + secs * 1000LL;
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		long long left = until - now_ms();
		char buf[4096];
		ssize_t r;

		if (left <= 0) {
			end->timed_out = true;
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
	/* its output closed, the child has the rest of its time to exit */
	if (!end->timed_out && !reap_by(pid, &st, until))
		end->timed_out = true;
	if (end->timed_out) {
		/* test only: a child that outlives SIGKILL, as one stuck in the kernel does */
		int sig = nvs_env_test_unkillable() ? 0 : SIGKILL;

		kill(-pid, sig);
		kill(pid, sig);
		end->unreaped = !reap_by(pid, &st, now_ms() + REAP_GRACE_MS);
		return -1;
	}
	return st;
}

/* argv, the same way. */
static int run_child(const char *const argv[], int secs, char *out, size_t len, struct run_end *end)
{
	return run_fn(exec_child, argv, secs, out, len, end);
}

/*
 * The probe's child: "probe N S M:R S M:R ..." with a state letter, a
 * compute-mode digit and the context call's CUresult per GPU, or
 * "probe-error WHY". Its own process, so the contexts it makes are gone
 * before the checks run, and a call that hangs on a wedged GPU is killed.
 */
static void probe_child(const void *arg)
{
	const char *lib = arg;
	struct nvs_cuda cu;
	char err[4400];
	int n = 0;

	if (nvs_cuda_load(&cu, lib[0] ? lib : NULL, err, sizeof(err))) {
		printf("probe-error %s\n", err);
		return;
	}
	if (!cu.cuInit || !cu.cuDeviceGetCount || !cu.cuDeviceGet || !cu.cuDevicePrimaryCtxRetain ||
	    cu.cuInit(0) || cu.cuDeviceGetCount(&n)) {
		printf("probe-error CUDA did not answer\n");
		return;
	}
	if (n > PROBE_MAX)
		n = PROBE_MAX;
	printf("probe %d", n);
	for (int i = 0; i < n; ++i) {
		CUdevice dev;
		CUcontext ctx = NULL;
		int mode = -1;
		char st = 'E';
		CUresult r = cu.cuDeviceGet(&dev, i);

		if (!r && cu.cuDeviceGetAttribute &&
		    cu.cuDeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev))
			mode = -1;
		if (!r && mode == CU_COMPUTEMODE_PROHIBITED) {
			st = 'P';
		} else if (!r) {
			r = cu.cuDevicePrimaryCtxRetain(&ctx, dev);
			/*
			 * 46 means "held by another process" only where one
			 * process may hold the GPU: in the default mode any
			 * number of contexts may share it, so a 46 there is
			 * a GPU in a bad state, and it fails.
			 */
			st = !r ? 'F' : r == CUDA_ERROR_DEVICE_UNAVAILABLE &&
				mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS ? 'B' : 'E';
			if (!r && cu.cuDevicePrimaryCtxRelease_v2)
				cu.cuDevicePrimaryCtxRelease_v2(dev);
		}
		printf(" %c%c:%d", st, mode >= 0 && mode <= 9 ? '0' + mode : '?', st == 'E' ? (int)r : 0);
	}
	printf("\n");
}

/* `what' did not finish in secs s (end): the FAIL's message, with the pid left behind. */
static void add_hung(struct nvs_checks *c, const char *name, const char *what, int secs, const struct run_end *end)
{
	if (end->unreaped)
		add(c, CK_FAIL, "full", name,
		    "%s did not finish in %d s, and did not exit after SIGKILL (pid %d, left behind): the GPU may be wedged",
		    what, secs, (int)end->pid);
	else
		add(c, CK_FAIL, "full", name, "%s did not finish in %d s: the GPU may be wedged", what, secs);
}

static void busy_probe(struct nvs_checks *c, struct gpu_probe *g, const char *lib)
{
	struct run_end end;
	char out[2048], *p;
	int st, n = 0, used;

	memset(g, 0, sizeof(*g));
	st = run_fn(probe_child, lib, PROBE_TIMEOUT_S, out, sizeof(out), &end);
	if (st < 0 && end.timed_out) {
		/* a GPU that hangs a context request is no busy GPU: it fails */
		add_hung(c, "full-probe", "Asking the GPUs for their compute mode and a context", PROBE_TIMEOUT_S, &end);
		fix(c, "`nvidia-smi' and `dmesg' (Xid errors) on this node; a process in state D (`ps -o pid,stat,wchan:32 -p PID') keeps the GPU until the driver lets it go, often until a reboot");
		g->failed = true;
		return;
	}
	p = st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) ? NULL : strstr(out, "probe ");
	if (!p || sscanf(p, "probe %d%n", &n, &used) != 1 || n < 0 || n > PROBE_MAX)
		return;	/* no answer: the checks find out for themselves, as before */
	p += used;
	for (int i = 0; i < n; ++i) {
		char *e;

		if (p[0] != ' ' || !p[1] || !strchr("FBPE", p[1]) || !p[2] || p[3] != ':')
			return;
		g->st[i] = p[1];
		g->mode[i] = p[2];
		g->err[i] = (int)strtol(p + 4, &e, 10);
		if (e == p + 4)
			return;
		p = e;
	}
	g->n = n;
	g->ok = true;
}

/* GPUs in state s, "1, 3" (with their errors for E: "1 (999)"); their count. */
static int gpus_in(const struct gpu_probe *g, char s, char *buf, size_t len)
{
	size_t o = 0;
	int k = 0;

	buf[0] = 0;
	for (int i = 0; g->ok && i < g->n; ++i)
		if (g->st[i] == s && o < len) {
			if (s == 'E')
				o += (size_t)snprintf(buf + o, len - o, "%s%d (%d)", k ? ", " : "", i, g->err[i]);
			else
				o += (size_t)snprintf(buf + o, len - o, "%s%d", k ? ", " : "", i);
			k++;
		}
	return k;
}

/*
 * Why a check that needs every GPU cannot run now: "" when it can. Says
 * the busy GPUs and the PROHIBITED ones, each with its cause.
 */
static const char *busy_why(const struct gpu_probe *g, char *buf, size_t len)
{
	char b[200], pr[200];
	int nb = gpus_in(g, 'B', b, sizeof(b)), np = gpus_in(g, 'P', pr, sizeof(pr));

	buf[0] = 0;
	/* 'B' is only ever an exclusive-process GPU (probe_child) */
	if (nb)
		snprintf(buf, len, "GPU%s %s in use by another process (exclusive-process mode: CUDA_ERROR_DEVICE_UNAVAILABLE at context creation)",
			 nb > 1 ? "s" : "", b);
	if (np)
		snprintf(buf + strlen(buf), len - strlen(buf),
			 "%sGPU%s %s in compute mode PROHIBITED (set on purpose: `nvidia-smi -c')", nb ? "; " : "",
			 np > 1 ? "s" : "", pr);
	return buf;
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

static void full_store(struct nvs_checks *c, const struct nvs_doctor_opts *o, const struct full_run *run);

static const struct nvs_check *find(const struct nvs_checks *c, const char *name)
{
	for (size_t i = 0; i < c->n; ++i)
		if (!strcmp(c->v[i].name, name))
			return &c->v[i];
	return NULL;
}

static void mark_unverified(struct full_run *run, const char *name)
{
	if (run->nunverified < sizeof(run->unverified) / sizeof(run->unverified[0]))
		run->unverified[run->nunverified++] = name;
}

static void skip_busy(struct nvs_checks *c, struct full_run *run, const char *name, const char *fmt,
		      const char *why)
{
	add(c, CK_SKIP, "full", name, fmt, why);
	fix(c, "Nothing is wrong with a GPU a job holds: run `nvsidecar doctor --full' again when the node is idle to verify it");
	mark_unverified(run, name);
}

/*
 * The first line of p2p's acceptance ladder marked fail ("  2 CUDA peer
 * copies verified        fail    DETAIL"), as "ladder level 2 (TITLE)
 * failed: DETAIL" into buf; NULL when there is none. The cause, not the
 * last line printed, which is level 4 whatever failed (review M1).
 */
static const char *ladder_fail(const char *out, char *buf, size_t len)
{
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = l, *t, *e;
		int level;

		while (*p == ' ')
			p++;
		if (*p < '1' || *p > '0' + NVS_LADDER_LEVELS || p[1] != ' ')
			continue;
		level = *p - '0';
		t = nvs_ladder_title(level);
		p += 2;
		if (strncmp(p, t, strlen(t)))
			continue;
		p += strlen(t);
		while (*p == ' ')
			p++;
		if (strncmp(p, "fail", 4) || (p[4] != ' ' && p[4] != '\n' && p[4]))
			continue;
		p += 4;
		while (*p == ' ')
			p++;
		e = strchr(p, '\n');
		snprintf(buf, len, "ladder level %d (%s) failed: %.*s", level, t, (int)(e ? e - p : (long)strlen(p)), p);
		return buf;
	}
	return NULL;
}

/*
 * How many NVIDIA display controllers sysfs lists (class 0x03xxxx, vendor
 * 0x10de): a node with GPUs where CUDA is not usable is not "nothing to
 * check" (review H1).
 */
static int sysfs_nvidia_gpus(const char *root)
{
	char dir[4096], p[4400], v[32];
	struct dirent *d;
	int n = 0;
	DIR *dh;

	snprintf(dir, sizeof(dir), "%s/sys/bus/pci/devices", root ? root : "");
	dh = opendir(dir);
	if (!dh)
		return 0;
	while ((d = readdir(dh))) {
		FILE *f;
		bool gpu = false;

		if (d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/class", dir, d->d_name);
		f = fopen(p, "re");
		gpu = f && fgets(v, sizeof(v), f) && !strncmp(v, "0x03", 4);
		if (f)
			fclose(f);
		snprintf(p, sizeof(p), "%s/%s/vendor", dir, d->d_name);
		f = gpu ? fopen(p, "re") : NULL;
		if (f && fgets(v, sizeof(v), f) && !strncmp(v, "0x10de", 6))
			n++;
		if (f)
			fclose(f);
	}
	closedir(dh);
	return n;
}

/*
 * A child's exit status NVS_EX_BUSY: it met a GPU another process holds
 * (sys/cuda.c's nvs_cuda_held, in the child itself). The code, never the
 * text of its output, which can quote anything (a path, a name, a 46 of
 * another meaning).
 */
static bool exit_busy(int st)
{
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == NVS_EX_BUSY;
}

/* The program the checks run as: this one (test only: NVS_TEST_FULL_RUNNER's stand-in). */
static const char *runner(const struct nvs_doctor_opts *o)
{
	const char *t = nvs_env_test_full_runner();

	return t ? t : o->self;
}

static void full_p2p(struct nvs_checks *c, const struct nvs_doctor_opts *o, char *lib, const struct gpu_probe *g,
		     struct full_run *run)
{
	char pairs[512] = "", fl[512], out[2048], why[512], bad[512];
	const char *argv[] = { runner(o), "p2p", "--size", "4M", "--iters", "2", lib[0] ? "--lib" : NULL, lib, NULL,
			       NULL, NULL };
	const char *fmsg;
	struct run_end end;
	int st, nfree = 0;

	for (int i = 0; g->ok && i < g->n; ++i)
		nfree += g->st[i] == 'F';
	/*
	 * A GPU that is not free: p2p runs the pairs among the free GPUs
	 * (`--pairs', which takes contexts on the GPUs it names only) and
	 * says which it left out; with fewer than two free, it cannot run
	 * (review M2).
	 */
	if (busy_why(g, why, sizeof(why))[0]) {
		/* ...but a GPU that answered an error is broken, whoever holds the others */
		if (gpus_in(g, 'E', bad, sizeof(bad))) {
			add(c, CK_FAIL, "full", "full-p2p",
			    "GPU %s refused a CUDA context with an error (the CUresult in brackets): a broken GPU, busy GPUs aside; the copies did not run (%s)",
			    bad, why);
			fix(c, "A GPU that refuses a context is broken or wedged: `nvidia-smi', `dmesg' for Xid errors, then `nvsidecar p2p' when the node is idle");
			return;
		}
		for (int a = 0; nfree >= 2 && a < g->n; ++a)
			for (int b = a + 1; g->st[a] == 'F' && b < g->n; ++b) {
				size_t o2 = strlen(pairs);

				if (g->st[b] == 'F')
					snprintf(pairs + o2, sizeof(pairs) - o2, "%s%d-%d", o2 ? "," : "", a, b);
			}
		/* too many pairs for one --pairs: the whole check waits for an idle node */
		if (nfree < 2 || strlen(pairs) >= sizeof(pairs) - 1) {
			skip_busy(c, run, "full-p2p", "%s: the check did not run", why);
			return;
		}
		argv[lib[0] ? 8 : 6] = "--pairs";
		argv[lib[0] ? 9 : 7] = pairs;
		snprintf(run->p2p_left_out, sizeof(run->p2p_left_out), "%.250s", why);
	}
	st = run_child(argv, FULL_TIMEOUT_S, out, sizeof(out), &end);
	if (exit_busy(st)) {
		skip_busy(c, run, "full-p2p", "a GPU was taken by another process (exclusive-process mode) as the check started: it did not complete: %s",
			  last_line(out));
	} else if (st < 0 && end.timed_out) {
		add_hung(c, "full-p2p", "`p2p'", FULL_TIMEOUT_S, &end);
		fix(c, "A copy that hangs points at a wedged GPU or broken P2P: `nvsidecar p2p' by hand, `dmesg' for Xid errors");
	} else if (st < 0) {
		add(c, CK_FAIL, "full", "full-p2p", "Unable to run `p2p' (%d)", errno);
		fix(c, "Run `nvsidecar p2p' by hand");
	} else if (!WIFEXITED(st)) {
		add(c, CK_FAIL, "full", "full-p2p", "`p2p' died from signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		fix(c, "Run `nvsidecar p2p' by hand");
	} else if (WEXITSTATUS(st) == NVS_EX_OK) {
		if (pairs[0])
			add(c, CK_OK, "full", "full-p2p", "%s (pairs %s only; left out: %s)", last_line(out), pairs, why);
		else
			add(c, CK_OK, "full", "full-p2p", "%s", last_line(out));
	} else if (WEXITSTATUS(st) == NVS_EX_FAIL) {
		fmsg = ladder_fail(out, fl, sizeof(fl));
		if (!fmsg)
			fmsg = last_line(out);
		if (pairs[0])
			add(c, CK_FAIL, "full", "full-p2p", "%s (pairs %s; left out: %s)", fmsg, pairs, why);
		else
			add(c, CK_FAIL, "full", "full-p2p", "%s", fmsg);
		fix(c, "A copy between GPUs arrived wrong or failed: `nvsidecar p2p' shows which pair; see docs/p2p.md");
	} else {
		int ngpu = sysfs_nvidia_gpus(o->root);

		/* verified nothing: the previous FAIL stands (review H1) */
		mark_unverified(run, "full-p2p");
		if (ngpu) {
			add(c, CK_WARN, "full", "full-p2p", "CUDA is not usable, but sysfs lists %d NVIDIA GPU(s): P2P was not verified: %s",
			    ngpu, last_line(out));
			fix(c, "`nvsidecar p2p' by hand says why (a driver/library version mismatch after an upgrade, a missing libcuda); `nvsidecar doctor' checks the driver");
		} else {
			add(c, CK_SKIP, "full", "full-p2p", "CUDA is not usable here: %s", last_line(out));
		}
	}
}

static void full_rdma(struct nvs_checks *c, const struct nvs_doctor_opts *o, char *lib, const struct gpu_probe *g,
		      struct full_run *run)
{
	const struct nvs_check *gate = find(c, "gdr-dmabuf");
	bool dmabuf = gate && gate->res == CK_OK;
	char gpu[16] = "0";
	const char *argv[] = { runner(o), "rdma", "--loopback", "--mem", dmabuf ? "cuda-dmabuf" : "cuda-peermem",
			       "--sizes", "64K,1M", "--iters", "4", "--timeout", "10", "--gpu", gpu,
			       lib[0] ? "--cuda-lib" : NULL, lib, NULL };
	char out[2048], why[512], peermem[4200];
	struct run_end end;
	int st;

	snprintf(peermem, sizeof(peermem), "%s/sys/module/nvidia_peermem", o->root ? o->root : "");
	if (!dmabuf && access(peermem, F_OK)) {
		add(c, CK_SKIP, "full", "full-rdma", "no path to GPU memory for RDMA: libcuda's dma-buf gate is closed and nvidia-peermem is not loaded");
		return;
	}
	/* the loopback needs one GPU: GPU 0, else the first free one */
	if (g->ok && g->n && g->st[0] != 'F' && g->st[0] != 'E') {
		const char *free_gpu = memchr(g->st, 'F', (size_t)g->n);

		if (!free_gpu) {
			skip_busy(c, run, "full-rdma", "%s: the check did not run", busy_why(g, why, sizeof(why)));
			return;
		}
		snprintf(gpu, sizeof(gpu), "%d", (int)(free_gpu - g->st));
	}
	st = run_child(argv, FULL_TIMEOUT_S, out, sizeof(out), &end);
	if (exit_busy(st)) {
		skip_busy(c, run, "full-rdma", "GPU %s was taken by another process (exclusive-process mode) as the check started: it did not complete",
			  gpu);
		return;
	}
	/* what it verified, it verified on this GPU only (full_store) */
	run->rdma_gpu = atoi(gpu);
	if (st < 0 && end.timed_out) {
		add_hung(c, "full-rdma", "`rdma --loopback'", FULL_TIMEOUT_S, &end);
		fix(c, "`nvsidecar rdma --loopback --mem %s' by hand; docs/rdma.md", dmabuf ? "cuda-dmabuf" : "cuda-peermem");
	} else if (st < 0) {
		add(c, CK_FAIL, "full", "full-rdma", "Unable to run `rdma' (%d)", errno);
		fix(c, "`nvsidecar rdma --loopback --mem %s' by hand; docs/rdma.md", dmabuf ? "cuda-dmabuf" : "cuda-peermem");
	} else if (!WIFEXITED(st)) {
		add(c, CK_FAIL, "full", "full-rdma", "`rdma' died from signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (WEXITSTATUS(st) == NVS_EX_OK) {
		if (strcmp(gpu, "0"))
			add(c, CK_OK, "full", "full-rdma", "%s (on GPU %s: %s)", last_line(out), gpu,
			    busy_why(g, why, sizeof(why)));
		else
			add(c, CK_OK, "full", "full-rdma", "%s", last_line(out));
	} else if (WEXITSTATUS(st) == NVS_EX_MISSING) {
		run->rdma_gpu = -1;
		add(c, CK_SKIP, "full", "full-rdma", "%s", last_line(out));
	} else {
		add(c, CK_FAIL, "full", "full-rdma", "%s%s%s", last_line(out), strcmp(gpu, "0") ? " on GPU " : "",
		    strcmp(gpu, "0") ? gpu : "");
		fix(c, "`nvsidecar rdma --loopback --mem %s' shows every transfer; docs/rdma.md", dmabuf ? "cuda-dmabuf" : "cuda-peermem");
	}
}

void nvs_doctor_full(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	char lib[4200] = "";
	struct full_run run = { .rdma_gpu = -1 };
	struct gpu_probe g;

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
	busy_probe(c, &g, lib);
	if (g.failed) {
		/* a copy on that GPU would hang the same way, and leave another process behind */
		add(c, CK_SKIP, "full", "full-p2p", "not run: the GPUs did not answer the probe (full-probe)");
		add(c, CK_SKIP, "full", "full-rdma", "not run: the GPUs did not answer the probe (full-probe)");
		mark_unverified(&run, "full-p2p");
		mark_unverified(&run, "full-rdma");
	} else {
		full_p2p(c, o, lib, &g, &run);
		full_rdma(c, o, lib, &g, &run);
	}
	full_store(c, o, &run);
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

static bool unverified(const struct full_run *run, const char *name)
{
	for (size_t i = 0; i < run->nunverified; ++i)
		if (!strcmp(run->unverified[i], name))
			return true;
	return false;
}

/* The previous verdict's result for name, or NULL. */
static const struct nvs_vresult *prev_result(const struct nvs_vcache *prev, const char *name)
{
	for (size_t i = 0; prev && i < prev->n; ++i)
		if (!strcmp(prev->r[i].name, name))
			return &prev->r[i];
	return NULL;
}

/*
 * The previous verdict's FAIL for check k that this run must keep, when
 * that verdict is still in force (usable: same key, not older than
 * max_age, as nvs_doctor_cached would use it); NULL otherwise. Kept: the
 * FAIL of a check this run skipped because a GPU was busy (a job holding
 * the GPU proves no repair), and the FAIL of full-rdma found on another
 * GPU than the one this run's loopback had free (review M1: a pass on
 * GPU 2 says nothing of GPU 0). why: the reason, for the WARN.
 */
static const struct nvs_vresult *kept_fail(const struct nvs_vcache *prev, bool usable, const struct nvs_check *k,
					   const struct full_run *run, char *why, size_t len)
{
	const struct nvs_vresult *f = usable ? prev_result(prev, k->name) : NULL;
	char a[32];

	if (!f || (f->res != CK_FAIL && f->res != CK_WARN))
		return NULL;
	age_str((int64_t)time(NULL) - f->verified, a, sizeof(a));
	/*
	 * A run that verified nothing (a busy GPU, CUDA not usable, a hung
	 * probe) keeps the FAIL, and the WARN (not verified since the key
	 * changed), until a real verification (review H1, M4)
	 */
	if (unverified(run, k->name) && k->res != CK_FAIL) {
		snprintf(why, len, "%s of %s (%s old)", nvs_check_result_name(f->res), f->name, a);
		return f;
	}
	if (f->res != CK_FAIL)
		return NULL;
	/* p2p on the free GPUs only: a pass there says nothing of the busy ones (review M2) */
	if (!strcmp(k->name, "full-p2p") && k->res != CK_FAIL && run->p2p_left_out[0]) {
		snprintf(why, len, "FAIL of %s (%s old; this run left out %s)", f->name, a, run->p2p_left_out);
		return f;
	}
	/* a FAIL stored without its GPU is GPU 0's: the loopback's first choice */
	if (!strcmp(k->name, "full-rdma") && k->res != CK_FAIL && run->rdma_gpu >= 0 &&
	    run->rdma_gpu != (f->gpu < 0 ? 0 : f->gpu)) {
		snprintf(why, len, "FAIL of %s (%s old, on GPU %d; this run verified GPU %d only)", f->name, a,
			 f->gpu < 0 ? 0 : f->gpu, run->rdma_gpu);
		return f;
	}
	return NULL;
}

/*
 * A SKIP because a GPU was busy verified nothing: it carries the last real
 * verification of that check (the previous verdict's result, or what that
 * one carried), so that the quick check can say how old it is and call it
 * stale past max_age (review M2). With no earlier result under this key,
 * it carries "none since now".
 */
static void carry_last(struct nvs_vresult *r, const struct nvs_vresult *p, int64_t now)
{
	r->has_last = true;
	r->last_res = CK_SKIP;
	r->last = now;
	if (p && p->res != CK_SKIP) {
		r->last_res = p->res;
		r->last = p->verified;
	} else if (p && p->has_last) {
		r->last_res = p->last_res;
		r->last = p->last;
	}
}

/*
 * A check this run could not verify (SKIP, or CUDA not usable: WARN),
 * with no verification under the key read now, after the key changed (a
 * driver upgrade): not verified since the change is no healthy SKIP, and
 * says the FAIL the previous verdict had (review M4). k, the run's own line, and r,
 * what is stored, become that WARN; later runs that cannot verify it
 * either keep it (kept_fail) until one does.
 */
static void key_changed_warn(struct nvs_check *k, struct nvs_vresult *r, const struct nvs_vcache *prev,
			     enum nvs_vkey_field f, const struct nvs_vkey *now_key)
{
	const struct nvs_vresult *p = prev_result(prev, k->name);
	char msg[1024];

	snprintf(msg, sizeof(msg), "not verified since the %s changed (`%.40s', now `%.40s')%s%.200s: %s",
		 nvs_vkey_name(f), prev->key.v[f], now_key->v[f],
		 p && p->res == CK_FAIL ? "; the previous verdict had a FAIL: " : "",
		 p && p->res == CK_FAIL ? p->msg : "", k->msg);
	snprintf(k->msg, sizeof(k->msg), "%.511s", msg);
	snprintf(k->fix, sizeof(k->fix), "Run `nvsidecar doctor --full' while the GPUs are free (drain the node, or between jobs) to verify them under the new %s",
		 nvs_vkey_name(f));
	k->res = CK_WARN;
	r->res = CK_WARN;
	r->has_last = false;
}

/*
 * Stores what this run verified. A check skipped because a GPU was busy is
 * stored as that SKIP, never as a FAIL, and never as an OK it did not earn,
 * with the last real verification it carries (carry_last); the FAIL the
 * previous verdict in force had for it is kept as it was (its message, fix
 * and time): the job holding the GPU proves no repair, and the health
 * check would resume the node it drained. So is a full-rdma FAIL of
 * another GPU than the one this run verified (kept_fail).
 */
/*
 * nvs_vcache_load()/_save() refused a directory or verdict another user
 * could write (-EPERM), or found a directory at the verdict's name
 * (-EISDIR), which --full does not replace: their message carries its own
 * fix, and the generic one would be wrong.
 */
static bool vcache_says_fix(int ret)
{
	return ret == -EPERM || ret == -EISDIR;
}

static void full_store(struct nvs_checks *c, const struct nvs_doctor_opts *o, const struct full_run *run)
{
	struct nvs_vcache *v = calloc(1, sizeof(*v)), *prev = calloc(1, sizeof(*prev));
	unsigned int max_age = nvs_env_verdict_max_age(NVS_VCACHE_MAX_AGE_DEF);
	char dir[4096], err[4400], kept[1024] = "", why[512];
	int64_t now = (int64_t)time(NULL);
	bool usable = false, same_key = false, loaded = false;
	enum nvs_vkey_field changed = VK_N;
	int ret;

	if (!v || !prev) {
		add(c, CK_WARN, "full", "full-cache", "Out of memory: the verdict was not stored");
		goto out;
	}
	nvs_vcache_dir(o->root, dir, sizeof(dir));
	nvs_vkey_read(&v->key, o->root);
	v->written = now;
	if (!nvs_vcache_load(prev, dir, err, sizeof(err))) {
		loaded = true;
		changed = nvs_vkey_diff(&prev->key, &v->key);
		same_key = changed == VK_N && now >= prev->written;
		usable = same_key && now - prev->written <= (int64_t)max_age;
	}
	for (size_t i = 0; i < c->n && v->n < NVS_VCACHE_MAX; ++i) {
		struct nvs_check *k = &c->v[i];
		struct nvs_vresult *r = &v->r[v->n];
		const struct nvs_vresult *f;

		if (!cached_layer(k->layer))
			continue;
		f = kept_fail(prev, usable, k, run, why, sizeof(why));
		if (f) {
			size_t o2 = strlen(kept);

			*r = *f;
			v->n++;
			snprintf(kept + o2, sizeof(kept) - o2, "%s%s", o2 ? ", " : "", why);
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->res = k->res;
		r->verified = now;
		r->gpu = !strcmp(k->name, "full-rdma") ? run->rdma_gpu : -1;
		if (unverified(run, k->name) && k->res == CK_SKIP)
			carry_last(r, same_key ? prev_result(prev, k->name) : NULL, now);
		if (unverified(run, k->name) && k->res != CK_FAIL && loaded && changed != VK_N)
			key_changed_warn(k, r, prev, changed, &v->key);
		snprintf(r->layer, sizeof(r->layer), "%s", k->layer);
		snprintf(r->name, sizeof(r->name), "%s", k->name);
		snprintf(r->msg, sizeof(r->msg), "%s", k->msg);
		snprintf(r->fix, sizeof(r->fix), "%s", k->fix);
		v->n++;
	}
	ret = nvs_vcache_save(v, dir, err, sizeof(err));
	if (ret) {
		add(c, CK_WARN, "full", "full-cache", "the verdict was not stored: %s", err);
		/* an untrusted directory or a non-file at the name: err says the fix */
		if (!vcache_says_fix(ret))
			fix(c, "Later `doctor' runs and Slurm's health check cannot use this verdict: make %s writable, or set NVSIDECAR_STATE_DIR to a per-node writable directory (a read-only root needs one)",
			    dir);
	} else if (kept[0]) {
		add(c, CK_WARN, "full", "full-cache",
		    "verdict stored in %s/%s, keeping the last verdict's %s: this run could not check that again (a GPU was busy, CUDA was not usable, or the probe hung), and that, or a pass on other GPUs, is no evidence of a repair",
		    dir, NVS_VCACHE_FILE, kept);
		fix(c, "Run `nvsidecar doctor --full' when the GPUs are free (the node idle or drained) to verify them again");
	} else {
		add(c, CK_OK, "full", "full-cache", "verdict stored in %s/%s for later runs (driver %s %s, kernel %s, BIOS %s %s)",
		    dir, NVS_VCACHE_FILE, v->key.v[VK_DRIVER], v->key.v[VK_FLAVOUR], v->key.v[VK_KERNEL],
		    v->key.v[VK_BIOS_VERSION], v->key.v[VK_BIOS_DATE]);
	}
	settings_warn(c, dir);
out:
	free(v);
	free(prev);
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
		if (!vcache_says_fix(ret))
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
		char l[32];

		/* the layers this run checked itself are its own answer */
		if (o->mode == NVS_DOCTOR_DEFAULT && strcmp(r->layer, "full"))
			continue;
		/*
		 * A busy GPU's SKIP verified nothing: what counts is the last
		 * real verification it carries. Older than max_age, it is
		 * stale like a verdict that old (review M2): a WARN, never a
		 * fresh-looking SKIP however often --full recorded one.
		 */
		if (r->res == CK_SKIP && r->has_last) {
			char last[96];

			age_str(now - r->last, l, sizeof(l));
			if (r->last_res == CK_SKIP)
				snprintf(last, sizeof(last), "not verified in the %s since it was first skipped", l);
			else
				snprintf(last, sizeof(last), "last verified %s ago (%s)", l, nvs_check_result_name(r->last_res));
			if (now < r->last || now - r->last > (int64_t)max_age) {
				add(c, CK_WARN, "full", "full-cache",
				    "stale: %s was %s, longer than %u s (NVSIDECAR_VERDICT_MAX_AGE); every `doctor --full' since skipped it: %s",
				    r->name, last, max_age, r->msg);
				fix(c, "Run `nvsidecar doctor --full' while the GPUs are free (drain the node, or between jobs) to verify them again");
				continue;
			}
			add(c, r->res, r->layer, r->name, "%s (recorded %s ago by `doctor --full', key unchanged; %s)",
			    r->msg, age_str(now - r->verified, a, sizeof(a)), last);
		} else {
			/* a SKIP verified nothing (a busy GPU's check did not run): it was recorded */
			add(c, r->res, r->layer, r->name, "%s (%s %s ago by `doctor --full', key unchanged)", r->msg,
			    r->res == CK_SKIP ? "recorded" : "verified", age_str(now - r->verified, a, sizeof(a)));
		}
		if (r->fix[0])
			fix(c, "%s", r->fix);
	}
out:
	free(v);
	free(now_key);
}
