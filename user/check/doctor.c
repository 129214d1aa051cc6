// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The doctor's layers, each checked and recorded separately, so that an
 * admin after a driver upgrade, or a node health check (Slurm, NHC,
 * node-problem-detector, Prometheus), sees which layer broke and what to
 * do. A layer that cannot run is skipped with the reason; the others still
 * run. Nothing here prints: `doctor' renders the checks.
 *
 * This file: the run, the module as loaded, the GPUs (count, status, every
 * sensor, limits, the hotspot the driver does not show) and the topology.
 * The module's installation, the driver, libcuda and the GDR gates, and
 * --full are in check/doctor_*.c.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check/doctor.h"
#include "check/topo.h"
#include "lib/exit.h"
#include "lib/format.h"
#include "sys/pci.h"
#include "libnvsidecar.h"

/* Above this the RTX 5090 throttles while the driver may still say 60 °C. */
#define HOTSPOT_THROTTLE_MC 100000
/* "The driver's temperature is not high": this far below the hotspot. */
#define HIDDEN_GAP_MC 20000

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

/* ---- module ---- */

/* Another network namespace than PID 1's: generic netlink families are per namespace. */
static bool other_netns(void)
{
	struct stat a, b;

	return !stat("/proc/self/ns/net", &a) && !stat("/proc/1/ns/net", &b) && a.st_ino != b.st_ino;
}

static struct nvs_handle *check_module(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct nvs_handle *h = NULL;
	struct stat st;
	bool in_sysfs = !stat("/sys/module/nvsidecar", &st) && S_ISDIR(st.st_mode);
	char ver[64] = "";
	int ret;

	if (in_sysfs && (nvs_module_version(ver, sizeof(ver)) < 0 || !ver[0]))
		ver[0] = 0;
	nvs_doctor_module_loaded(c, o, in_sysfs);
	if (in_sysfs && !ver[0]) {
		add(c, CK_WARN, "module", "module-version", "Unable to read the module version: %s", strerror(errno));
		fix(c, "Check /sys/module/nvsidecar/version; reinstall the nvsidecar-dkms package");
	} else if (in_sysfs && strcmp(ver, NVS_TOOL_VERSION)) {
		add(c, CK_WARN, "module", "module-version", "module %s, tool %s", ver, NVS_TOOL_VERSION);
		fix(c, "Install matching versions and reload: `modprobe -r nvsidecar && modprobe nvsidecar' (`dkms status nvsidecar' lists the built versions)");
	} else if (in_sysfs) {
		add(c, CK_OK, "module", "module-version", "module %s matches the tool", ver);
	}

	nvs_doctor_module_install(c, o, in_sysfs, ver);

	ret = nvs_open(&h);
	if (ret < 0) {
		const char *e = nvs_last_error(NULL);

		add(c, in_sysfs ? CK_FAIL : CK_SKIP, "module", "module-netlink", "generic netlink family not reachable: %s",
		    e && *e ? e : strerror(-ret));
		if (in_sysfs && other_netns())
			fix(c, "This process runs in a network namespace of its own (a container?), and the module registers its family in the host's only: run doctor in the host's network namespace (e.g. hostNetwork for a node-problem-detector pod)");
		else if (in_sysfs)
			fix(c, "The module is loaded but its family is not: check `dmesg | grep nvsidecar' and reload it (`modprobe -r nvsidecar && modprobe nvsidecar')");
		return NULL;
	}
	add(c, in_sysfs ? CK_OK : CK_WARN, "module", "module-netlink", "generic netlink family reachable, version %u%s",
	    nvs_family_version(h), in_sysfs ? "" : ", but /sys/module is not visible here");
	return h;
}

/* ---- GPUs ---- */

