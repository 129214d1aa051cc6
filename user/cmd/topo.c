// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar topo: the PCIe facts that decide whether peer-to-peer and
 * GPUDirect RDMA can work, with the findings (check/topo.c) that say what
 * to change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/topo.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/json.h"
#include "common/out.h"
#include "sys/pci.h"

#define MAX_IDS 16

static const char *c_bold = "", *c_warn = "", *c_off = "", *c_dim = "";

static void setup_color(void)
{
	const char *nc = getenv("NO_COLOR");

	if (isatty(STDOUT_FILENO) && (!nc || !*nc)) {
		c_bold = "\033[1m";
		c_warn = "\033[33m";
		c_dim = "\033[2m";
		c_off = "\033[0m";
	}
}

static void make_labels(const struct nvs_pci *p, char (*lab)[8])
{
	unsigned char g = 0, n = 0;

	for (size_t i = 0; i < p->n; ++i) {
		lab[i][0] = 0;
		if (p->devs[i].role == NVS_ROLE_GPU)
			snprintf(lab[i], 8, "GPU%u", g++);
		else if (p->devs[i].role == NVS_ROLE_NIC)
			snprintf(lab[i], 8, "NIC%u", n++);
	}
}

static void acs_bits(uint16_t v, char *buf, size_t len)
{
	static const char *const names[] = { "SV", "TB", "RR", "CR", "UF", "EC", "DT" };

	buf[0] = 0;
	for (int i = 0; i < 7; ++i)
		if (v >> i & 1)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "", names[i]);
	if (!buf[0])
		snprintf(buf, len, "off");
}

static void get_param(const struct nvs_pci *p, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	const char *s = p->cmdline;

	out[0] = 0;
	while ((s = strstr(s, key))) {
		if ((s == p->cmdline || s[-1] == ' ') && s[kl] == '=') {
			size_t n = strcspn(s + kl + 1, " ");

			snprintf(out, len, "%.*s", (int)n, s + kl + 1);
		}
		s += kl;
	}
}

static const char *const kparams[] = { "iommu", "intel_iommu", "amd_iommu", "pcie_acs_override" };

