// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar p2p: does CUDA really copy peer to peer, and correctly? The
 * engine (check/p2p.c) measures and judges; this file checks every input
 * before any CUDA work, shows the matrices and the acceptance ladder, and
 * makes the exit status follow every level of it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/p2p.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/io.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

static const enum out_color ladder_color[] = {
	[NVS_LADDER_NOT_RUN] = OUT_DIM, [NVS_LADDER_PASS] = OUT_GOOD, [NVS_LADDER_WARN] = OUT_WARN,
	[NVS_LADDER_FAIL] = OUT_BAD, [NVS_LADDER_NA] = OUT_DIM,
};

static void show_ladder(const struct nvs_ladder *l)
{
	out_text("%sAcceptance ladder%s ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_obj(OUT_JSON, "ladder");
	out_int(OUT_ANY, "reached", "(reached level %lld", nvs_ladder_reached(l));
	out_text(" of %d)\n", NVS_LADDER_LEVELS);
	out_arr(OUT_JSON, "levels");
	for (int i = 0; i < NVS_LADDER_LEVELS; ++i) {
		out_obj(OUT_JSON, NULL);
		out_int(OUT_ANY, "level", "  %lld ", i + 1);
		out_str(OUT_ANY, "title", "%-32s ", nvs_ladder_title(i + 1));
		out_cstr(OUT_ANY, ladder_color[l->state[i]], "state", "%-7s", nvs_ladder_state_str(l->state[i]));
		out_str(OUT_ANY, "detail", " %s\n", l->detail[i]);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_obj_end(OUT_JSON);
}

static void show_matrix(const struct nvs_p2p_run *rn, const char *title, int which)
{
	out_text("\n%s\n   S\\D ", title);
	for (int b = 0; b < rn->n; ++b)
		out_text(" %8d", b);
	out_text("\n");
	for (int a = 0; a < rn->n; ++a) {
		out_text("  %4d ", a);
		for (int b = 0; b < rn->n; ++b) {
			const struct nvs_p2p_result *r = &rn->r[which >= 3 ? 0 : 1][a][b];
			int kind = which % 3;

			if (a == b) {
				if (which == 0 && rn->g[a].local_gbps > 0)
					out_text(" %8.1f", rn->g[a].local_gbps);
				else
					out_text(" %8s", "X");
			} else if (!r->ran || r->err[0]) {
				out_text(" %8s", r->ran ? "error" : "-");
			} else {
				out_text(" %8.2f", kind == 0 ? r->uni_gbps : kind == 1 ? r->bi_gbps : r->lat_us);
			}
		}
		out_text("\n");
	}
}

static void show_result(const char *key, const struct nvs_p2p_result *r)
{
	out_obj(OUT_JSON, key);
	out_bool(OUT_JSON, "ran", NULL, r->ran);
	if (r->ran) {
		out_str(OUT_JSON, "error", NULL, r->err[0] ? r->err : NULL);
		out_bool(OUT_JSON, "verified", NULL, !r->err[0] && !r->bad_fwd && !r->bad_back);
		out_uint(OUT_JSON, "wrong_bytes", NULL, r->bad_fwd);
		if (r->bad_fwd)
			out_uint(OUT_JSON, "first_mismatch", NULL, r->first_fwd);
		else
			out_null("first_mismatch");
		out_uint(OUT_JSON, "wrong_bytes_back", NULL, r->bad_back);
		if (r->bad_back)
			out_uint(OUT_JSON, "first_mismatch_back", NULL, r->first_back);
		else
			out_null("first_mismatch_back");
		out_double(OUT_JSON, "uni_gbps", NULL, r->uni_gbps, 3);
		out_double(OUT_JSON, "bi_gbps", NULL, r->bi_gbps, 3);
		out_double(OUT_JSON, "latency_us", NULL, r->lat_us, 3);
	}
	out_obj_end(OUT_JSON);
}

/* Text: one verification line per ordered pair and mode. */
static void show_verification(const struct nvs_p2p_run *rn)
{
	out_text("\nVerification (every byte; copy = source to destination, back = destination to source)\n");
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b)
			for (int on = 1; on >= 0; --on) {
				const struct nvs_p2p_result *r = &rn->r[on][a][b];

				if (!r->ran)
					continue;
				out_text("  %d->%d P2P %-3s ", a, b, on ? "on" : "off");
				if (r->err[0]) {
					out_cstr(OUT_TEXT, OUT_BAD, NULL, "%s", "ERROR");
					out_str(OUT_TEXT, NULL, " %s\n", r->err);
					continue;
				}
				if (!r->bad_fwd && !r->bad_back) {
					out_text("ok\n");
					continue;
				}
				out_cstr(OUT_TEXT, OUT_BAD, NULL, "%s", "MISMATCH");
				if (r->bad_fwd)
					out_text(" copy: %zu wrong byte(s), first at offset %zu;", r->bad_fwd, r->first_fwd);
				if (r->bad_back)
					out_text(" back: %zu wrong byte(s), first at offset %zu;", r->bad_back,
						 r->first_back);
				out_text("\n");
			}
}

/* Whose log level 3 read: its hosts against this node, its GPUs against this node's. */
static void show_origin(const struct nvs_p2p_origin *o, const struct nvs_nccl_log *log, const char *path,
			bool refused)
{
	bool known = o->node_gpus > 0 && !refused;

	out_obj(OUT_JSON, "nccl_log");
	out_text("NCCL log  ");
	out_str(OUT_ANY, "path", "%s\n", path);
	out_str(OUT_JSON, "node", NULL, o->node[0] ? o->node : NULL);
	out_str(OUT_JSON, "log_host", NULL, o->log_host);
	out_arr(OUT_JSON, "hosts");
	for (size_t i = 0; i < log->hosts.n; ++i)
		out_str(OUT_JSON, NULL, NULL, log->hosts.v[i].host);
	out_arr_end(OUT_JSON);
	out_uint(OUT_JSON, "host_count", NULL, o->hosts);
	out_bool(OUT_JSON, "host_checked", NULL, o->host_checked);
	out_str(OUT_JSON, "host", NULL, o->used[0] ? o->used : NULL);
	out_uint(OUT_JSON, "other_host_lines", NULL, o->other_lines);
	if (o->host_checked) {
		out_str(OUT_TEXT, NULL, "  host    %s", o->used);
		if (o->log_host)
			out_str(OUT_TEXT, NULL, " (--log-host; this node is %s)", o->node[0] ? o->node : "unknown");
		else
			out_text(" (this node)");
		out_text("; the log holds %zu host(s)", o->hosts);
		if (o->hosts > 1) {
			out_str(OUT_TEXT, NULL, " (%s)", o->host_list);
			out_str(OUT_TEXT, NULL, ": only the lines of %s are judged", o->used);
			out_text(", %zu line(s) of other hosts are not", o->other_lines);
		}
		out_text("\n");
	} else {
		out_text("  host    not checked: its lines name no host\n");
	}
	if (refused) {
		out_null("gpus_in_log");
	} else {
		out_uint(OUT_ANY, "gpus_in_log", "  GPUs    the log names %llu", o->log_gpus);
		if (o->used[0])
			out_str(OUT_TEXT, NULL, " on %s", o->used);
	}
	if (known) {
		out_int(OUT_ANY, "node_gpus", "; this node has %lld NVIDIA GPU(s)", o->node_gpus);
		out_str(OUT_ANY, "node_gpus_source", " (PCI facts: %s)", o->node_source);
		out_bool(OUT_JSON, "gpu_count_ok", NULL, !o->gpu_mismatch);
		if (o->gpu_mismatch)
			out_cstr(OUT_TEXT, OUT_BAD, NULL, ": %s", "MORE THAN THIS NODE HAS");
	} else {
		out_null("node_gpus");
		out_str(OUT_JSON, "node_gpus_source", NULL, o->node_source[0] ? o->node_source : NULL);
		out_null("gpu_count_ok");
	}
	if (!refused)
		out_text("\n");
	out_arr(OUT_JSON, "notes");
	if (!o->hosts)
		out_str(OUT_ANY, NULL, "  note    %s\n",
			"the log's lines name no host (no \"host:pid:tid [dev]\" prefix): whether it is from this node could not be checked");
	if (!known && !refused)
		out_str(OUT_ANY, NULL, "  note    %s\n", o->node_source[0] ?
			"this node's PCI facts show no NVIDIA GPU: its GPU count is unknown, the log's was not checked against it" :
			"this node's PCI facts could not be read: its GPU count is unknown, the log's was not checked against it");
	out_arr_end(OUT_JSON);
	out_obj_end(OUT_JSON);
}

static void show(const struct nvs_p2p_run *rn, const struct nvs_p2p_origin *origin, const struct nvs_nccl_log *nccl,
		 const char *nccl_log)
{
	int ver = rn->driver_version;

	out_str(OUT_JSON, "library", NULL, rn->cu.path);
	out_int(OUT_JSON, "driver_version", NULL, ver);
	out_uint(OUT_JSON, "size", NULL, rn->o.size);
	out_int(OUT_JSON, "iters", NULL, rn->o.iters);
	out_str(OUT_JSON, "units", NULL, "GB/s decimal (1e9 bytes per second); latency in microseconds");
	out_bool(OUT_JSON, "p2p_applicable", NULL, rn->n > 1);
	out_text("CUDA driver API %d.%d from ", ver / 1000, ver % 1000 / 10);
	out_str(OUT_TEXT, NULL, "%s", rn->cu.path);
	out_text(", %d GPU(s), %zu bytes per copy, %d iterations\n", rn->n, rn->o.size, rn->o.iters);
	out_arr(OUT_JSON, "gpus");
	for (int i = 0; i < rn->n; ++i) {
		const struct nvs_p2p_gpu *g = &rn->g[i];

		out_obj(OUT_JSON, NULL);
		out_int(OUT_ANY, "index", "  GPU%lld ", i);
		out_str(OUT_ANY, "name", "%-40s ", g->name);
		out_str(OUT_ANY, "bus_id", "%s  ", g->busid);
		out_uint(OUT_JSON, "memory", NULL, g->mem);
		out_bool(OUT_JSON, "used", NULL, g->used);
		out_bool(OUT_JSON, "local_verified", NULL, g->local_ok);
		out_text("%s\n", !g->used ? "not used (in no --pairs pair)" : g->local_ok ? "local copy verified" :
			 "local copy FAILED");
		out_uint(OUT_JSON, "local_wrong_bytes", NULL, g->local_bad);
		out_double(OUT_JSON, "local_gbps", NULL, g->local_gbps, 3);
		if (g->link_gbps > 0)
			out_double(OUT_JSON, "link_gbps", NULL, g->link_gbps, 2);
		else
			out_null("link_gbps");
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_arr(OUT_JSON, "can_access_peer");
	for (int a = 0; a < rn->n; ++a) {
		out_arr(OUT_JSON, NULL);
		for (int b = 0; b < rn->n; ++b)
			out_bool(OUT_JSON, NULL, NULL, a != b && rn->can[a][b]);
		out_arr_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	out_arr(OUT_JSON, "pairs");
	for (int a = 0; a < rn->n; ++a)
		for (int b = 0; b < rn->n; ++b) {
			if (!rn->want[a][b])
				continue;
			out_obj(OUT_JSON, NULL);
			out_int(OUT_JSON, "src", NULL, a);
			out_int(OUT_JSON, "dst", NULL, b);
			out_bool(OUT_JSON, "can_access_peer", NULL, rn->can[a][b]);
			show_result("p2p_on", &rn->r[1][a][b]);
			show_result("p2p_off", &rn->r[0][a][b]);
			out_obj_end(OUT_JSON);
		}
	out_arr_end(OUT_JSON);

	if (rn->n < 2) {
		out_text("\nOne GPU: P2P not applicable; device-local copies checked.\n\n");
	} else if (!out_json()) {
		out_text("\nPeer access (cuDeviceCanAccessPeer; row = source)\n      ");
		for (int b = 0; b < rn->n; ++b)
			out_text(" GPU%-2d", b);
		out_text("\n");
		for (int a = 0; a < rn->n; ++a) {
			out_text("GPU%-2d ", a);
			for (int b = 0; b < rn->n; ++b)
				out_text(" %-5s", a == b ? "X" : rn->can[a][b] ? "OK" : "NS");
			out_text("\n");
		}
		show_verification(rn);
		out_text("\nBandwidth in GB/s (decimal: 1 GB = 10^9 bytes, as NCCL reports), latency in microseconds\n");
		out_text("(diagonal: device-local copy rate; latency: %d-byte stream-ordered cuMemcpyPeerAsync)\n",
			 NVS_P2P_LAT_BYTES);
		show_matrix(rn, "Unidirectional, P2P on (row = source, column = destination)", 0);
		show_matrix(rn, "Unidirectional, P2P off", 3);
		show_matrix(rn, "Bidirectional, P2P on", 1);
		show_matrix(rn, "Bidirectional, P2P off", 4);
		show_matrix(rn, "Latency (us), P2P on", 2);
		show_matrix(rn, "Latency (us), P2P off", 5);
		out_text("\n");
	}
	if (nccl_log) {
		show_origin(origin, nccl, nccl_log, false);
		out_text("\n");
	} else {
		out_null("nccl_log");
	}
	show_ladder(&rn->ladder);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--size BYTES[K|M|G]] [--iters N] [--pairs all|A-B,...] [--lib PATH]\n"
		"            [--nccl-log FILE [--log-host NAME]] [--pci-dump FILE] [--min-efficiency F]\n"
		"            [--json]\n"
		"\n"
		"For every ordered GPU pair, with peer access on and off: fills a pattern,\n"
		"copies it to the peer and back, verifies every byte (first mismatch offset\n"
		"and count), then measures unidirectional and bidirectional bandwidth (GB/s,\n"
		"decimal) and latency. On one GPU it checks device-local copies only. Prints\n"
		"the acceptance ladder (levels 1-4; see docs/p2p.md). The NCCL log and the\n"
		"PCI dump are read before any GPU work, so a wrong path costs nothing.\n"
		"\n"
		"  --size          bytes per copy, 4 to 64G (default 64M)\n"
		"  --iters         timed copies per measurement, 1 to 100000 (default 20)\n"
		"  --pairs         ordered pairs to test, e.g. 0-1,1-0 (default all)\n"
		"  --lib           libcuda to load (default libcuda.so.1)\n"
		"  --nccl-log      NCCL_DEBUG=INFO output for ladder level 3 (- : standard input),\n"
		"                  of this node: a log whose lines name only other hosts is\n"
		"                  refused; of a multi-node log only this node's lines are\n"
		"                  judged; a log naming more GPUs than this node has (PCI\n"
		"                  facts) fails level 3\n"
		"  --log-host      the host the log is from, when it is not this node: judge\n"
		"                  its lines here anyway\n"
		"  --pci-dump      read PCI facts from an lspci -xxxx dump instead of sysfs\n"
		"  --min-efficiency F\n"
		"                  share of the link's theoretical rate that level 4 needs,\n"
		"                  above 0 and at most 1 (default %.2f)\n"
		"  --json          JSON document\n"
		"\n"
		"Exit status: 0 no ladder level failed; 1 a level failed (a copy failed\n"
		"verification, no peer access, NCCL did not use P2P, bandwidth below\n"
		"--min-efficiency, a log with more GPUs than this node); 2 usage error or an\n"
		"unusable --nccl-log (another host's, without --log-host), --pci-dump or\n"
		"--lib; 3 no libcuda, CUDA driver or CUDA device; 4 permission denied\n"
		"reading --nccl-log; 12 another process holds a GPU (exclusive-process\n"
		"compute mode) (nvsidecar(8) has the table).\n",
		PROG_NAME, prog, NVS_LADDER_MIN_EFFICIENCY);
}

struct args {
	struct nvs_p2p_opts o;
	struct nvs_p2p_pairs pairs;
	const char *nccl_log, *pci_dump, *log_host;
};

/* Returns 0 to run, 1 after --help, or the exit code (reported). */
static int parse(int argc, const char *argv[], struct args *a)
{
	const char *pairs = NULL;
	struct nvs_args_seen seen = { 0 };

	memset(a, 0, sizeof(*a));
	a->o = (struct nvs_p2p_opts){ .size = 64 << 20, .iters = 20, .min_eff = NVS_LADDER_MIN_EFFICIENCY };
	for (int i = 1; i < argc; ++i) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		int64_t m;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			usage(stdout, argv[0]);
			return 1;
		} else if (!strcmp(o, "--json")) {
			out_set_json(true);
		} else if (strcmp(o, "--size") && strcmp(o, "--iters") && strcmp(o, "--min-efficiency") &&
			   strcmp(o, "--pairs") && strcmp(o, "--lib") && strcmp(o, "--nccl-log") &&
			   strcmp(o, "--pci-dump") && strcmp(o, "--log-host")) {
			return nvs_arg_invalid(argv[0], o, "--size= --iters= --pairs= --lib= --nccl-log= --log-host= --pci-dump= --min-efficiency=");
		} else if (!v) {
			return out_usage(argv[0], "Missing value for `%s'", o);
		} else if (nvs_arg_twice(&seen, argv[0], o)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(o, "--size")) {
			if (nvs_parse_size(v, NVS_P2P_LAT_BYTES, 64ULL << 30, 0, &n))
				return out_usage(argv[0], "Invalid --size (a byte count from 4 to 64G, suffix K, M or G): `%s'", v);
			a->o.size = n;
			i++;
		} else if (!strcmp(o, "--iters")) {
			if (nvs_parse_u64(v, 1, 100000, &n))
				return out_usage(argv[0], "Invalid --iters (1 to 100000): `%s'", v);
			a->o.iters = (int)n;
			i++;
		} else if (!strcmp(o, "--min-efficiency")) {
			/* thousandths, decimal only: nan, inf and 1e-1 are refused */
			if (nvs_parse_milli(v, 1, 1000, &m))
				return out_usage(argv[0], "Invalid --min-efficiency (a share above 0 and at most 1, e.g. 0.6): `%s'", v);
			a->o.min_eff = (double)m / 1000;
			i++;
		} else if (!strcmp(o, "--pairs")) {
			pairs = argv[++i];
		} else if (!*v) {
			return out_usage(argv[0], "Empty value for `%s'", o);
		} else if (!strcmp(o, "--lib")) {
			a->o.lib = argv[++i];
		} else if (!strcmp(o, "--nccl-log")) {
			a->nccl_log = argv[++i];
		} else if (!strcmp(o, "--log-host")) {
			a->log_host = argv[++i];
		} else {
			a->pci_dump = argv[++i];
		}
	}
	if (a->log_host && !a->nccl_log)
		return out_usage(argv[0], "--log-host names the host of --nccl-log's log: give --nccl-log FILE too");
	if (nvs_p2p_parse_pairs(pairs, &a->pairs))
		return out_usage(argv[0], "Invalid --pairs (all, or SRC-DST,... with GPU indices below %d): `%s'",
				 NVS_P2P_MAX_GPUS, pairs);
	return 0;
}

