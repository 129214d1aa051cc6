// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The idle-fix state file (/run/nvsidecar/idle-fix.state, or --state FILE):
 * read and written back by a whole `idle-fix --dry-run' run, against the
 * tests' fake NVML (tests/nvml/fakenvml.c, built beside this target) with
 * three GPUs. Utilisation stays under the threshold, so no context is
 * created and nothing goes to syslog; each GPU's history is still looked up
 * in the state by bus id.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/idlefix.h"
#include "fuzz.h"

static char state[PATH_MAX], nvml[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char self[PATH_MAX], gpus[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	FILE *f;

	(void)argc;
	(void)argv;
	if (n <= 0)
		abort();
	self[n] = 0;
	slash = strrchr(self, '/');
	*slash = 0;
	snprintf(nvml, sizeof(nvml), "%s/libnvidia-ml.so.1", self);
	snprintf(state, sizeof(state), "%s/idle-fix.state", nvs_fuzz_dir());
	snprintf(gpus, sizeof(gpus), "%s/nvml.gpus", nvs_fuzz_dir());
	f = fopen(gpus, "w");
	if (!f)
		abort();
	/* NVML's own bus id forms differ from the state's: both are compared */
	fprintf(f, "0000:03:00.0 80 0 61 310\n0000:04:00.0 100 1 70 300\n00000001:81:00.0 5 0 40 30\n");
	fclose(f);
	setenv("FAKE_NVML_STATE", gpus, 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nvs_idlefix_opts o;
	struct nvs_idlefix_result r;
	char err[1024];
	int fd;

	fd = open(state, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	nvs_idlefix_opts_init(&o);
	o.threshold = 101;
	o.dry_run = true;
	o.state = state;
	o.nvml = nvml;
	if (!nvs_idlefix_run(&o, &r, err, sizeof(err)))
		nvs_idlefix_free(&r);
	return 0;
}
