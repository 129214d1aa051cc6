// SPDX-License-Identifier: GPL-2.0 OR MIT
/* /etc/nvsidecar/doctor.conf (or --config FILE): read by path into defaults. */
#include "check/doctor.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	const char *path = nvs_fuzz_path(data, size);
	struct nvs_doctor_opts o;

	if (!path)
		return -1;
	nvs_doctor_opts_init(&o);
	nvs_doctor_conf_load(&o, path, err, sizeof(err));
	return 0;
}