/*
 * What --nccl-log itself showed, in nccl-check's words: a named FIFO read
 * as empty, with no writer or with one that wrote nothing. Said on stderr
 * as it is found; note keeps it for the JSON document ("" when none).
 */
static void fifo_note(const char *path, const struct nvs_nccl_log *log, char *note, size_t len)
{
	note[0] = 0;
	if (log->lines || !nvs_named_fifo(path))
		return;
	if (log->no_writer)
		snprintf(note, len, "`%s' is a named FIFO that had no writer when it was opened: p2p does not wait for one (a log that never comes would hang it); start the writer first, or pipe the log in: WRITER | %s p2p --nccl-log -",
			 path, PROG_NAME);
	else
		snprintf(note, len, "`%s' is a named FIFO whose writer closed it without writing anything: the log is empty; check that the program writing it has output (run with NCCL_DEBUG=INFO)",
			 path);
	out_note("%s", note);
}

/* "input_notes", as nccl-check's: what the input showed (note "" for none). */
static void show_input_notes(const char *note)
{
	out_arr(OUT_JSON, "input_notes");
	if (note[0])
		out_str(OUT_JSON, NULL, NULL, note);
	out_arr_end(OUT_JSON);
}

/* Any failed level fails the run: "it enumerates" is not "it works". */
static int ladder_exit(const struct nvs_ladder *l)
{
	for (int i = 0; i < NVS_LADDER_LEVELS; ++i)
		if (l->state[i] == NVS_LADDER_FAIL)
			return NVS_EX_FAIL;
	return NVS_EX_OK;
}

