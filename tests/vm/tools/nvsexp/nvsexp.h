/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The ioctl of /dev/nvsexp (tests/vm/tools/nvsexp/nvsexp.c), shared with
 * tests/vm/tools/dmabuf_probe.c. Test-only: no stable ABI.
 */
#ifndef NVSEXP_H
#define NVSEXP_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* How the exporter hands out addresses (both of nv-dmabuf.c's ways). */
enum nvsexp_mode {
	NVSEXP_MODE_IOMMU,	/* dma_map_resource() for the importer */
	NVSEXP_MODE_PCIE,	/* raw BAR addresses, no bus-address mark */
	NVSEXP_MODE_DYNAMIC,	/* as IOMMU, but a dynamic exporter (pin/unpin) */
};

struct nvsexp_export {
	char bdf[16];		/* the device whose BAR is exported */
	__u32 bar;		/* BAR index */
	__u32 mode;		/* enum nvsexp_mode */
	__u64 offset;		/* into the BAR, page aligned */
	__u64 size;		/* page aligned, > 0 */
};

/* Returns a new dma-buf fd (O_CLOEXEC) for the range. */
#define NVSEXP_EXPORT _IOW('N', 0x40, struct nvsexp_export)

struct nvsexp_hold {
	__s32 fd;		/* a dma-buf of the caller */
	__u32 ms;		/* how long to hold its reservation lock */
};

/*
 * Holds the dma-buf's reservation lock for ms (a signal ends it early),
 * as an exporter busy with the buffer would; the module parameter
 * "holding" reads 1 meanwhile.
 */
#define NVSEXP_HOLD _IOW('N', 0x41, struct nvsexp_hold)

#endif /* NVSEXP_H */