static const char *status_name(unsigned int s)
{
	switch (s) {
	case NVS_STATUS_OK: return "ok";
	case NVS_STATUS_ASLEEP: return "asleep";
	case NVS_STATUS_NO_DRIVER: return "no-driver";
	case NVS_STATUS_UNAVAILABLE: return "unavailable";
	case NVS_STATUS_REMOVED: return "removed";
	default: return "unknown";
	}
}

/* node_exporter's cleanMetricName: lower case, [^a-z0-9:_] to '_', no '_' at the ends. */
static void prom_clean(const char *in, char *out, size_t len)
{
	size_t n = 0, start = 0;

	for (; *in && n + 1 < len; ++in) {
		char ch = *in >= 'A' && *in <= 'Z' ? (char)(*in - 'A' + 'a') : *in;

		out[n++] = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == ':' || ch == '_' ? ch : '_';
	}
	out[n] = 0;
	while (n && out[n - 1] == '_')
		out[--n] = 0;
	while (out[start] == '_')
		start++;
	memmove(out, out + start, n - start + 1);
}

/*
 * The "chip" label node_exporter's hwmon collector gives a hwmon device
 * parented on this PCI function: its parent device's name and its own,
 * cleaned ("0000:02:00_0_0000:03:00_0" for a GPU behind a switch port).
 */
static void hwmon_chip_label(const char *busid, char *buf, size_t len)
{
	char link[PATH_MAX], real[PATH_MAX], *base, *slash, a[64], b[64];

	buf[0] = 0;
	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", busid);
	if (!realpath(link, real))
		return;
	base = strrchr(real, '/');
	if (!base)
		return;
	*base++ = 0;
	slash = strrchr(real, '/');
	prom_clean(slash ? slash + 1 : real, a, sizeof(a));
	prom_clean(base, b, sizeof(b));
	if (a[0])
		snprintf(buf, len, "%s_%s", a, b);
	else
		snprintf(buf, len, "%s", b);
}

static const struct nvs_doctor_limit *limit_for(const struct nvs_doctor_opts *o, const char *label)
{
	/* the last one given wins (the command line comes after doctor.conf) */
	for (size_t i = o->nlimits; i-- > 0;)
		if (!fnmatch(o->limits[i].sensor, label, 0))
			return &o->limits[i];
	return NULL;
}

