// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar nccl-check: did NCCL really use P2P, GPUDirect RDMA and
 * DMA-BUF? The reading is check/nccl.c's; this file asks and shows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/nccl.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/io.h"

enum { EXP_P2P, EXP_GDR, EXP_DMABUF, EXP_DIRECT, EXP__COUNT };
static const char *const exp_names[EXP__COUNT] = { "p2p", "gdr", "dmabuf", "direct" };

struct expect {
	bool asked, ok;
	char why[384];
	char where[1024];
};

static int parse_expect(const char *s, struct expect *e)
{
	char buf[128], *tok, *save = NULL;
	bool any = false;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < EXP__COUNT && strcmp(tok, exp_names[k]); ++k)
			;
		if (k == EXP__COUNT)
			return -EINVAL;
		e[k].asked = any = true;
	}
	return any ? 0 : -EINVAL;
}

static void show_gpus(const char *key, const struct nvs_nccl_gpus *g)
{
	out_arr(OUT_JSON, key);
	for (size_t i = 0; i < g->n; ++i) {
		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "host", NULL, g->v[i].host[0] ? g->v[i].host : NULL);
		out_int(OUT_ANY, "dev", i ? ", GPU %lld" : "GPU %lld", g->v[i].dev);
		if (g->v[i].host[0])
			out_str(OUT_TEXT, NULL, " on %s", g->v[i].host);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
}

/* "NET/IB with GDRDMA" and kin, one row per network and GDR use. */
static void show_transports(const struct nvs_nccl_log *log)
{
	size_t per[NVS_NCCL__COUNT] = { 0 };

	for (size_t i = 0; i < log->n_conns; ++i)
		per[log->conns[i].t]++;
	out_text("\n%sTransports%s\n", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_obj(OUT_JSON, "transports");
	for (int t = 0; t < NVS_NCCL__COUNT; ++t) {
		out_uint(OUT_JSON, nvs_nccl_transport_str(t), NULL, per[t]);
		if (per[t] && !nvs_nccl_is_net(t))
			out_text("  %-28s %zu\n", nvs_nccl_transport_str(t), per[t]);
	}
	out_obj_end(OUT_JSON);
	out_arr(OUT_JSON, "networks");
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];
		size_t n = 0, gdr = 0;
		bool seen = false;
		char name[96];

		if (!nvs_nccl_is_net(c->t))
			continue;
		for (size_t k = 0; k < i && !seen; ++k)
			seen = nvs_nccl_is_net(log->conns[k].t) && !strcmp(log->conns[k].net, c->net);
		if (seen)
			continue;
		for (size_t k = i; k < log->n_conns; ++k) {
			if (!nvs_nccl_is_net(log->conns[k].t) || strcmp(log->conns[k].net, c->net))
				continue;
			n++;
			gdr += log->conns[k].gdr;
		}
		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "name", NULL, c->net);
		out_uint(OUT_JSON, "connections", NULL, n);
		out_uint(OUT_JSON, "gdr", NULL, gdr);
		out_obj_end(OUT_JSON);
		snprintf(name, sizeof(name), "NET/%s with GDRDMA", c->net);
		if (gdr)
			out_str(OUT_TEXT, NULL, "  %-28s ", name);
		out_uint(OUT_TEXT, NULL, gdr ? "%llu\n" : NULL, gdr);
		snprintf(name, sizeof(name), "NET/%s without GDR", c->net);
		if (n > gdr)
			out_str(OUT_TEXT, NULL, "  %-28s ", name);
		out_uint(OUT_TEXT, NULL, n > gdr ? "%llu\n" : NULL, n - gdr);
	}
	out_arr_end(OUT_JSON);
	if (!log->n_conns)
		out_text("  none logged\n");
}

