// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's layers (module, GPUs, PCIe topology, patched libcuda), each
 * checked and recorded separately, so that an admin after a driver upgrade,
 * or Slurm's HealthCheckProgram, sees which layer broke. A layer that cannot
 * run is skipped with the reason; the others still run. Nothing here
 * prints: `doctor' renders the checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/doctor.h"
#include "check/topo.h"
#include "common/exit.h"
#include "common/out.h"
#include "libcuda/manifest.h"
#include "libnvsidecar.h"
#include "sys/pci.h"

#define CHILD_OUT_MAX 65536

static const char *const result_name[] = { "OK", "WARN", "FAIL", "SKIP" };

const char *nvs_check_result_name(enum nvs_check_result r)
{
	return r <= CK_SKIP ? result_name[r] : "?";
}

static __attribute__((format(printf, 5, 6))) void add(struct nvs_checks *c, enum nvs_check_result res,
							const char *layer, const char *name,
							const char *fmt, ...)
{
	struct nvs_check *k;
	va_list ap;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct nvs_check *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	k = &c->v[c->n++];
	memset(k, 0, sizeof(*k));
	k->res = res;
	snprintf(k->layer, sizeof(k->layer), "%s", layer);
	snprintf(k->name, sizeof(k->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
}

/* Sets the fix of the check added last. */
static __attribute__((format(printf, 2, 3))) void fix(struct nvs_checks *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->n || c->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(c->v[c->n - 1].fix, sizeof(c->v[c->n - 1].fix), fmt, ap);
	va_end(ap);
}

/* ---- module ---- */

static struct nvs_handle *check_module(struct nvs_checks *c)
{
	struct nvs_handle *h = NULL;
	struct stat st;
	bool in_sysfs = !stat("/sys/module/nvsidecar", &st) && S_ISDIR(st.st_mode);
	char ver[64] = "";
	int ret;

	if (in_sysfs)
		add(c, CK_OK, "module", "module-loaded", "nvsidecar module loaded");
	else
		add(c, CK_FAIL, "module", "module-loaded", "nvsidecar module is not loaded (no /sys/module/nvsidecar)");
	if (!in_sysfs)
		fix(c, "Load it with `modprobe nvsidecar'; if that fails after a kernel or driver upgrade, check `dkms status nvsidecar' and rebuild with `dkms autoinstall'");

	if (!in_sysfs) {
		add(c, CK_SKIP, "module", "module-version", "module not loaded, no version to compare with tool %s",
		    NVS_TOOL_VERSION);
	} else if (nvs_module_version(ver, sizeof(ver)) < 0 || !ver[0]) {
		add(c, CK_WARN, "module", "module-version", "Unable to read the module version: %s", strerror(errno));
		fix(c, "Check /sys/module/nvsidecar/version; reinstall the nvsidecar-dkms package");
	} else if (strcmp(ver, NVS_TOOL_VERSION)) {
		add(c, CK_WARN, "module", "module-version", "module %s, tool %s", ver, NVS_TOOL_VERSION);
		fix(c, "Install matching versions and reload: `modprobe -r nvsidecar && modprobe nvsidecar' (`dkms status nvsidecar' lists the built versions)");
	} else {
		add(c, CK_OK, "module", "module-version", "module %s matches the tool", ver);
	}

	ret = nvs_open(&h);
	if (ret < 0) {
		const char *e = nvs_last_error(NULL);

		add(c, CK_FAIL, "module", "module-netlink", "generic netlink family not reachable: %s",
		    e && *e ? e : strerror(-ret));
		fix(c, "Load the module with `modprobe nvsidecar'; `dkms status nvsidecar' shows whether it is built for the running kernel (`uname -r')");
		return NULL;
	}
	add(c, in_sysfs ? CK_OK : CK_WARN, "module", "module-netlink", "generic netlink family reachable, version %u%s",
	    nvs_family_version(h), in_sysfs ? "" : ", but /sys/module is not visible here");
	return h;
}

/* ---- GPUs ---- */

