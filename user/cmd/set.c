// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libnvsidecar.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/out.h"


static void show_usage(FILE *f, const char *name)
{
	fprintf(f, "Usage: %s %s GPU [sample-hz N] [threshold SENSOR C | threshold SENSOR clear]\n"
		   "       %*s [reset-peaks]\n\n", PROG_NAME, name,
		(int)(strlen(PROG_NAME) + strlen(name) + 4), "");
	fprintf(f,
		"Changes the settings of one GPU (gpuN, N or a PCI bus id), all at once or\n"
		"nothing. Needs root (CAP_NET_ADMIN).\n\n"
		"  sample-hz N           samples per second, 0 (read on demand) to %u\n"
		"  threshold SENSOR C    alarm and event when SENSOR (a label such as hotspot,\n"
		"                        ch0 or mem3) exceeds C °C (%d to %d, e.g. 95.5)\n"
		"  threshold SENSOR clear  removes that threshold\n"
		"  reset-peaks           restarts the peak and low history of every sensor\n\n"
		"Exit codes: 0 success, 1 failure, 2 invalid arguments, 3 the module is\n"
		"not loaded, 4 permission denied (run as root).\n",
		NVS_SAMPLE_HZ_MAX, NVS_THRESH_MIN_MC / 1000, NVS_THRESH_MAX_MC / 1000);
}

/* Every argument is checked before the kernel is asked anything. */
static int parse_args(int argc, const char *argv[], struct nvs_set_req *req)
{
	memset(req, 0, sizeof(*req));
	if (argc < 3) {
		fprintf(stderr, argc < 2 ? "Missing the GPU\n" : "Nothing to change\n");
		return -1;
	}
	for (int i = 2; i < argc; ++i) {
		if (!strcmp(argv[i], "sample-hz") && i + 1 < argc) {
			if (req->set_sample_hz) {
				fprintf(stderr, "sample-hz given twice\n");
				return -1;
			}
			if (nvs_parse_u32(argv[++i], 0, NVS_SAMPLE_HZ_MAX, &req->sample_hz) < 0) {
				fprintf(stderr, "Invalid sample rate (0 to %u): `%s'\n",
					NVS_SAMPLE_HZ_MAX, argv[i]);
				return -1;
			}
			req->set_sample_hz = true;
		} else if (!strcmp(argv[i], "threshold") && i + 2 < argc) {
			const char *sensor = argv[++i], *val = argv[++i];

			if (req->thresh_sensor) {
				fprintf(stderr, "Only one threshold per command\n");
				return -1;
			}
			if (!*sensor || strlen(sensor) >= NVS_LABEL_LEN) {
				fprintf(stderr, "Invalid sensor label: `%s'\n", sensor);
				return -1;
			}
			req->thresh_sensor = sensor;
			if (!strcmp(val, "clear")) {
				req->thresh_clear = true;
			} else if (nvs_parse_celsius(val, NVS_THRESH_MIN_MC, NVS_THRESH_MAX_MC,
						     &req->thresh_mc) < 0) {
				fprintf(stderr, "Invalid threshold (%d to %d °C, or `clear'): `%s'\n",
					NVS_THRESH_MIN_MC / 1000, NVS_THRESH_MAX_MC / 1000, val);
				return -1;
			}
		} else if (!strcmp(argv[i], "reset-peaks")) {
			req->reset_peaks = true;
		} else if (!strcmp(argv[i], "sample-hz") || !strcmp(argv[i], "threshold")) {
			fprintf(stderr, "Missing value for `%s'\n", argv[i]);
			return -1;
		} else {
			fprintf(stderr, "Unknown setting: `%s'\n", argv[i]);
			return -1;
		}
	}
	return 0;
}

int set_main(int argc, const char *argv[])
{
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_handle *h = NULL;
	struct nvs_set_req req;
	size_t n = 0;
	int ret = NVS_EX_FAIL;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		show_usage(stdout, argv[0]);
		return NVS_EX_OK;
	}
	if (parse_args(argc, argv, &req) < 0) {
		show_usage(stderr, argv[0]);
		return NVS_EX_USAGE;
	}

	if (nvs_open(&h) < 0) {
		fprintf(stderr, "%s\n", nvs_last_error(NULL));
		ret = errno == ENOENT ? NVS_EX_MISSING : NVS_EX_FAIL;
		goto cleanup;
	}
	if (nvs_gpu_list(h, &gpus, &n) < 0) {
		fprintf(stderr, "Unable to list GPUs: %s\n", nvs_last_error(h));
		goto cleanup;
	}
	if (nvs_parse_gpu(argv[1], gpus, n, &req.gpu) < 0) {
		fprintf(stderr, "No such GPU: `%s' (see `%s status')\n", argv[1], PROG_NAME);
		ret = errno == EINVAL ? NVS_EX_USAGE : NVS_EX_FAIL;
		goto cleanup;
	}
	if (nvs_gpu_set(h, &req) < 0) {
		int err = errno;

		fprintf(stderr, "Unable to change gpu%u: %s\n", req.gpu, nvs_last_error(h));
		if (err == EPERM || err == EACCES)
			ret = NVS_EX_PERM;
		else if (err == ENOENT && req.thresh_sensor)
			fprintf(stderr, "Sensor labels of gpu%u: see `%s thermal --gpu %u'\n",
				req.gpu, PROG_NAME, req.gpu);
		goto cleanup;
	}
	ret = NVS_EX_OK;

cleanup:
	free(gpus);
	nvs_close(h);
	return ret;
}
