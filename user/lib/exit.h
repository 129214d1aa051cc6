/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIB_EXIT_H
#define LIB_EXIT_H

/*
 * One exit-code table for every subcommand (nvsidecar(8), EXIT STATUS).
 * A code means the same thing wherever it appears, so a script can act on
 * it without knowing which subcommand ran; each --help lists the codes
 * that subcommand can return. Never renumber: scripts depend on them.
 */
enum nvs_exit {
	NVS_EX_OK = 0,		/* done; every check passed */
	NVS_EX_FAIL = 1,	/* a check failed, or the work could not be done */
	NVS_EX_USAGE = 2,	/* invalid arguments, or an input that cannot be used */
	/* something needed is absent: the nvsidecar module, libcuda, a CUDA device, an RDMA device */
	NVS_EX_MISSING = 3,
	NVS_EX_PERM = 4,	/* permission denied: run as root */
	NVS_EX_LOST = 5,	/* data was lost: samples (thermal --record), events */
	/* libcuda's dma-buf gate is closed (export refused with CUDA_ERROR_NOT_SUPPORTED, attributes 0) */
	NVS_EX_GATE = 6,
	/*
	 * a component refused: the dma-buf exporter refused the importer, the
	 * NIC refused the memory registration (a libcuda with no provable
	 * patch is an input that cannot be used: NVS_EX_USAGE)
	 */
	NVS_EX_REFUSED = 7,
	NVS_EX_NOT_BAR1 = 8,	/* GPU memory was mapped, but not through BAR1 */
	NVS_EX_STALE = 9,	/* a patched libcuda copy no longer matches the driver */
	NVS_EX_CONNECT = 10,	/* an RDMA connection could not be made */
	NVS_EX_TRANSFER = 11,	/* an RDMA transfer failed or timed out */
	/*
	 * a GPU another process holds: CUDA_ERROR_DEVICE_UNAVAILABLE (46) at
	 * context creation on a GPU in exclusive-process compute mode (p2p,
	 * rdma; doctor --full reads it as SKIP, never the output's text)
	 */
	NVS_EX_BUSY = 12,
};

/* The code for an errno from libnvsidecar (ENOENT: the module is missing). */
int nvs_exit_for_errno(int err);
/* The code for an errno about a path the admin gave (ENOENT: a bad argument). */
int nvs_exit_for_path(int err);

#endif