static void show_connections(const struct nvs_nccl_log *log)
{
	out_text("\n%sConnections%s (rank -> peer: channels, transport)\n", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_arr(OUT_JSON, "connections");
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];

		out_obj(OUT_JSON, NULL);
		out_str(OUT_JSON, "host", NULL, c->host[0] ? c->host : NULL);
		out_int(OUT_JSON, "pid", NULL, c->pid);
		out_int(OUT_JSON, "dev", NULL, c->dev);
		out_str(OUT_JSON, "kind", NULL, c->kind);
		out_int(OUT_JSON, "channel", NULL, c->channel);
		out_int(OUT_JSON, "from_rank", NULL, c->from_rank);
		out_int(OUT_JSON, "to_rank", NULL, c->to_rank);
		out_str(OUT_JSON, "dir", NULL, c->dir[0] ? c->dir : NULL);
		out_str(OUT_JSON, "via", NULL, c->via);
		out_str(OUT_JSON, "transport", NULL, nvs_nccl_transport_str(c->t));
		out_str(OUT_JSON, "net", NULL, c->net[0] ? c->net : NULL);
		out_bool(OUT_JSON, "gdr", NULL, c->gdr);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
	if (out_json())
		return;
	/* Text: one row per rank pair, direction and transport, with its channels. */
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i], *p = i ? &log->conns[i - 1] : NULL;
		const struct nvs_nccl_conn *nx = i + 1 < log->n_conns ? &log->conns[i + 1] : NULL;
		bool first = !p || p->from_rank != c->from_rank || p->to_rank != c->to_rank ||
			     strcmp(p->via, c->via) || strcmp(p->dir, c->dir);
		bool last = !nx || nx->from_rank != c->from_rank || nx->to_rank != c->to_rank ||
			    strcmp(nx->via, c->via) || strcmp(nx->dir, c->dir);

		if (first)
			out_text("  rank %d -> %d%s%s%s: %s", c->from_rank, c->to_rank, c->dir[0] ? " [" : "", c->dir,
				 c->dir[0] ? "]" : "", c->kind);
		out_text("%s%02d", first ? " " : ",", c->channel);
		if (!last)
			continue;
		out_str(OUT_TEXT, NULL, " via %s", c->via);
		out_text("%s", c->gdr ? " (GDR)" : "");
		if (c->host[0])
			out_str(OUT_TEXT, NULL, " on %s", c->host);
		out_text("\n");
	}
}