static void check_gpu(struct nvs_checks *c, const struct nvs_doctor_opts *o, const struct nvs_gpu_info *g,
		      const struct nvs_doctor_gpu *dg)
{
	const struct nvs_sensor_info *hot = NULL, *alarm = NULL, *over = NULL;
	const struct nvs_doctor_limit *overl = NULL;
	char name[32], a[16], b[16], hs[96] = "", invalid[256] = "";
	unsigned int valid = 0, nalarm = 0, nover = 0;
	size_t ilen = 0;

	snprintf(name, sizeof(name), "gpu%u", g->index);
	for (unsigned int i = 0; i < g->nsensors; ++i) {
		const struct nvs_sensor_info *s = &g->sensors[i];
		const struct nvs_doctor_limit *l;

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
		l = limit_for(o, s->label);
		if (l && s->mc > l->mc && nover++ == 0) {
			over = s;
			overl = l;
		}
	}
	if (hot)
		snprintf(hs, sizeof(hs), ", %s %s °C", hot->label, nvs_format_mc(a, sizeof(a), hot->mc));
	if (hot && dg->driver_temp_ok)
		snprintf(hs + strlen(hs), sizeof(hs) - strlen(hs), " (driver %u °C)", dg->driver_temp);

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

	if (over) {
		add(c, CK_FAIL, "gpu", name, "%s %s: %s %s °C over the limit %s °C%s%s", g->busid, g->chip, over->label,
		    nvs_format_mc(a, sizeof(a), over->mc), nvs_format_mc(b, sizeof(b), overl->mc),
		    nover > 1 ? " (and more)" : "", over == hot ? "" : hs);
		fix(c, "Check cooling (fans, airflow, thermal pads) and the load; the limit is `limit = %s:...' in %s or --limit",
		    overl->sensor, NVS_DOCTOR_CONF);
	} else if (!g->nsensors) {
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

	/*
	 * The hidden hotspot: high while the driver's temperature is not is
	 * how throttling looks from nvidia-smi (a normal temperature, lower
	 * clocks). Without NVML (--quick, no driver) the reading alone says it.
	 */
	if (hot && !strcmp(hot->label, "hotspot") && hot->mc >= HOTSPOT_THROTTLE_MC) {
		snprintf(name, sizeof(name), "gpu%u-hotspot", g->index);
		if (dg->driver_temp_ok && (int64_t)dg->driver_temp * 1000 <= (int64_t)hot->mc - HIDDEN_GAP_MC)
			add(c, CK_WARN, "gpu", name,
			    "%s hotspot %s °C while the driver reports %u °C: the GPU is likely thermal-throttling although nvidia-smi looks normal",
			    g->busid, nvs_format_mc(a, sizeof(a), hot->mc), dg->driver_temp);
		else
			add(c, CK_WARN, "gpu", name, "%s hotspot %s °C: at or over %d °C the RTX 5090 throttles", g->busid,
			    nvs_format_mc(a, sizeof(a), hot->mc), HOTSPOT_THROTTLE_MC / 1000);
		fix(c, "Check the cooler's contact and fans, or lower the power limit (`nvidia-smi -pl'); `nvsidecar thermal --watch' shows the channels");
	}
}

static void check_count(struct nvs_checks *c, const struct nvs_doctor_opts *o, size_t n)
{
	if (o->expect_gpus >= 0 && n < (size_t)o->expect_gpus) {
		add(c, CK_FAIL, "gpu", "gpus", "%zu GPU(s), %d expected", n, o->expect_gpus);
		fix(c, "A GPU is missing: `lspci -d 10de:' and `dmesg' (Xid, AER, \"fallen off the bus\") say whether it left the bus or the module did not take it; reseat or replace the card, or fix expect-gpus in %s",
		    NVS_DOCTOR_CONF);
	} else if (o->expect_gpus >= 0 && n > (size_t)o->expect_gpus) {
		add(c, CK_WARN, "gpu", "gpus", "%zu GPU(s), only %d expected", n, o->expect_gpus);
		fix(c, "Raise expect-gpus in %s to what this node has", NVS_DOCTOR_CONF);
	} else if (o->expect_gpus >= 0) {
		add(c, CK_OK, "gpu", "gpus", "%zu GPU(s), as expected", n);
	} else if (!n) {
		add(c, CK_WARN, "gpu", "gpus", "the module watches no GPU");
		fix(c, "Check `lspci -d 10de:' lists the cards and `dmesg | grep nvsidecar' for why they were not taken; set expect-gpus in %s so that a missing GPU fails this check",
		    NVS_DOCTOR_CONF);
	} else {
		add(c, CK_OK, "gpu", "gpus", "%zu GPU(s) (no expect-gpus set in %s)", n, NVS_DOCTOR_CONF);
	}
}

/* The module's GPUs, into c->gpus; the list itself for check_gpus. */
static int list_gpus(struct nvs_checks *c, struct nvs_handle *h, struct nvs_gpu_info **gpus, size_t *n)
{
	int ret;

	*gpus = NULL;
	*n = 0;
	if (!h)
		return -ENOENT;
	ret = nvs_gpu_list(h, gpus, n);
	if (ret < 0)
		return ret;
	c->gpus = calloc(*n ? *n : 1, sizeof(*c->gpus));
	if (!c->gpus) {
		c->oom = true;
		return -ENOMEM;
	}
	c->ngpus = *n;
	c->counted = true;
	for (size_t i = 0; i < *n; ++i) {
		struct nvs_doctor_gpu *d = &c->gpus[i];
		const struct nvs_gpu_info *g = &(*gpus)[i];

		d->index = g->index;
		snprintf(d->busid, sizeof(d->busid), "%s", g->busid);
		snprintf(d->model, sizeof(d->model), "%s", g->chip);
		snprintf(d->status, sizeof(d->status), "%s", status_name(g->status));
		hwmon_chip_label(g->busid, d->hwmon_chip, sizeof(d->hwmon_chip));
	}
	return 0;
}

static void check_gpus(struct nvs_checks *c, const struct nvs_doctor_opts *o, struct nvs_handle *h,
		       struct nvs_gpu_info *gpus, size_t n, int listed)
{
	if (!h) {
		/* nothing answers: with an expected count that is a failure of its own */
		if (o->expect_gpus > 0) {
			add(c, CK_FAIL, "gpu", "gpus", "0 GPU(s) visible (the module is not loaded), %d expected",
			    o->expect_gpus);
			fix(c, "Load the module (see module-loaded above)");
		} else {
			add(c, CK_SKIP, "gpu", "gpus", "the module's netlink family is not reachable");
		}
		return;
	}
	if (listed < 0) {
		const char *e = nvs_last_error(h);

		add(c, CK_FAIL, "gpu", "gpus", "Unable to list the GPUs: %s", e && *e ? e : strerror(-listed));
		fix(c, "Check the kernel log (`dmesg | grep nvsidecar') and reload the module");
		return;
	}
	check_count(c, o, n);
	for (size_t i = 0; i < n; ++i)
		check_gpu(c, o, &gpus[i], &c->gpus[i]);
}

/* ---- topology ---- */

static void check_topology(struct nvs_checks *c, const char *dump, const struct nvs_pci_id *ids, size_t nids)
{
	struct nvs_pci p = { 0 };
	struct nvs_findings f = { 0 };
	char err[512], name[96];
	size_t gpus = 0, limited = 0, warns;

	c->pci_gpus = c->pci_gb20x = -1;
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
	c->pci_gb20x = 0;
	for (size_t i = 0; i < p.n; ++i) {
		const struct nvs_pci_dev *d = &p.devs[i];
		size_t l = strlen(c->gb20x_busids);

		gpus += d->role == NVS_ROLE_GPU;
		limited += d->role != NVS_ROLE_OTHER && d->cfg_len <= 64;
		if (d->role != NVS_ROLE_GPU || !nvs_gpu_gb20x(d->vendor, d->device))
			continue;
		c->pci_gb20x++;
		snprintf(c->gb20x_busids + l, sizeof(c->gb20x_busids) - l, "%s%s", l ? ", " : "", d->bdf);
	}
	c->pci_gpus = (long)gpus;
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


static double now_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int nvs_doctor_run(const struct nvs_doctor_opts *o, struct nvs_checks *c)
{
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_handle *h;
	size_t n = 0;
	double t0 = now_s(CLOCK_MONOTONIC);
	int listed;

	memset(c, 0, sizeof(*c));
	c->started = now_s(CLOCK_REALTIME);
	h = check_module(c, o);
	listed = list_gpus(c, h, &gpus, &n);
	/* the driver first: it fills in the temperature the driver reports for each GPU */
	if (o->mode != NVS_DOCTOR_QUICK)
		nvs_doctor_driver(c, o);
	check_gpus(c, o, h, gpus, n, listed);
	free(gpus);
	if (h)
		nvs_close(h);
	if (o->mode != NVS_DOCTOR_QUICK) {
		nvs_doctor_display(c, o);
		nvs_doctor_slurm(c, o);
		nvs_doctor_libcuda(c, o);
		check_topology(c, o->pci_dump, o->ids, o->nids);
		nvs_doctor_known(c, o);
	}
	if (o->mode == NVS_DOCTOR_FULL)
		nvs_doctor_full(c, o);
	else
		nvs_doctor_cached(c, o);
	c->seconds = now_s(CLOCK_MONOTONIC) - t0;
	if (c->oom) {
		nvs_checks_free(c);
		return -ENOMEM;
	}
	return 0;
}