static void print_json(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8])
{
	struct json j;
	char buf[64];

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "source", p->source);
	json_bool(&j, "from_dump", p->from_dump);
	json_bool(&j, "config_limited", nvs_topo_config_limited(p));
	json_obj_open(&j, "kernel");
	json_bool(&j, "cmdline_known", p->have_cmdline);
	for (size_t k = 0; k < sizeof(kparams) / sizeof(kparams[0]); ++k) {
		get_param(p, kparams[k], buf, sizeof(buf));
		json_str(&j, kparams[k], p->have_cmdline && buf[0] ? buf : NULL);
	}
	json_obj_close(&j);

	json_arr_open(&j, "devices");
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];
		int bar = nvs_topo_aperture_bar(d), guard = 64;

		if (!lab[i][0])
			continue;
		json_obj_open(&j, NULL);
		json_str(&j, "label", lab[i]);
		json_str(&j, "role", d->role == NVS_ROLE_GPU ? "gpu" : "nic");
		json_str(&j, "bdf", d->bdf);
		snprintf(buf, sizeof(buf), "%04x:%04x", d->vendor, d->device);
		json_str(&j, "id", buf);
		json_str(&j, "name", d->name);
		json_obj_open(&j, "link");
		if (d->link.present && d->link.max_speed) {
			json_int(&j, "speed_gen", nvs_pcie_gen(d->link.cur_speed));
			json_int(&j, "width", d->link.cur_width);
			json_int(&j, "max_speed_gen", nvs_pcie_gen(d->link.max_speed));
			json_int(&j, "max_width", d->link.max_width);
			json_double(&j, "gbps_per_direction", nvs_pcie_gbps(d->link.cur_speed, d->link.cur_width), 2);
		}
		json_obj_close(&j);
		json_obj_open(&j, "aperture");
		json_int(&j, "bar", bar);
		if (bar >= 0) {
			uint64_t cur = nvs_topo_aperture_size(d, bar);

			if (cur)
				json_uint(&j, "bytes", cur);
			else
				json_null(&j, "bytes");
			json_bool(&j, "resizable", d->rebar[bar].present);
			if (d->rebar[bar].present) {
				json_uint(&j, "rebar_current", d->rebar[bar].cur);
				json_uint(&j, "rebar_max", nvs_topo_rebar_max(&d->rebar[bar]));
				json_arr_open(&j, "rebar_supported");
				for (int b = 0; b < 44; ++b)
					if (d->rebar[bar].supported >> b & 1)
						json_uint(&j, NULL, (1ULL << b) << 20);
				json_arr_close(&j);
			}
		}
		if (nvs_gpu_vram(d->vendor, d->device))
			json_uint(&j, "vram", nvs_gpu_vram(d->vendor, d->device));
		json_obj_close(&j);
		json_int(&j, "numa_node", d->numa_node);
		json_int(&j, "iommu_group", d->iommu_group);
		json_str(&j, "iommu_type", d->iommu_type[0] ? d->iommu_type : NULL);
		json_str(&j, "driver", d->driver[0] ? d->driver : NULL);
		json_str(&j, "host_bridge", d->host_bridge);
		json_arr_open(&j, "path");
		for (int b = d->parent; b >= 0 && guard--; b = p->devs[b].parent) {
			const struct nvs_pci_dev *br = &p->devs[b];

			json_obj_open(&j, NULL);
			json_str(&j, "bdf", br->bdf);
			json_str(&j, "port", nvs_pcie_port_str(br->link.port_type));
			json_bool(&j, "acs", br->acs_present);
			if (br->acs_present) {
				acs_bits(br->acs_cap, buf, sizeof(buf));
				json_str(&j, "acs_cap", buf);
				acs_bits(br->acs_ctrl, buf, sizeof(buf));
				json_str(&j, "acs_ctrl", buf);
				json_bool(&j, "acs_redirect", br->acs_ctrl & NVS_ACS_P2P_BLOCKING);
			}
			json_obj_close(&j);
		}
		json_arr_close(&j);
		json_obj_close(&j);
	}
	json_arr_close(&j);

	json_arr_open(&j, "pairs");
	for (size_t a = 0; a < p->n; ++a) {
		if (p->devs[a].role != NVS_ROLE_GPU)
			continue;
		for (size_t b = 0; b < p->n; ++b) {
			int lca;
			enum nvs_pci_pair c;

			if (b == a || !lab[b][0] || (p->devs[b].role == NVS_ROLE_GPU && b < a))
				continue;
			c = nvs_pci_classify(p, (int)a, (int)b, &lca);
			json_obj_open(&j, NULL);
			json_str(&j, "a", lab[a]);
			json_str(&j, "b", lab[b]);
			json_str(&j, "class", nvs_pci_pair_str(c));
			json_str(&j, "description", nvs_pci_pair_desc(c));
			json_str(&j, "common_bridge", lca >= 0 ? p->devs[lca].bdf : NULL);
			json_obj_close(&j);
		}
	}
	json_arr_close(&j);

	json_arr_open(&j, "findings");
	for (size_t i = 0; i < f->n; ++i) {
		json_obj_open(&j, NULL);
		json_str(&j, "severity", f->v[i].sev == NVS_SEV_WARN ? "warning" : "info");
		json_str(&j, "id", f->v[i].id);
		json_str(&j, "where", f->v[i].where);
		json_str(&j, "what", f->v[i].what);
		json_str(&j, "why", f->v[i].why);
		json_str(&j, "fix", f->v[i].fix);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

/* Stable tab-separated lines for scripts: dev, path, pair, finding. */
static void print_dump(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8])
{
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];
		int bar = nvs_topo_aperture_bar(d), guard = 64;

		if (!lab[i][0])
			continue;
		printf("dev\t%s\t%s\t%04x:%04x\t%d\t%d\t%d\t%d\t%d\t%llu\t%llu\t%d\t%d\t%s\n", lab[i], d->bdf,
		       d->vendor, d->device, nvs_pcie_gen(d->link.cur_speed), d->link.cur_width,
		       nvs_pcie_gen(d->link.max_speed), d->link.max_width, bar,
		       (unsigned long long)nvs_topo_aperture_size(d, bar),
		       (unsigned long long)(bar >= 0 ? nvs_topo_rebar_max(&d->rebar[bar]) : 0), d->numa_node,
		       d->iommu_group, d->iommu_type[0] ? d->iommu_type : "-");
		for (int b = d->parent; b >= 0 && guard--; b = p->devs[b].parent)
			printf("path\t%s\t%s\t%d\t%04x\n", lab[i], p->devs[b].bdf, p->devs[b].link.port_type,
			       p->devs[b].acs_present ? p->devs[b].acs_ctrl : 0);
	}
	for (size_t a = 0; a < p->n; ++a)
		for (size_t b = 0; b < p->n; ++b) {
			int lca;

			if (p->devs[a].role != NVS_ROLE_GPU || b == a || !lab[b][0] ||
			    (p->devs[b].role == NVS_ROLE_GPU && b < a))
				continue;
			printf("pair\t%s\t%s\t%s\n", lab[a], lab[b],
			       nvs_pci_pair_str(nvs_pci_classify(p, (int)a, (int)b, &lca)));
		}
	for (size_t i = 0; i < f->n; ++i)
		printf("finding\t%s\t%s\t%s\n", f->v[i].sev == NVS_SEV_WARN ? "warning" : "info", f->v[i].id,
		       f->v[i].where);
}

