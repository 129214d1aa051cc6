// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar: companion tool for the nvsidecar kernel module and for
 * GPUDirect/P2P validation on consumer NVIDIA GPUs.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"

static const struct {
	const char *name;
	int (*fn)(int argc, const char *argv[]);
	const char *description;
} subcommands[] = {
	{ "status", status_main, "Shows the module, its GPUs and a sensor summary" },
	{ "thermal", thermal_main, "Shows, watches or records the thermal sensors" },
	{ "set", set_main, "Changes the sample rate, thresholds or peaks of a GPU" },
	{ "events", events_main, "Prints threshold and hotplug events as they arrive" },
	{ "libcuda", libcuda_main, "Finds, patches and verifies the libcuda dma-buf gate" },
	{ "dmabuf", dmabuf_main, "Imports a dma-buf in the kernel and reports how it maps" },
	{ "topo", topo_main, "Reports PCIe topology, Resizable BAR, ACS and IOMMU" },
	{ "p2p", p2p_main, "Verifies CUDA peer-to-peer copies and measures them" },
	{ "nccl-check", nccl_check_main, "Reads NCCL_DEBUG=INFO logs for the transport used" },
	{ "rdma", rdma_main, "Validates RDMA into GPU memory against host memory" },
	{ "doctor", doctor_main, "The node's verdict: every layer checked, for people and health checks" },
	{ "idle-fix", idle_fix_main, "Clears GPUs stuck busy with no process (a CUDA context)" },
};

static void show_usage(FILE *file)
{
	fprintf(file, "Usage: %s <cmd> [<args>]\n\n", PROG_NAME);
	fprintf(file, "Available subcommands:\n");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); ++i)
		if (subcommands[i].fn)
			fprintf(file, "  %-11s %s\n", subcommands[i].name, subcommands[i].description);
	fprintf(file, "\nEach subcommand takes --help. Version %s.\n", NVS_TOOL_VERSION);
}

/* --json anywhere before `--' asks for JSON, also for an argument error. */
static bool wants_json(int argc, const char *argv[])
{
	for (int i = 2; i < argc && strcmp(argv[i], "--"); ++i)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

int main(int argc, const char *argv[])
{
	PROG_NAME = argv[0];

	if (argc == 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--version") ||
			  !strcmp(argv[1], "version"))) {
		printf("nvsidecar %s\n", NVS_TOOL_VERSION);
		return out_finish(NVS_EX_OK);
	}
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "help"))) {
		show_usage(stdout);
		return out_finish(NVS_EX_OK);
	}
	if (argc == 1) {
		show_usage(stderr);
		return NVS_EX_USAGE;
	}

	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); ++i) {
		if (strcmp(argv[1], subcommands[i].name) || !subcommands[i].fn)
			continue;
		out_set_json(wants_json(argc, argv));
		return out_finish(subcommands[i].fn(argc - 1, argv + 1));
	}

	out_set_json(wants_json(argc, argv));
	return out_usage(NULL, "Invalid subcommand: `%s'", argv[1]);
}