int p2p_main(int argc, const char *argv[])
{
	struct nvs_nccl_log nccl;
	struct nvs_p2p_origin origin = { 0 };
	struct nvs_p2p_run *rn = NULL;
	struct nvs_pci pci = { 0 };
	struct args a;
	bool have_pci = false;
	char err[1024], note[1024] = "";
	int ret;

	nvs_nccl_init(&nccl);
	ret = parse(argc, argv, &a);
	if (ret)
		return ret == 1 ? NVS_EX_OK : ret;

	/* Every input first: a typo must not cost a benchmark run. */
	if (a.nccl_log) {
		/* only this node's lines (or --log-host's) are judged */
		nvs_p2p_origin_init(&origin, &nccl, a.log_host);
		ret = nvs_nccl_read(&nccl, a.nccl_log, err, sizeof(err));
		if (ret) {
			ret = out_fail(ret == -ENOMEM ? NVS_EX_FAIL : nvs_exit_for_path(-ret) == NVS_EX_PERM ?
				       NVS_EX_PERM : NVS_EX_USAGE, "Unable to use --nccl-log: %s", err);
			goto out;
		}
		fifo_note(a.nccl_log, &nccl, note, sizeof(note));
		/* a log without NCCL lines cannot judge level 3: say so before the GPU work */
		if (!nccl.nccl_lines) {
			/* the error document carries the note too (out_fail() completes it) */
			if (note[0] && out_json()) {
				out_begin(true);
				show_input_notes(note);
				out_end();
			}
			ret = out_fail(NVS_EX_USAGE,
				       "Unable to use --nccl-log: no NCCL INFO or WARN lines in %zu line(s) of `%s': run the job with NCCL_DEBUG=INFO and pass its output",
				       nccl.lines, strcmp(a.nccl_log, "-") ? a.nccl_log : "standard input");
			goto out;
		}
		/* another node's log: its findings are not this node's */
		if (nvs_p2p_origin_host(&origin, &nccl, a.nccl_log, err, sizeof(err))) {
			if (out_json()) {
				out_begin(true);
				show_origin(&origin, &nccl, a.nccl_log, true);
				show_input_notes(note);
				out_end();
			}
			ret = out_fail(NVS_EX_USAGE, "Unable to use --nccl-log: %s", err);
			goto out;
		}
	}
	if (!nvs_pci_scan(&pci, a.pci_dump, NULL, 0, err, sizeof(err))) {
		have_pci = true;
	} else if (a.pci_dump) {
		ret = out_fail(NVS_EX_USAGE, "%s", err);
		goto out;
	}
	if (a.nccl_log)
		nvs_p2p_origin_gpus(&origin, &nccl, have_pci ? &pci : NULL);
	rn = calloc(1, sizeof(*rn));
	if (!rn) {
		ret = out_fail(NVS_EX_FAIL, "Unable to allocate memory");
		goto out;
	}
	ret = nvs_p2p_open(rn, &a.o, &a.pairs, have_pci ? &pci : NULL, err, sizeof(err));
	switch (ret) {
	case 0:
		break;
	case -ENOENT: case -ENOEXEC:
		/* a --lib that is not libcuda is a bad argument; no libcuda at all is missing */
		ret = out_fail(a.o.lib ? NVS_EX_USAGE : NVS_EX_MISSING, "%s", err);
		goto out_close;
	case -ENXIO: case -ENODEV:
		ret = out_fail(NVS_EX_MISSING, "%s", err);
		goto out_close;
	case -ERANGE:
		ret = out_fail(NVS_EX_USAGE, "%s", err);
		goto out_close;
	case -EBUSY:
		ret = out_fail(NVS_EX_BUSY, "%s (another process holds the GPU in exclusive-process mode%s)", err,
			       a.pairs.all ? "; --pairs can leave it out" : "");
		goto out_close;
	default:
		ret = out_fail(NVS_EX_FAIL, "%s", err);
		goto out_close;
	}
	if (nvs_p2p_measure(rn)) {
		ret = out_fail(NVS_EX_FAIL, "Unable to allocate %zu-byte host buffers (try a smaller --size)", a.o.size);
		goto out_close;
	}
	nvs_nccl_sort(&nccl);
	nvs_p2p_judge(rn, a.nccl_log ? &nccl : NULL, a.nccl_log ? &origin : NULL);
	ret = ladder_exit(&rn->ladder);
	out_begin(true);
	out_bool(OUT_JSON, "ok", NULL, !ret);
	out_int(OUT_JSON, "exit", NULL, ret);
	show(rn, &origin, &nccl, a.nccl_log);
	if (a.nccl_log)
		show_input_notes(note);
	if (out_end() < 0 && !ret)
		ret = NVS_EX_FAIL;
out_close:
	nvs_p2p_close(rn);
out:
	free(rn);
	nvs_pci_free(&pci);
	nvs_nccl_free(&nccl);
	return ret;
}
