// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * `nvsidecar nccl-check LOG': the log is read by path, sorted and judged
 * against every expectation, as the command does (cmd/nccl_check.c); then
 * read again as `p2p --nccl-log' reads it, one node's lines only.
 */
#include "check/nccl.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024], why[512], where[512];
	const char *path = nvs_fuzz_path(data, size);
	struct nvs_nccl_log log;

	if (!path)
		return -1;
	nvs_nccl_init(&log);
	if (!nvs_nccl_read(&log, path, err, sizeof(err))) {
		nvs_nccl_sort(&log);
		nvs_nccl_truncated(&log);
		nvs_nccl_filtered(&log);
		nvs_nccl_nodes(&log);
		for (size_t i = 0; i < log.n_conns; ++i)
			nvs_nccl_transport_str(log.conns[i].t);
		nvs_nccl_expect_p2p(&log, false, why, sizeof(why), where, sizeof(where));
		nvs_nccl_expect_p2p(&log, true, why, sizeof(why), where, sizeof(where));
		nvs_nccl_expect_gdr(&log, why, sizeof(why), where, sizeof(where));
		nvs_nccl_expect_dmabuf(&log, why, sizeof(why), where, sizeof(where));
	}
	nvs_nccl_free(&log);
	/* as `p2p' reads it: one node's lines (check/p2p.c) */
	log.only_host = "node01";
	if (!nvs_nccl_read(&log, path, err, sizeof(err))) {
		for (size_t i = 0; i < log.hosts.n; ++i)
			nvs_nccl_host_match(log.hosts.v[i].host, "Node01.example.com");
		nvs_nccl_gpus_named(&log);
		nvs_nccl_expect_p2p(&log, false, why, sizeof(why), where, sizeof(where));
	}
	nvs_nccl_free(&log);
	return 0;
}
