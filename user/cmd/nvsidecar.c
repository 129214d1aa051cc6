// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar: companion tool for the nvsidecar kernel module and for
 * GPUDirect/P2P validation on consumer NVIDIA GPUs.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

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

/*
 * Runs subcommand i. --json given before the subcommand moves after it
 * (before any `--'), since each subcommand parses its own options.
 */
static int run(size_t i, int argc, const char *argv[], bool json)
{
	const char *args[256];
	int n = 0, j;

	if (!json)
		return subcommands[i].fn(argc, argv);
	if (argc >= (int)(sizeof(args) / sizeof(args[0])) - 1)
		return out_usage(NULL, "Too many arguments (%d)", argc);
	for (j = 0; j < argc && strcmp(argv[j], "--"); ++j)
		args[n++] = argv[j];
	args[n++] = "--json";
	for (; j < argc; ++j)
		args[n++] = argv[j];
	args[n] = NULL;
	return subcommands[i].fn(n, args);
}

static ssize_t find(const char *name)
{
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); ++i)
		if (subcommands[i].fn && !strcmp(name, subcommands[i].name))
			return i;
	return -1;
}

int main(int argc, const char *argv[])
{
	bool json_first = false;
	ssize_t i;

	PROG_NAME = argv[0];
	/* `nvsidecar --json CMD ...' is `nvsidecar CMD --json ...' */
	while (argc > 1 && !strcmp(argv[1], "--json")) {
		json_first = true;
		argv[1] = argv[0];
		++argv;
		--argc;
	}
	out_set_json(json_first);

	if (argc == 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--version") ||
			  !strcmp(argv[1], "version")) && !json_first) {
		printf("nvsidecar %s\n", NVS_TOOL_VERSION);
		return out_finish(NVS_EX_OK);
	}
	/* `nvsidecar --json --help' is help too: there is no document to give */
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
		out_set_json(false);
		show_usage(stdout);
		return out_finish(NVS_EX_OK);
	}
	/* `nvsidecar help CMD' is `nvsidecar CMD --help' */
	if (argc == 3 && !strcmp(argv[1], "help")) {
		static const char *help[] = { NULL, "--help", NULL };

		i = find(argv[2]);
		if (i < 0)
			return out_usage(NULL, "No help for `%s': it is not a subcommand", argv[2]);
		help[0] = argv[2];
		return out_finish(subcommands[i].fn(2, help));
	}
	if (argc == 1) {
		if (json_first)
			return out_usage(NULL, "--json needs a subcommand");
		show_usage(stderr);
		return NVS_EX_USAGE;
	}

	i = find(argv[1]);
	if (i >= 0) {
		out_set_json(json_first || wants_json(argc, argv));
		return out_finish(run(i, argc - 1, argv + 1, json_first));
	}

	out_set_json(json_first || wants_json(argc, argv));
	return out_usage(NULL, "Invalid subcommand: `%s'", argv[1]);
}
