/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef PCI_H
#define PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The PCI backend (libpci). It snapshots every device once, from sysfs or
 * from an lspci -x style dump, with the few capabilities that decide
 * whether PCIe peer-to-peer and GPUDirect RDMA can work: the PCIe link, ACS
 * on bridges and Resizable BAR. Extended capabilities are walked by hand so
 * that a dump and a live machine go through the same code.
 */

/* ACS capability and control bits (PCIe base spec 7.7.8) */
#define NVS_ACS_SV	0x0001	/* source validation */
#define NVS_ACS_TB	0x0002	/* translation blocking */
#define NVS_ACS_RR	0x0004	/* P2P request redirect */
#define NVS_ACS_CR	0x0008	/* P2P completion redirect */
#define NVS_ACS_UF	0x0010	/* upstream forwarding */
#define NVS_ACS_EC	0x0020	/* P2P egress control */
#define NVS_ACS_DT	0x0040	/* direct translated P2P */
/* The bits that send peer traffic up to the root complex or drop it. */
#define NVS_ACS_P2P_BLOCKING	(NVS_ACS_RR | NVS_ACS_CR | NVS_ACS_EC)

/* PCIe device/port types (PCIe capability, bits 7:4 of the flags) */
#define NVS_PCIE_ENDPOINT	0x0
#define NVS_PCIE_LEG_END	0x1
#define NVS_PCIE_ROOT_PORT	0x4
#define NVS_PCIE_UPSTREAM	0x5
#define NVS_PCIE_DOWNSTREAM	0x6
#define NVS_PCIE_PCIE_BRIDGE	0x7
#define NVS_PCIE_RC_END		0x9

enum nvs_pci_role {
	NVS_ROLE_OTHER,
	NVS_ROLE_GPU,
	NVS_ROLE_NIC,	/* an RDMA capable network adapter */
	NVS_ROLE_BRIDGE,
};

struct nvs_pci_link {
	bool present;		/* has a PCIe capability */
	/* NVS_PCIE_*, -1 without a PCIe capability, -2 a bridge whose capabilities were unreadable */
	int port_type;
	int cur_speed, cur_width;	/* link status; speed 1 = 2.5 GT/s .. 6 = 64 GT/s */
	int max_speed, max_width;	/* link capabilities */
};

struct nvs_pci_rebar {
	bool present;
	uint64_t cur;		/* bytes */
	uint64_t supported;	/* bit n: 2^n MiB is supported */
};

struct nvs_pci_dev {
	int domain, bus, dev, func;
	char bdf[16];			/* 0000:01:00.0 */
	uint16_t vendor, device, class;	/* class: base << 8 | sub */
	int hdr_type;			/* 0 device, 1 bridge */
	int sec_bus, sub_bus;		/* bridges only, else -1 */
	size_t cfg_len;			/* readable config bytes: 64, 256 or 4096 */
	struct nvs_pci_link link;
	bool acs_present;
	uint16_t acs_cap, acs_ctrl;
	struct nvs_pci_rebar rebar[6];	/* indexed by BAR number */
	uint64_t bar_size[6];		/* from the OS; 0 when unknown (dumps) */
	int numa_node;			/* -1 unknown */
	int iommu_group;		/* -1 none or unknown */
	char iommu_type[16];		/* identity, DMA, DMA-FQ, ...; "" unknown */
	char driver[32];
	bool has_ib_dir;		/* /sys/bus/pci/devices/<bdf>/infiniband */
	enum nvs_pci_role role;
	char name[96];			/* from pci.ids, or vendor:device */
	int parent;			/* index of the upstream bridge, -1 at the top */
	char host_bridge[32];		/* pci0000:00 (sysfs) or domain:bus of the root bus */
};

struct nvs_pci {
	struct nvs_pci_dev *devs;
	size_t n;
	bool from_dump;
	char source[256];		/* "sysfs" or the dump's path */
	char cmdline[4096];		/* kernel command line; "" unknown */
	bool have_cmdline;
};

/* A vendor:device pair to treat as a GPU (tests use ivshmem 1af4:1110). */
struct nvs_pci_id {
	uint16_t vendor, device;
};

/* A dump larger than this is not lspci output (a thousand devices take 16 MiB). */
#define NVS_PCI_DUMP_MAX (64 << 20)

/*
 * Reads the lspci dump at path ("-": standard input) once, checks that it
 * is one, and keeps it in a memfd: returns its descriptor, with name set
 * to a path that opens it again ("/proc/self/fd/N", for nvs_pci_scan()),
 * or -errno with an admin-readable message in err (-EINVAL: not a dump).
 */
int nvs_pci_dump_load(const char *path, char *name, size_t namelen, char *err, size_t errlen);

/*
 * Scans from sysfs (dump == NULL) or from an lspci -x/-xxx/-xxxx dump,
 * which is read exactly once ("-": standard input; a pipe or <(...) works).
 * extra_gpus lists ids treated as GPUs besides NVIDIA display controllers.
 * Returns 0, or -errno with an admin-readable message in err.
 */
int nvs_pci_scan(struct nvs_pci *p, const char *dump, const struct nvs_pci_id *extra_gpus,
		 size_t n_extra, char *err, size_t errlen);
void nvs_pci_free(struct nvs_pci *p);
/* Accepts 0000:01:00.0, 01:00.0 and CUDA's 00000000:01:00.0. */
const struct nvs_pci_dev *nvs_pci_find(const struct nvs_pci *p, const char *bdf);
/* Parses "1af4:1110[,10de:2b85...]"; returns the count or -EINVAL. */
int nvs_pci_parse_ids(const char *s, struct nvs_pci_id *ids, size_t max);

/* Theoretical data rate of a link, per direction, in GB/s (decimal). */
double nvs_pcie_gbps(int speed, int width);
const char *nvs_pcie_speed_str(int speed);	/* "32 GT/s" */
int nvs_pcie_gen(int speed);			/* link speed code to PCIe generation */
const char *nvs_pcie_port_str(int port_type);

/* Relationship of two devices, in the spirit of `nvidia-smi topo -m`. */
enum nvs_pci_pair {
	NVS_PAIR_SELF,
	NVS_PAIR_PIX,	/* behind one PCIe switch */
	NVS_PAIR_PXB,	/* several bridges, below the same root port */
	NVS_PAIR_PHB,	/* same host bridge (root complex) */
	NVS_PAIR_NODE,	/* different host bridges, same NUMA node */
	NVS_PAIR_SYS,	/* different NUMA nodes: crosses the socket interconnect */
};
const char *nvs_pci_pair_str(enum nvs_pci_pair c);
const char *nvs_pci_pair_desc(enum nvs_pci_pair c);
/*
 * Classifies a pair; *lca is set to the lowest common bridge or -1. The
 * bridges strictly between a device and lca are where ACS redirects peer
 * traffic.
 */
enum nvs_pci_pair nvs_pci_classify(const struct nvs_pci *p, int a, int b, int *lca);

/* Size helpers: "256 MiB", "32 GiB". */
const char *nvs_fmt_size(uint64_t bytes, char *buf, size_t len);
/* VRAM of a known GPU in bytes, 0 when the id is not in the table. */
uint64_t nvs_gpu_vram(uint16_t vendor, uint16_t device);
/* A GeForce RTX 50 (Blackwell, GB202/GB203/GB205) by PCI id, as kmod/chips.c lists them. */
bool nvs_gpu_gb20x(uint16_t vendor, uint16_t device);

#endif
