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
#include "cli/args.h"
#include "cli/dump_topo.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "sys/pci.h"

#define MAX_IDS 16

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

static void show_device(const struct nvs_pci *p, size_t i, char (*lab)[8])
{
	const struct nvs_pci_dev *d = &p->devs[i];
	int bar = nvs_topo_aperture_bar(d), guard = 64, via;
	enum nvs_slot slot;
	uint64_t cur = bar >= 0 ? nvs_topo_aperture_size(d, bar) : 0, vram = nvs_gpu_vram(d->vendor, d->device);
	char buf[64], b2[32];

	out_obj(OUT_JSON, NULL);
	out_text("\n%s", out_cfg(OUT_BOLD));
	out_str(OUT_ANY, "label", "%-5s ", lab[i]);
	out_str(OUT_JSON, "role", NULL, d->role == NVS_ROLE_GPU ? "gpu" : "nic");
	out_str(OUT_ANY, "bdf", "%s", d->bdf);
	out_text("%s  ", out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "name", "%s", d->name);
	snprintf(buf, sizeof(buf), "%04x:%04x", d->vendor, d->device);
	out_str(OUT_ANY, "id", " [%s]\n", buf);

	out_obj(OUT_JSON, "link");
	if (d->link.present && d->link.max_speed) {
		out_int(OUT_JSON, "speed_gen", NULL, nvs_pcie_gen(d->link.cur_speed));
		out_int(OUT_JSON, "width", NULL, d->link.cur_width);
		out_int(OUT_JSON, "max_speed_gen", NULL, nvs_pcie_gen(d->link.max_speed));
		out_int(OUT_JSON, "max_width", NULL, d->link.max_width);
		out_text("  link      %s x%d (Gen%d), max %s x%d: ", nvs_pcie_speed_str(d->link.cur_speed),
			 d->link.cur_width, nvs_pcie_gen(d->link.cur_speed), nvs_pcie_speed_str(d->link.max_speed),
			 d->link.max_width);
		out_double(OUT_ANY, "gbps_per_direction", "%.1f GB/s per direction\n",
			   nvs_pcie_gbps(d->link.cur_speed, d->link.cur_width), 2);
	}
	out_obj_end(OUT_JSON);

	out_obj(OUT_JSON, "aperture");
	out_int(OUT_JSON, "bar", NULL, bar);
	if (bar >= 0) {
		out_text("  BAR%d      %s", bar, cur ? nvs_fmt_size(cur, buf, sizeof(buf)) : "size unknown");
		if (cur)
			out_uint(OUT_JSON, "bytes", NULL, cur);
		else
			out_null("bytes");
		out_bool(OUT_JSON, "resizable", NULL, d->rebar[bar].present);
		if (d->rebar[bar].present) {
			out_uint(OUT_JSON, "rebar_current", NULL, d->rebar[bar].cur);
			out_uint(OUT_JSON, "rebar_max", NULL, nvs_topo_rebar_max(&d->rebar[bar]));
			out_arr(OUT_JSON, "rebar_supported");
			for (int b = 0; b < 44; ++b)
				if (d->rebar[bar].supported >> b & 1)
					out_uint(OUT_JSON, NULL, NULL, (1ULL << b) << 20);
			out_arr_end(OUT_JSON);
			out_text(", resizable up to %s",
				 nvs_fmt_size(nvs_topo_rebar_max(&d->rebar[bar]), b2, sizeof(b2)));
		} else {
			out_text(", not resizable");
		}
		if (vram)
			out_text("; VRAM %s", nvs_fmt_size(vram, b2, sizeof(b2)));
		out_text("\n");
	}
	if (vram)
		out_uint(OUT_JSON, "vram", NULL, vram);
	out_obj_end(OUT_JSON);

	slot = nvs_topo_slot(p, (int)i, &via);
	out_str(OUT_ANY, "slot", "  slot      %s", nvs_topo_slot_str(slot));
	out_str(OUT_JSON, "slot_bridge", NULL, via >= 0 ? p->devs[via].bdf : NULL);
	if (via >= 0)
		out_text(" (behind %s, %s)", p->devs[via].bdf,
			 p->devs[via].vendor == 0x8086 ? "PCH root port" : "chipset switch");
	else if (slot == NVS_SLOT_CPU)
		out_text(" (CPU lanes)");
	else
		out_text(" (no root port above it)");
	out_text("\n");

	out_int(OUT_ANY, "numa_node", "  placement NUMA node %lld", d->numa_node);
	out_int(OUT_ANY, "iommu_group", ", IOMMU group %lld", d->iommu_group);
	out_str(OUT_ANY, "iommu_type", d->iommu_type[0] ? " (%s)" : NULL, d->iommu_type[0] ? d->iommu_type : NULL);
	out_str(OUT_ANY, "host_bridge", ", %s", d->host_bridge);
	out_str(OUT_JSON, "driver", NULL, d->driver[0] ? d->driver : NULL);
	out_str(OUT_TEXT, NULL, ", driver %s\n", d->driver[0] ? d->driver : "none");

	out_arr(OUT_JSON, "path");
	for (int b = d->parent; b >= 0 && guard--; b = p->devs[b].parent) {
		const struct nvs_pci_dev *br = &p->devs[b];

		out_obj(OUT_JSON, NULL);
		out_text("  %s ", b == d->parent ? "path    " : "        ");
		out_str(OUT_ANY, "bdf", "%s  ", br->bdf);
		out_str(OUT_ANY, "port", "%s", nvs_pcie_port_str(br->link.port_type));
		out_bool(OUT_JSON, "acs", NULL, br->acs_present);
		if (br->acs_present) {
			acs_bits(br->acs_cap, buf, sizeof(buf));
			out_str(OUT_JSON, "acs_cap", NULL, buf);
			acs_bits(br->acs_ctrl, buf, sizeof(buf));
			out_cstr(OUT_ANY, br->acs_ctrl & NVS_ACS_P2P_BLOCKING ? OUT_WARN : OUT_PLAIN, "acs_ctrl",
				 ", ACS %s", buf);
			out_bool(OUT_JSON, "acs_redirect", NULL, br->acs_ctrl & NVS_ACS_P2P_BLOCKING);
		}
		out_text("\n");
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_obj_end(OUT_JSON);
}

static void show_pairs(const struct nvs_pci *p, char (*lab)[8], size_t ndev)
{
	out_arr(OUT_JSON, "pairs");
	for (size_t a = 0; a < p->n && out_json(); ++a) {
		if (p->devs[a].role != NVS_ROLE_GPU)
			continue;
		for (size_t b = 0; b < p->n; ++b) {
			int lca;
			enum nvs_pci_pair c;

			if (b == a || !lab[b][0] || (p->devs[b].role == NVS_ROLE_GPU && b < a))
				continue;
			c = nvs_pci_classify(p, (int)a, (int)b, &lca);
			out_obj(OUT_JSON, NULL);
			out_str(OUT_JSON, "a", NULL, lab[a]);
			out_str(OUT_JSON, "b", NULL, lab[b]);
			out_str(OUT_JSON, "class", NULL, nvs_pci_pair_str(c));
			out_str(OUT_JSON, "description", NULL, nvs_pci_pair_desc(c));
			out_str(OUT_JSON, "common_bridge", NULL, lca >= 0 ? p->devs[lca].bdf : NULL);
			out_obj_end(OUT_JSON);
		}
	}
	out_arr_end(OUT_JSON);
	if (out_json() || ndev < 2)
		return;
	out_text("\n%sPairs%s (as nvidia-smi topo -m)\n      ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	for (size_t b = 0; b < p->n; ++b)
		if (lab[b][0])
			out_text(" %-5s", lab[b]);
	out_text("\n");
	for (size_t a = 0; a < p->n; ++a) {
		if (!lab[a][0])
			continue;
		out_text("%-5s ", lab[a]);
		for (size_t b = 0; b < p->n; ++b) {
			int lca;

			if (lab[b][0])
				out_text(" %-5s", nvs_pci_pair_str(nvs_pci_classify(p, (int)a, (int)b, &lca)));
		}
		out_text("\n");
	}
	out_text("%s  PIX same switch, PXB several bridges, PHB same host bridge, NODE same NUMA node, SYS across sockets%s\n",
		 out_cfg(OUT_DIM), out_cfg(OUT_PLAIN));
}

static void show(const struct nvs_pci *p, const struct nvs_findings *f, char (*lab)[8])
{
	char buf[64];
	size_t ndev = 0;

	out_text("%sPCIe topology%s from ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "source", "%s\n", p->source);
	out_bool(OUT_JSON, "from_dump", NULL, p->from_dump);
	out_bool(OUT_JSON, "config_limited", NULL, nvs_topo_config_limited(p));
	out_obj(OUT_JSON, "kernel");
	out_bool(OUT_JSON, "cmdline_known", NULL, p->have_cmdline);
	if (p->have_cmdline)
		out_text("  kernel:");
	for (size_t k = 0; k < sizeof(kparams) / sizeof(kparams[0]); ++k) {
		get_param(p, kparams[k], buf, sizeof(buf));
		out_str(OUT_JSON, kparams[k], NULL, p->have_cmdline && buf[0] ? buf : NULL);
		if (p->have_cmdline)
			out_str(OUT_TEXT, NULL, " %s", kparams[k]);
		if (p->have_cmdline)
			out_str(OUT_TEXT, NULL, "=%s", buf[0] ? buf : "(unset)");
	}
	if (p->have_cmdline)
		out_text("\n");
	out_obj_end(OUT_JSON);

	out_arr(OUT_JSON, "devices");
	for (size_t i = 0; i < p->n; ++i) {
		if (!lab[i][0])
			continue;
		ndev++;
		show_device(p, i, lab);
	}
	out_arr_end(OUT_JSON);
	if (!ndev)
		out_text("\nNo GPU or RDMA NIC found.\n");
	if (nvs_topo_config_limited(p))
		out_text("\n%sOnly 64 bytes of config space were readable%s: link, ACS and Resizable BAR need root\n",
			 out_cfg(OUT_WARN), out_cfg(OUT_PLAIN));
	show_pairs(p, lab, ndev);

	out_text("\n%sFindings%s: %zu warning(s), %zu note(s)\n", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN),
		 nvs_topo_count(f, NVS_SEV_WARN), nvs_topo_count(f, NVS_SEV_INFO));
	out_arr(OUT_JSON, "findings");
	for (size_t i = 0; i < f->n; ++i) {
		const struct nvs_finding *x = &f->v[i];
		bool w = x->sev == NVS_SEV_WARN;

		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "severity", NULL, w ? "warning" : "info");
		out_cstr(OUT_TEXT, w ? OUT_WARN : OUT_PLAIN, NULL, "  %-7s", w ? "warning" : "note");
		out_str(OUT_ANY, "where", " %s", x->where);
		out_str(OUT_ANY, "id", " [%s]", x->id);
		out_str(OUT_ANY, "what", " %s\n", x->what);
		out_str(OUT_ANY, "why", "          why: %s\n", x->why);
		out_str(OUT_ANY, "fix", "          fix: %s\n", x->fix);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
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
		"  --pci-dump FILE read an `lspci -xxxx' dump instead of this machine (read\n"
		"                  once: - , a pipe or <(ssh node lspci -xxxx) work)\n"
		"  --gpu-ids LIST  also treat these vendor:device ids as GPUs (tests)\n"
		"  --cmdline TEXT  judge this kernel command line instead of /proc/cmdline\n"
		"\n"
		"Exit status: 0 no warnings, 1 at least one warning finding, 2 usage error or\n"
		"the PCI devices could not be read, 4 permission denied reading --pci-dump\n"
		"or the PCI devices (nvsidecar(8) has the table).\n",
		PROG_NAME, prog);
}

int topo_main(int argc, const char *argv[])
{
	struct nvs_pci p = { 0 };
	struct nvs_findings f = { 0 };
	struct nvs_pci_id ids[MAX_IDS] = { 0 };
	const char *dump = NULL, *cmdline = NULL;
	char err[512], (*lab)[8] = NULL;
	bool tsv = false;
	struct nvs_args_seen seen = { 0 };
	int nids = 0, ret;

	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return NVS_EX_OK;
		} else if (!strcmp(a, "--json")) {
			out_set_json(true);
		} else if (!strcmp(a, "--dump")) {
			tsv = true;
		} else if (!v && (!strcmp(a, "--pci-dump") || !strcmp(a, "--cmdline") || !strcmp(a, "--gpu-ids"))) {
			return out_usage(argv[0], "Missing value for `%s'", a);
		} else if ((!strcmp(a, "--pci-dump") || !strcmp(a, "--cmdline") || !strcmp(a, "--gpu-ids")) &&
			   nvs_arg_twice(&seen, argv[0], a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "--pci-dump")) {
			dump = argv[++i];
		} else if (!strcmp(a, "--cmdline")) {
			cmdline = argv[++i];
		} else if (!strcmp(a, "--gpu-ids")) {
			nids = nvs_pci_parse_ids(argv[++i], ids, MAX_IDS);
			if (nids < 0)
				return out_usage(argv[0], "Invalid --gpu-ids (expected VID:DID[,VID:DID...]): `%s'", argv[i]);
		} else {
			return nvs_arg_invalid(argv[0], a, "--dump --pci-dump= --cmdline= --gpu-ids=");
		}
	}
	if (out_json() && tsv)
		return out_usage(argv[0], "Choose one of --json and --dump");
	ret = nvs_pci_scan(&p, dump, ids, nids > 0 ? (size_t)nids : 0, err, sizeof(err));
	if (ret)
		return out_fail(ret == -ENOMEM ? NVS_EX_FAIL : nvs_exit_for_path(-ret) == NVS_EX_PERM ? NVS_EX_PERM :
				NVS_EX_USAGE, "%s", err);
	if (cmdline) {
		snprintf(p.cmdline, sizeof(p.cmdline), "%s", cmdline);
		p.have_cmdline = true;
	}
	lab = calloc(p.n ? p.n : 1, sizeof(*lab));
	if (!lab || nvs_topo_findings(&p, &f)) {
		ret = out_fail(NVS_EX_FAIL, "Unable to analyse the topology: %s", strerror(ENOMEM));
		goto cleanup;
	}
	make_labels(&p, lab);
	if (tsv) {
		nvs_dump_topo(&p, &f, lab);
	} else {
		out_begin(true);
		show(&p, &f, lab);
	}
	ret = out_end() < 0 ? NVS_EX_FAIL : nvs_topo_count(&f, NVS_SEV_WARN) ? NVS_EX_FAIL : NVS_EX_OK;
cleanup:
	free(lab);
	nvs_findings_free(&f);
	nvs_pci_free(&p);
	return ret;
}