static void print_human(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8])
{
	char buf[64], b2[32];
	size_t ndev = 0;

	printf("%sPCIe topology%s from %s\n", c_bold, c_off, p->source);
	if (p->have_cmdline) {
		printf("  kernel:");
		for (size_t k = 0; k < sizeof(kparams) / sizeof(kparams[0]); ++k) {
			get_param(p, kparams[k], buf, sizeof(buf));
			printf(" %s=%s", kparams[k], buf[0] ? buf : "(unset)");
		}
		printf("\n");
	}
	for (size_t i = 0; i < p->n; ++i) {
		const struct nvs_pci_dev *d = &p->devs[i];
		int bar = nvs_topo_aperture_bar(d), guard = 64;

		if (!lab[i][0])
			continue;
		ndev++;
		printf("\n%s%-5s %s%s  %s [%04x:%04x]\n", c_bold, lab[i], d->bdf, c_off, d->name, d->vendor,
		       d->device);
		if (d->link.present && d->link.max_speed)
			printf("  link      %s x%d (Gen%d), max %s x%d: %.1f GB/s per direction\n",
			       nvs_pcie_speed_str(d->link.cur_speed), d->link.cur_width,
			       nvs_pcie_gen(d->link.cur_speed), nvs_pcie_speed_str(d->link.max_speed),
			       d->link.max_width, nvs_pcie_gbps(d->link.cur_speed, d->link.cur_width));
		if (bar >= 0) {
			printf("  BAR%d      %s", bar, nvs_topo_aperture_size(d, bar) ?
							   nvs_fmt_size(nvs_topo_aperture_size(d, bar), buf, sizeof(buf)) :
							   "size unknown");
			if (d->rebar[bar].present)
				printf(", resizable up to %s", nvs_fmt_size(nvs_topo_rebar_max(&d->rebar[bar]), b2, sizeof(b2)));
			else
				printf(", not resizable");
			if (nvs_gpu_vram(d->vendor, d->device))
				printf("; VRAM %s", nvs_fmt_size(nvs_gpu_vram(d->vendor, d->device), b2, sizeof(b2)));
			printf("\n");
		}
		printf("  placement NUMA node %d, IOMMU group %d%s%s%s, %s, driver %s\n", d->numa_node,
		       d->iommu_group, d->iommu_type[0] ? " (" : "", d->iommu_type,
		       d->iommu_type[0] ? ")" : "", d->host_bridge, d->driver[0] ? d->driver : "none");
		for (int b = d->parent; b >= 0 && guard--; b = p->devs[b].parent) {
			const struct nvs_pci_dev *br = &p->devs[b];

			printf("  %s %s  %s", b == d->parent ? "path    " : "        ", br->bdf,
			       nvs_pcie_port_str(br->link.port_type));
			if (br->acs_present) {
				acs_bits(br->acs_ctrl, buf, sizeof(buf));
				printf(", ACS %s%s%s", br->acs_ctrl & NVS_ACS_P2P_BLOCKING ? c_warn : "", buf,
				       c_off);
			}
			printf("\n");
		}
	}
	if (!ndev)
		printf("\nNo GPU or RDMA NIC found.\n");
	if (nvs_topo_config_limited(p))
		printf("\n%sOnly 64 bytes of config space were readable%s: link, ACS and Resizable BAR need root\n",
		       c_warn, c_off);

	if (ndev > 1) {
		printf("\n%sPairs%s (as nvidia-smi topo -m)\n      ", c_bold, c_off);
		for (size_t b = 0; b < p->n; ++b)
			if (lab[b][0])
				printf(" %-5s", lab[b]);
		printf("\n");
		for (size_t a = 0; a < p->n; ++a) {
			if (!lab[a][0])
				continue;
			printf("%-5s ", lab[a]);
			for (size_t b = 0; b < p->n; ++b) {
				int lca;

				if (!lab[b][0])
					continue;
				printf(" %-5s", nvs_pci_pair_str(nvs_pci_classify(p, (int)a, (int)b, &lca)));
			}
			printf("\n");
		}
		printf("%s  PIX same switch, PXB several bridges, PHB same host bridge, NODE same NUMA node, SYS across sockets%s\n",
		       c_dim, c_off);
	}

	printf("\n%sFindings%s: %zu warning(s), %zu note(s)\n", c_bold, c_off, nvs_topo_count(f, NVS_SEV_WARN),
	       nvs_topo_count(f, NVS_SEV_INFO));
	for (size_t i = 0; i < f->n; ++i) {
		const struct nvs_finding *x = &f->v[i];

		printf("  %s%-7s%s %s [%s] %s\n", x->sev == NVS_SEV_WARN ? c_warn : "",
		       x->sev == NVS_SEV_WARN ? "warning" : "note", c_off, x->where, x->id, x->what);
		printf("          why: %s\n          fix: %s\n", x->why, x->fix);
	}
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--json | --dump] [--pci-dump FILE] [--gpu-ids VID:DID[,...]] [--cmdline TEXT]\n"
		"\n"
		"Reports, for every NVIDIA GPU and RDMA NIC: the PCIe path to the root port with\n"
		"ACS on each bridge, the link against its maximum, Resizable BAR (BAR1) current\n"
		"against supported size, NUMA node and IOMMU group, the pairwise relationship\n"
		"(PIX/PXB/PHB/NODE/SYS) and findings that say what to change.\n"
		"\n"
		"  --json          JSON document\n"
		"  --dump          tab-separated lines (dev, path, pair, finding) for scripts\n"
		"  --pci-dump FILE read an `lspci -xxxx' dump instead of this machine\n"
		"  --gpu-ids LIST  also treat these vendor:device ids as GPUs (tests)\n"
		"  --cmdline TEXT  judge this kernel command line instead of /proc/cmdline\n"
		"\n"
		"Exit status: 0 no warnings, 1 at least one warning finding, 2 usage error or\n"
		"the PCI devices could not be read.\n",
		PROG_NAME, prog);
}