static void show_dmabuf(const struct nvs_nccl_log *log)
{
	bool shown = log->dmabuf_used.n > 0;

	out_text("\n%sDMA-BUF%s: ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_obj(OUT_JSON, "dmabuf");
	if (!log->dmabuf_avail.n)
		out_text("no `DMA-BUF is available' line");
	else
		out_text("available (NCCL's init line) on ");
	show_gpus("available", &log->dmabuf_avail);
	out_text("\n  used for a connection: ");
	out_bool(OUT_JSON, "use_shown", NULL, shown);
	if (!shown)
		out_text("not shown by this log");
	show_gpus("used", &log->dmabuf_used);
	if (log->dmabuf_failed.n)
		out_text("\n  ibv_reg_dmabuf_mr failed on ");
	show_gpus("failed", &log->dmabuf_failed);
	out_obj_end(OUT_JSON);
	out_text("\n");
}

static void show_notes(const struct nvs_nccl_log *log, bool single)
{
	size_t shown = 0;

	out_arr(OUT_JSON, "notes");
	for (size_t i = 0; i < log->n_notes; ++i) {
		const struct nvs_nccl_note *n = &log->notes[i];

		/* network advice means nothing to a run on one node */
		if (single && n->inter_node && !n->warn)
			continue;
		if (!shown++)
			out_text("\n%sNotes%s\n", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
		out_obj(OUT_JSON, NULL);
		out_cstr(OUT_ANY, n->warn ? OUT_WARN : OUT_PLAIN, "level", "  %s", n->warn ? "WARN" : "INFO");
		out_str(OUT_ANY, "host", n->host[0] ? " %s" : NULL, n->host[0] ? n->host : NULL);
		out_str(OUT_ANY, "text", ": %s\n", n->text);
		out_str(OUT_ANY, "explain", n->explain ? "        %s\n" : NULL,
			single && n->inter_node ? NULL : n->explain);
		out_obj_end(OUT_JSON);
	}
	out_arr_end(OUT_JSON);
}

static void show(const struct nvs_nccl_log *log, const struct expect *e, const char *const *files, int nfiles)
{
	size_t nodes = nvs_nccl_nodes(log);
	bool trunc = nvs_nccl_truncated(log), filtered = nvs_nccl_filtered(log);

	out_arr(OUT_JSON, "files");
	for (int i = 0; i < nfiles; ++i)
		out_str(OUT_JSON, NULL, NULL, files[i]);
	out_arr_end(OUT_JSON);
	out_text("%sNCCL%s ", out_cfg(OUT_BOLD), out_cfg(OUT_PLAIN));
	out_str(OUT_ANY, "version", "%s", log->version[0] ? log->version : NULL);
	out_text("%s", log->version[0] ? "" : "(version not logged)");
	out_uint(OUT_ANY, "nccl_lines", ", %llu NCCL lines", log->nccl_lines);
	out_uint(OUT_ANY, "lines", " of %llu", log->lines);
	out_uint(OUT_TEXT, NULL, ", %llu connection(s)", log->n_conns);
	out_uint(OUT_ANY, "init_complete", ", %llu rank(s) completed init", log->init_complete);
	if (nodes)
		out_uint(OUT_ANY, "nodes", ", %llu node(s)", nodes);
	else
		out_null("nodes");
	out_text("\n");
	out_bool(OUT_JSON, "single_node", NULL, nodes == 1);
	out_bool(OUT_JSON, "truncated", NULL, trunc);
	out_bool(OUT_JSON, "filtered", NULL, filtered);
	out_uint(OUT_JSON, "interleaved", NULL, log->interleaved);
	out_uint(OUT_JSON, "binary_lines", NULL, log->binary_lines);
	if (log->all_direct_p2p >= 0)
		out_int(OUT_JSON, "all_direct_p2p", NULL, log->all_direct_p2p);
	else
		out_null("all_direct_p2p");

	show_transports(log);
	show_connections(log);
	show_dmabuf(log);
	if (log->all_direct_p2p >= 0)
		out_text("P2P type check: isAllDirectP2p %d\n", log->all_direct_p2p);
	show_notes(log, nodes == 1);

	if (trunc)
		out_text("\n%sThe log looks truncated%s: %s\n", out_cfg(OUT_WARN), out_cfg(OUT_PLAIN),
			 log->cut_line ? "it ends in the middle of a line (ignored)" :
					 "no `Init COMPLETE' or `Connected all rings' line");
	else if (filtered)
		out_text("\nNo INIT lines (NCCL_DEBUG_SUBSYS left them out): whether NCCL finished connecting is not judged\n");
	if (log->interleaved)
		out_text("%zu line(s) held several interleaved messages; only the last of each was read\n",
			 log->interleaved);
	if (log->binary_lines)
		out_text("%zu line(s) held NUL bytes, as a crash leaves in a log being written, and were skipped\n",
			 log->binary_lines);

	out_obj(OUT_JSON, "expect");
	for (int k = 0; k < EXP__COUNT; ++k) {
		if (!e[k].asked)
			continue;
		out_obj(OUT_JSON, exp_names[k]);
		out_bool(OUT_JSON, "ok", NULL, e[k].ok);
		out_str(OUT_JSON, "detail", NULL, e[k].why);
		out_str(OUT_JSON, "where", NULL, e[k].where[0] ? e[k].where : NULL);
		out_obj_end(OUT_JSON);
	}
	out_obj_end(OUT_JSON);
	for (int k = 0, first = 1; k < EXP__COUNT; ++k) {
		if (!e[k].asked)
			continue;
		if (first)
			out_text("\nExpectations\n");
		first = 0;
		out_text("  %-6s ", exp_names[k]);
		out_cstr(OUT_TEXT, e[k].ok ? OUT_GOOD : OUT_BAD, NULL, "%s", e[k].ok ? "met" : "NOT MET");
		out_str(OUT_TEXT, NULL, ": %s\n", e[k].why);
		if (e[k].where[0])
			out_str(OUT_TEXT, NULL, "         at: %s\n", e[k].where);
	}
}

/*
 * What the inputs themselves showed (a FIFO read as empty, a file with no
 * NCCL line among several): said on stderr as it is found, and kept for
 * the JSON document's "input_notes", since a script reads only that.
 */
struct notes {
	char (*v)[1024];
	size_t n, cap;
};

static void note(struct notes *ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct notes *ns, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out_note("%s", buf);
	if (ns->n < ns->cap)
		memcpy(ns->v[ns->n++], buf, sizeof(buf));
}

static void show_input_notes(const struct notes *ns)
{
	out_arr(OUT_JSON, "input_notes");
	for (size_t i = 0; i < ns->n; ++i)
		out_str(OUT_JSON, NULL, NULL, ns->v[i]);
	out_arr_end(OUT_JSON);
}

/*
 * A failure after some input was read: with --json, the error document
 * carries the notes too (out_fail() completes the document begun here).
 */
static int fail_noted(const struct notes *ns, int code, const char *msg)
{
	if (ns->n && out_json()) {
		out_begin(true);
		show_input_notes(ns);
		out_end();
	}
	return out_fail(code, "%s", msg);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--json] [--expect p2p,direct,gdr,dmabuf] [--] LOG... | -\n"
		"\n"
		"Reads NCCL_DEBUG=INFO output (nccl-tests or any application; several files\n"
		"or interleaved multi-node logs are fine; - reads standard input; a pipe\n"
		"into -, <(...) and a named FIFO whose writer is already there work: one\n"
		"without a writer reads as empty, it is not waited for) and reports the\n"
		"transport per rank and channel, the network and whether it used\n"
		"GPUDirect RDMA, what the log shows about DMA-BUF, the NCCL version and\n"
		"the log lines that explain a fallback. Lines may carry a\n"
		"launcher's prefix (mpirun --tag-output, pdsh, srun --label, Python logging).\n"
		"\n"
		"  --expect LIST  check: p2p    every intra-node connection uses P2P\n"
		"                        direct every intra-node connection is P2P/direct pointer\n"
		"                        gdr    every network connection uses GPUDirect RDMA\n"
		"                               (the GDRDMA flag of any network: IB, a plugin)\n"
		"                        dmabuf every GPU that uses the network shows a dma-buf\n"
		"                               registration (NCCL logs one only at TRACE level;\n"
		"                               its `DMA-BUF is available' init line proves nothing)\n"
		"                 An unmet expectation names the node and ranks at fault.\n"
		"  --json         JSON document\n"
		"\n"
		"Exit status: 0 read (and every expectation met), 1 an expectation failed,\n"
		"2 usage error, unreadable input or no NCCL lines in it, 4 permission\n"
		"denied reading a log (nvsidecar(8) has the table).\n",
		PROG_NAME, prog);
}