static void check_gpu(struct nvs_checks *c, const struct nvs_gpu_info *g)
{
	const struct nvs_sensor_info *hot = NULL, *alarm = NULL;
	char name[16], a[16], b[16], hs[64] = "", invalid[256] = "";
	unsigned int valid = 0, nalarm = 0;
	size_t ilen = 0;

	snprintf(name, sizeof(name), "gpu%u", g->index);
	for (unsigned int i = 0; i < g->nsensors; ++i) {
		const struct nvs_sensor_info *s = &g->sensors[i];

		if (!s->valid) {
			if (ilen < sizeof(invalid))
				ilen += snprintf(invalid + ilen, sizeof(invalid) - ilen, "%s%s", ilen ? " " : "", s->label);
			continue;
		}
		valid++;
		/* the hotspot sensor when there is one, else the hottest */
		if (!hot || !strcmp(s->label, "hotspot") || (strcmp(hot->label, "hotspot") && s->mc > hot->mc))
			hot = s;
		if (s->alarm && nalarm++ == 0)
			alarm = s;
	}
	if (hot)
		snprintf(hs, sizeof(hs), ", %s %s °C", hot->label, nvs_format_mc(a, sizeof(a), hot->mc));

	switch (g->status) {
	case NVS_STATUS_OK:
		break;
	case NVS_STATUS_ASLEEP:
		add(c, CK_OK, "gpu", name, "%s %s asleep (runtime suspended; sensors are read once it wakes)%s%s",
		    g->busid, g->chip, g->reason[0] ? ": " : "", g->reason);
		return;
	case NVS_STATUS_NO_DRIVER:
		add(c, CK_FAIL, "gpu", name, "%s %s no-driver%s%s", g->busid, g->chip, g->reason[0] ? ": " : "",
		    g->reason);
		fix(c, "The NVIDIA driver is not bound to %s: check `lsmod | grep nvidia' and `dmesg | grep -i nvrm'; after a driver upgrade reboot or reload nvidia",
		    g->busid);
		return;
	case NVS_STATUS_UNAVAILABLE:
		add(c, CK_FAIL, "gpu", name, "%s %s unavailable%s%s", g->busid, g->chip, g->reason[0] ? ": " : "",
		    g->reason);
		fix(c, "The GPU does not answer (fallen off the bus or resetting): check `dmesg' for Xid and AER errors and `nvidia-smi'; drain the node and power-cycle it if it persists");
		return;
	case NVS_STATUS_REMOVED:
		add(c, CK_FAIL, "gpu", name, "%s %s removed%s%s", g->busid, g->chip, g->reason[0] ? ": " : "",
		    g->reason);
		fix(c, "The device left the PCI bus: check `dmesg' for surprise-removal or AER errors, then `echo 1 > /sys/bus/pci/rescan' or reboot");
		return;
	default:
		add(c, CK_FAIL, "gpu", name, "%s unknown status %u", g->busid, g->status);
		fix(c, "Update the nvsidecar tool to match the module");
		return;
	}

	if (!g->nsensors) {
		add(c, CK_WARN, "gpu", name, "%s %s ok but reports no sensor", g->busid, g->chip);
		fix(c, "Check `nvsidecar thermal' and the kernel log for why the chip's sensors were not found");
	} else if (valid < g->nsensors) {
		add(c, CK_WARN, "gpu", name, "%s %s ok, %u of %u sensors valid (no reading: %s)%s", g->busid, g->chip,
		    valid, g->nsensors, invalid, hs);
		fix(c, "Watch them with `nvsidecar thermal'; sensors that stay invalid point at a memory module or firmware problem");
	} else if (nalarm) {
		add(c, CK_WARN, "gpu", name, "%s %s ok, %u sensor(s) over threshold: %s %s °C > %s °C%s", g->busid,
		    g->chip, nalarm, alarm->label, nvs_format_mc(a, sizeof(a), alarm->mc),
		    nvs_format_mc(b, sizeof(b), alarm->max), hs);
		fix(c, "Check cooling (fans, airflow, thermal pads) and the load; `nvsidecar thermal' shows every sensor");
	} else {
		add(c, CK_OK, "gpu", name, "%s %s ok, %u/%u sensors valid%s", g->busid, g->chip, valid, g->nsensors, hs);
	}
}

static void check_gpus(struct nvs_checks *c, struct nvs_handle *h)
{
	struct nvs_gpu_info *gpus = NULL;
	size_t n = 0;
	int ret;

	if (!h) {
		add(c, CK_SKIP, "gpu", "gpus", "the module's netlink family is not reachable");
		return;
	}
	ret = nvs_gpu_list(h, &gpus, &n);
	if (ret < 0) {
		const char *e = nvs_last_error(h);

		add(c, CK_FAIL, "gpu", "gpus", "Unable to list the GPUs: %s", e && *e ? e : strerror(-ret));
		fix(c, "Check the kernel log (`dmesg | grep nvsidecar') and reload the module");
		return;
	}
	if (!n) {
		add(c, CK_WARN, "gpu", "gpus", "the module watches no GPU");
		fix(c, "Check `lspci -d 10de:' lists the cards and `dmesg | grep nvsidecar' for why they were not taken");
	}
	for (size_t i = 0; i < n; ++i)
		check_gpu(c, &gpus[i]);
	free(gpus);
}