int topo_main(int argc, const char *argv[])
{
	struct nvs_pci p = { 0 };
	struct nvs_findings f = { 0 };
	struct nvs_pci_id ids[MAX_IDS] = { 0 };
	const char *dump = NULL, *cmdline = NULL;
	char err[512], (*lab)[8] = NULL;
	bool json = false, tsv = false;
	int nids = 0, ret = 2;

	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--dump")) {
			tsv = true;
		} else if (!strcmp(argv[i], "--pci-dump") && i + 1 < argc) {
			dump = argv[++i];
		} else if (!strcmp(argv[i], "--cmdline") && i + 1 < argc) {
			cmdline = argv[++i];
		} else if (!strcmp(argv[i], "--gpu-ids") && i + 1 < argc) {
			nids = nvs_pci_parse_ids(argv[++i], ids, MAX_IDS);
			if (nids < 0) {
				fprintf(stderr, "Invalid --gpu-ids (expected VID:DID[,VID:DID...]): `%s'\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "Invalid argument: `%s'\n", argv[i]);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (json && tsv) {
		fprintf(stderr, "Choose one of --json and --dump\n");
		return 2;
	}
	if (nvs_pci_scan(&p, dump, ids, nids > 0 ? (size_t)nids : 0, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (cmdline) {
		snprintf(p.cmdline, sizeof(p.cmdline), "%s", cmdline);
		p.have_cmdline = true;
	}
	lab = calloc(p.n ? p.n : 1, sizeof(*lab));
	if (!lab || nvs_topo_findings(&p, &f)) {
		perror("Unable to analyse the topology");
		goto cleanup;
	}
	make_labels(&p, lab);
	setup_color();
	if (json)
		print_json(&p, &f, lab);
	else if (tsv)
		print_dump(&p, &f, lab);
	else
		print_human(&p, &f, lab);
	ret = nvs_topo_count(&f, NVS_SEV_WARN) ? 1 : 0;
cleanup:
	free(lab);
	nvs_findings_free(&f);
	nvs_pci_free(&p);
	return ret;
}