int nccl_check_main(int argc, const char *argv[])
{
	struct expect e[EXP__COUNT] = { 0 };
	const char **files = calloc(argc > 0 ? (size_t)argc : 1, sizeof(*files));
	struct nvs_nccl_log log;
	struct nvs_args_seen seen = { 0 };
	/* at most two per file: how a FIFO read, and no NCCL line in it */
	struct notes ns = { .v = calloc(argc > 0 ? 2 * (size_t)argc : 1, sizeof(*ns.v)),
			    .cap = argc > 0 ? 2 * (size_t)argc : 1 };
	bool all_ok = true, opts = true;
	char err[512], msg[1024];
	int nfiles = 0, ret = NVS_EX_USAGE;

	nvs_nccl_init(&log);
	if (!files || !ns.v) {
		free(files);
		free(ns.v);
		return out_fail(NVS_EX_FAIL, "Unable to allocate memory");
	}
	for (int i = 1; i < argc; ++i) {
		const char *a = argv[i];

		if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			usage(stdout, argv[0]);
			ret = NVS_EX_OK;
			goto cleanup;
		} else if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if (opts && !strcmp(a, "--json")) {
			out_set_json(true);
		} else if (opts && !strcmp(a, "--expect")) {
			if (i + 1 >= argc) {
				ret = out_usage(argv[0], "Missing value for `--expect'");
				goto cleanup;
			}
			/* once, as every option: the checks are one comma-separated LIST */
			if (nvs_arg_twice(&seen, argv[0], a))
				goto cleanup;
			if (parse_expect(argv[++i], e)) {
				ret = out_usage(argv[0], "Invalid --expect (use p2p, direct, gdr, dmabuf, comma separated): `%s'",
						argv[i]);
				goto cleanup;
			}
		} else if (opts && a[0] == '-' && a[1]) {
			ret = nvs_arg_invalid(argv[0], a, "--expect=");
			goto cleanup;
		} else {
			files[nfiles++] = a;
		}
	}
	if (!nfiles) {
		ret = out_usage(argv[0], "No log to read: name files, or - for standard input");
		goto cleanup;
	}
	for (int i = 0; i < nfiles; ++i) {
		size_t before = log.nccl_lines, lines = log.lines;
		int r = nvs_nccl_read(&log, files[i], err, sizeof(err));

		if (r) {
			ret = fail_noted(&ns, r == -ENOMEM ? NVS_EX_FAIL : nvs_exit_for_path(-r) == NVS_EX_PERM ?
					 NVS_EX_PERM : NVS_EX_USAGE, err);
			goto cleanup;
		}
		/* say only what is known: no writer, or a writer that wrote nothing */
		if (log.lines == lines && nvs_named_fifo(files[i]) && log.no_writer)
			note(&ns, "`%s' is a named FIFO that had no writer when it was opened: nccl-check does not wait for one (a log that never comes would hang it); start the writer first, or pipe the log in: WRITER | %s nccl-check -",
			     files[i], PROG_NAME);
		else if (log.lines == lines && nvs_named_fifo(files[i]))
			note(&ns, "`%s' is a named FIFO whose writer closed it without writing anything: the log is empty; check that the program writing it has output (run with NCCL_DEBUG=INFO)",
			     files[i]);
		if (log.nccl_lines == before && nfiles > 1)
			note(&ns, "No NCCL INFO or WARN lines in %zu line(s) of `%s'", log.lines - lines,
			     strcmp(files[i], "-") ? files[i] : "standard input");
	}
	if (!log.nccl_lines) {
		snprintf(msg, sizeof(msg),
			 "No NCCL INFO or WARN lines in %zu line(s) of %s%s%s: run the job with NCCL_DEBUG=INFO and pass its output",
			 log.lines, nfiles > 1 ? "input" : "`", nfiles > 1 ? "" :
			 strcmp(files[0], "-") ? files[0] : "standard input", nfiles > 1 ? "" : "'");
		ret = fail_noted(&ns, NVS_EX_USAGE, msg);
		goto cleanup;
	}
	nvs_nccl_sort(&log);
	if (e[EXP_P2P].asked)
		e[EXP_P2P].ok = nvs_nccl_expect_p2p(&log, false, e[EXP_P2P].why, sizeof(e[0].why), e[EXP_P2P].where,
						    sizeof(e[0].where));
	if (e[EXP_DIRECT].asked)
		e[EXP_DIRECT].ok = nvs_nccl_expect_p2p(&log, true, e[EXP_DIRECT].why, sizeof(e[0].why),
						       e[EXP_DIRECT].where, sizeof(e[0].where));
	if (e[EXP_GDR].asked)
		e[EXP_GDR].ok = nvs_nccl_expect_gdr(&log, e[EXP_GDR].why, sizeof(e[0].why), e[EXP_GDR].where,
						    sizeof(e[0].where));
	if (e[EXP_DMABUF].asked)
		e[EXP_DMABUF].ok = nvs_nccl_expect_dmabuf(&log, e[EXP_DMABUF].why, sizeof(e[0].why),
							  e[EXP_DMABUF].where, sizeof(e[0].where));
	for (int k = 0; k < EXP__COUNT; ++k)
		all_ok &= !e[k].asked || e[k].ok;
	ret = all_ok ? NVS_EX_OK : NVS_EX_FAIL;
	out_begin(true);
	out_bool(OUT_JSON, "ok", NULL, all_ok);
	out_int(OUT_JSON, "exit", NULL, ret);
	show(&log, e, files, nfiles);
	show_input_notes(&ns);
	if (out_end() < 0)
		ret = NVS_EX_FAIL;
cleanup:
	free(ns.v);
	free(files);
	nvs_nccl_free(&log);
	return ret;
}