/* ---- topology ---- */

static void check_topology(struct nvs_checks *c, const char *dump, const struct nvs_pci_id *ids, size_t nids)
{
	struct nvs_pci p = { 0 };
	struct nvs_findings f = { 0 };
	char err[512], name[96];
	size_t gpus = 0, limited = 0, warns;

	if (nvs_pci_scan(&p, dump, ids, nids, err, sizeof(err))) {
		add(c, CK_FAIL, "topology", "topo-scan", "%s", err);
		fix(c, dump ? "Pass a readable `lspci -xxxx' dump to --pci-dump" :
			      "Check /sys/bus/pci is mounted and readable");
		return;
	}
	if (nvs_topo_findings(&p, &f)) {
		add(c, CK_FAIL, "topology", "topo-scan", "Unable to analyse the topology: %s", strerror(ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < p.n; ++i) {
		gpus += p.devs[i].role == NVS_ROLE_GPU;
		limited += p.devs[i].role != NVS_ROLE_OTHER && p.devs[i].cfg_len <= 64;
	}
	warns = nvs_topo_count(&f, NVS_SEV_WARN);
	if (limited) {
		add(c, CK_WARN, "topology", "topo-config-limited",
		    "only 64 bytes of PCI config space readable on %zu device(s): link, ACS and Resizable BAR were not judged",
		    limited);
		fix(c, "Run `nvsidecar doctor' as root");
	}
	for (size_t i = 0; i < f.n; ++i) {
		const struct nvs_finding *x = &f.v[i];

		snprintf(name, sizeof(name), "topo-%s@%s", x->id, x->where);
		add(c, x->sev == NVS_SEV_WARN ? CK_WARN : CK_OK, "topology", name, "%s%s",
		    x->sev == NVS_SEV_WARN ? "" : "note: ", x->what);
		fix(c, "%s", x->fix);
	}
	if (!warns)
		add(c, CK_OK, "topology", "topo", "%zu GPU(s) in %s, no topology warnings", gpus, p.source);
out:
	nvs_findings_free(&f);
	nvs_pci_free(&p);
}

/* ---- libcuda ---- */

/* Runs `nvsidecar libcuda status --lib LIB --json' and collects its output. */
static int run_libcuda_status(const char *lib, char *out, size_t outlen, char *errb, size_t errlen, int *status)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	size_t no = 0, ne = 0;
	pid_t pid;
	int e;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		goto fail;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		goto fail;
	if (!pid) {
		const char *argv[] = { PROG_NAME, "libcuda", "status", "--lib", lib, "--json", NULL };

		if (dup2(po[1], STDOUT_FILENO) < 0 || dup2(pe[1], STDERR_FILENO) < 0)
			_exit(127);
		execv("/proc/self/exe", (char *const *)argv);
		fprintf(stderr, "Unable to run /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	/* Both pipes at once: a child blocked on a full stderr pipe never exits. */
	for (;;) {
		struct pollfd fds[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		bool open_any = false;

		for (int i = 0; i < 2; ++i)
			open_any |= fds[i].fd >= 0;
		if (!open_any)
			break;
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; ++i) {
			char tmp[4096], *buf = i ? errb : out;
			size_t *len = i ? &ne : &no, cap = i ? errlen : outlen;
			ssize_t r;

			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(fds[i].fd, tmp, sizeof(tmp));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(fds[i].fd);
				if (i)
					pe[0] = -1;
				else
					po[0] = -1;
				continue;
			}
			if (*len + 1 < cap) {
				size_t take = (size_t)r < cap - 1 - *len ? (size_t)r : cap - 1 - *len;

				memcpy(buf + *len, tmp, take);
				*len += take;
			}
		}
	}
	out[no] = 0;
	errb[ne] = 0;
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			goto fail;
	for (int i = 0; i < 2; ++i) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return 0;
fail:
	e = errno;
	for (int i = 0; i < 2; ++i) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return -e;
}

/* The value of "key": "value" in a JSON text, without a parser: good enough for one enum string. */
static void json_field(const char *text, const char *key, char *buf, size_t len)
{
	char pat[64];
	const char *s, *e;

	buf[0] = 0;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	s = strstr(text, pat);
	if (!s)
		return;
	s += strlen(pat);
	s += strspn(s, " \t\n");
	if (*s != '"')
		return;
	e = strchr(++s, '"');
	if (e)
		snprintf(buf, len, "%.*s", (int)(e - s), s);
}

static void first_line(char *s)
{
	s[strcspn(s, "\n")] = 0;
}

static void check_libcuda(struct nvs_checks *c, const char *dir)
{
	char lib[4096], man[4096], verdict[64];
	char *out = NULL, *err = NULL;
	struct stat st;
	int status = 0, ret;

	if (!dir) {
		add(c, CK_SKIP, "libcuda", "libcuda", "no --patched DIR given (the directory `nvsidecar libcuda patch --out DIR' wrote)");
		return;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		add(c, CK_FAIL, "libcuda", "libcuda", "Unable to use --patched `%s': %s", dir,
		    errno && stat(dir, &st) < 0 ? strerror(errno) : "not a directory");
		fix(c, "Pass the directory `nvsidecar libcuda patch --out DIR' wrote, or re-run that command");
		return;
	}
	snprintf(man, sizeof(man), "%s/%s", dir, LC_MANIFEST_NAME);
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	if (access(man, R_OK) < 0) {
		add(c, CK_FAIL, "libcuda", "libcuda", "Unable to read `%s': %s: not a `libcuda patch --out' directory",
		    man, strerror(errno));
		fix(c, "Re-run `nvsidecar libcuda patch --out %s'", dir);
		return;
	}
	out = malloc(CHILD_OUT_MAX);
	err = malloc(CHILD_OUT_MAX);
	if (!out || !err) {
		add(c, CK_FAIL, "libcuda", "libcuda", "Unable to run the libcuda check: %s", strerror(ENOMEM));
		goto out;
	}
	ret = run_libcuda_status(lib, out, CHILD_OUT_MAX, err, CHILD_OUT_MAX, &status);
	if (ret < 0) {
		add(c, CK_FAIL, "libcuda", "libcuda", "Unable to run `%s libcuda status': %s", PROG_NAME, strerror(-ret));
		goto out;
	}
	json_field(out, "verdict", verdict, sizeof(verdict));
	first_line(err);
	if (!WIFEXITED(status)) {
		add(c, CK_FAIL, "libcuda", "libcuda", "`libcuda status --lib %s' died from signal %d", lib,
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		fix(c, "Run `nvsidecar libcuda status --lib %s' by hand and report the crash", lib);
	} else if (WEXITSTATUS(status) == NVS_EX_STALE) {
		add(c, CK_FAIL, "libcuda", "libcuda", "patched copy in %s is stale%s%s", dir, err[0] ? ": " : "", err);
		fix(c, "Re-run nvsidecar libcuda patch --out %s (against the upgraded driver's libcuda)", dir);
	} else if (WEXITSTATUS(status) == 0 && !strcmp(verdict, "patched")) {
		add(c, CK_OK, "libcuda", "libcuda", "patched copy in %s is current", dir);
	} else if (WEXITSTATUS(status) == 0) {
		add(c, CK_WARN, "libcuda", "libcuda", "copy in %s analyses as %s, not patched", dir,
		    verdict[0] ? verdict : "unknown");
		fix(c, "Re-run nvsidecar libcuda patch --out %s", dir);
	} else {
		add(c, CK_FAIL, "libcuda", "libcuda", "`libcuda status --lib %s' exited %d%s%s", lib, WEXITSTATUS(status),
		    err[0] ? ": " : "", err);
		fix(c, "Run `nvsidecar libcuda status --lib %s' for details; re-run nvsidecar libcuda patch --out %s", lib, dir);
	}
out:
	free(out);
	free(err);
}

int nvs_doctor_run(const struct nvs_doctor_opts *o, struct nvs_checks *c)
{
	struct nvs_handle *h;

	memset(c, 0, sizeof(*c));
	h = check_module(c);
	check_gpus(c, h);
	if (h)
		nvs_close(h);
	check_topology(c, o->pci_dump, o->ids, o->nids);
	check_libcuda(c, o->patched);
	if (c->oom) {
		nvs_checks_free(c);
		return -ENOMEM;
	}
	return 0;
}

void nvs_checks_free(struct nvs_checks *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}
