// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The NVIDIA driver layer: the kernel driver is loaded, it is the version
 * the admin expects (driver-version), libcuda is the same version (an
 * upgrade that replaced one half and not the other breaks every CUDA
 * program), and NVML answers; NVML's temperature for each GPU the module
 * watches goes beside the hidden hotspot (check/doctor.c, the textfile).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/doctor.h"
#include "lib/busid.h"
#include "libcuda/report.h"
#include "sys/nvdriver.h"
#include "sys/nvml.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

static void check_libcuda_version(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char *kver)
{
	const char *path, *err;
	char lver[64];
	int ret = nvs_doctor_libcuda_path(c, o, &path, &err);

	if (ret) {
		add(c, kver[0] ? CK_FAIL : CK_SKIP, "driver", "driver-libcuda", "%s", err);
		if (kver[0])
			fix(c, "The kernel driver is loaded but its user-space half is not: reinstall the driver's libcuda (Debian: libcuda1 / nvidia-driver-libs), or set lib in %s",
			    NVS_DOCTOR_CONF);
		return;
	}
	if (!nvs_nvdriver_libcuda_version(path, lver, sizeof(lver))) {
		add(c, CK_WARN, "driver", "driver-libcuda", "%s does not name its version (libcuda.so.VERSION)", path);
		fix(c, "Point lib in %s at the driver's libcuda.so.VERSION", NVS_DOCTOR_CONF);
	} else if (!kver[0]) {
		add(c, CK_SKIP, "driver", "driver-libcuda", "libcuda %s (%s); no kernel driver to compare it with", lver, path);
	} else if (strcmp(lver, kver)) {
		add(c, CK_FAIL, "driver", "driver-libcuda", "libcuda %s but the kernel driver is %s: the two halves of the driver differ",
		    lver, kver);
		fix(c, "A driver upgrade is half done: reboot (or unload and reload nvidia) so that the kernel driver matches, or reinstall the driver %s",
		    kver);
	} else {
		add(c, CK_OK, "driver", "driver-libcuda", "libcuda %s matches the kernel driver (%s)", lver, path);
	}
}

/* NVML: whether it answers, and the driver's temperature of each GPU the module watches. */
static void check_nvml(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char *kver)
{
	struct nvs_nvml_gpu *g = NULL;
	struct nvs_nvml n;
	char err[4400], nver[80] = "";
	size_t ng = 0, matched = 0;
	int ret = nvs_nvml_open(&n, o->nvml[0] ? o->nvml : NULL, err, sizeof(err));

	if (ret == -ENOENT && !o->nvml[0]) {
		add(c, kver[0] ? CK_WARN : CK_SKIP, "driver", "driver-nvml", "%s", err);
		if (kver[0])
			fix(c, "Install the driver's NVML (Debian: libnvidia-ml1) to compare the driver's temperature with the hidden hotspot");
		return;
	}
	if (ret) {
		add(c, kver[0] || o->nvml[0] ? CK_FAIL : CK_SKIP, "driver", "driver-nvml", "%s", err);
		fix(c, "`nvidia-smi' fails the same way; \"Driver/library version mismatch\" means a half-done driver upgrade: reboot");
		return;
	}
	if (nvs_nvml_driver_version(&n, nver, sizeof(nver), err, sizeof(err)))
		nver[0] = 0;
	if (nvs_nvml_gpus(&n, &g, &ng, err, sizeof(err))) {
		add(c, CK_FAIL, "driver", "driver-nvml", "NVML is loaded but cannot list the GPUs: %s", err);
		fix(c, "`nvidia-smi' says more; check `dmesg | grep -i nvrm' for Xid errors");
		nvs_nvml_close(&n);
		return;
	}
	for (size_t i = 0; i < c->ngpus; ++i)
		for (size_t k = 0; k < ng; ++k)
			if (g[k].temp_ok && nvs_same_busid(g[k].busid, c->gpus[i].busid)) {
				c->gpus[i].driver_temp_ok = true;
				c->gpus[i].driver_temp = g[k].temp;
				matched++;
			}
	add(c, CK_OK, "driver", "driver-nvml", "NVML %s answers for %zu GPU(s), %zu of them watched by nvsidecar",
	    nver[0] ? nver : "(no version)", ng, matched);
	free(g);
	nvs_nvml_close(&n);
}

void nvs_doctor_driver(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	char kver[64];

	if (!nvs_nvdriver_version(kver, sizeof(kver))) {
		if (o->driver_version[0]) {
			add(c, CK_FAIL, "driver", "driver-loaded", "no NVIDIA kernel driver loaded, %s expected",
			    o->driver_version);
			fix(c, "`modprobe nvidia' (`dmesg | grep -i nvrm' says why it fails); after an upgrade, `dkms status' shows whether the driver is built for `uname -r'");
		} else {
			add(c, CK_SKIP, "driver", "driver-loaded", "no NVIDIA kernel driver loaded (no /proc/driver/nvidia/version)");
		}
	} else if (o->driver_version[0] && strcmp(kver, o->driver_version)) {
		add(c, CK_FAIL, "driver", "driver-loaded", "NVIDIA kernel driver %s, but %s is expected", kver,
		    o->driver_version);
		fix(c, "Install driver %s and reboot, or update driver-version in %s after a planned upgrade",
		    o->driver_version, NVS_DOCTOR_CONF);
	} else {
		add(c, CK_OK, "driver", "driver-loaded", "NVIDIA kernel driver %s loaded%s", kver,
		    o->driver_version[0] ? ", as expected" : "");
	}
	check_libcuda_version(c, o, kver);
	check_nvml(c, o, kver);
}

int nvs_doctor_libcuda_path(struct nvs_checks *c, const struct nvs_doctor_opts *o, const char **path,
			    const char **err)
{
	if (!c->lib_asked) {
		c->lib_ret = lc_pick_lib(o->lib[0] ? o->lib : NULL, c->lib_path, sizeof(c->lib_path), c->lib_err,
					 sizeof(c->lib_err));
		c->lib_asked = true;
	}
	*path = c->lib_path;
	*err = c->lib_err;
	return c->lib_ret;
}
