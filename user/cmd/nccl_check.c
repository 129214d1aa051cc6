// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar nccl-check: did NCCL really use P2P, GPUDirect RDMA and
 * DMA-BUF? The reading is check/nccl.c's; this file asks and shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/nccl.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/json.h"
#include "common/out.h"

enum { EXP_P2P = 1, EXP_GDR = 2, EXP_DMABUF = 4, EXP_DIRECT = 8 };

static int parse_expect(const char *s, unsigned int *exp)
{
	char buf[128], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "p2p"))
			*exp |= EXP_P2P;
		else if (!strcmp(tok, "direct"))
			*exp |= EXP_DIRECT;
		else if (!strcmp(tok, "gdr"))
			*exp |= EXP_GDR;
		else if (!strcmp(tok, "dmabuf"))
			*exp |= EXP_DMABUF;
		else
			return -EINVAL;
	}
	return *exp ? 0 : -EINVAL;
}

static void print_human(const struct nvs_nccl_log *log, bool color)
{
	const char *b = color ? "\033[1m" : "", *o = color ? "\033[0m" : "", *w = color ? "\033[33m" : "";
	size_t per[NVS_NCCL__COUNT] = { 0 };

	printf("%sNCCL%s %s, %zu NCCL lines of %zu, %zu connection(s), %zu rank(s) completed init\n", b, o,
	       log->version[0] ? log->version : "(version not logged)", log->nccl_lines, log->lines,
	       log->n_conns, log->init_complete);
	for (size_t i = 0; i < log->n_conns; ++i)
		per[log->conns[i].t]++;
	printf("\n%sTransports%s\n", b, o);
	for (int t = 0; t < NVS_NCCL__COUNT; ++t)
		if (per[t])
			printf("  %-20s %zu\n", nvs_nccl_transport_str(t), per[t]);
	if (!log->n_conns)
		printf("  none logged\n");

	printf("\n%sConnections%s (rank -> peer: channels, transport)\n", b, o);
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];
		bool seen = false;

		for (size_t k = 0; k < i && !seen; ++k) {
			const struct nvs_nccl_conn *p = &log->conns[k];

			seen = p->from_rank == c->from_rank && p->to_rank == c->to_rank &&
			       !strcmp(p->via, c->via) && !strcmp(p->dir, c->dir);
		}
		if (seen)
			continue;
		printf("  rank %d -> %d%s%s%s: %s", c->from_rank, c->to_rank, c->dir[0] ? " [" : "", c->dir,
		       c->dir[0] ? "]" : "", c->kind);
		for (size_t k = i, first = 1; k < log->n_conns; ++k) {
			const struct nvs_nccl_conn *p = &log->conns[k];

			if (p->from_rank == c->from_rank && p->to_rank == c->to_rank && !strcmp(p->via, c->via) &&
			    !strcmp(p->dir, c->dir)) {
				printf("%s%02d", first ? " " : ",", p->channel);
				first = 0;
			}
		}
		printf(" via %s%s%s%s\n", c->via, c->gdr ? " (GDR)" : "", c->host[0] ? " on " : "", c->host);
	}

	printf("\n%sDMA-BUF%s: ", b, o);
	if (!log->n_dmabuf)
		printf("not reported\n");
	for (size_t i = 0; i < log->n_dmabuf; ++i)
		printf("%sGPU %d%s%s%s", i ? ", " : "", log->dmabuf[i].dev, log->dmabuf[i].host[0] ? " on " : "",
		       log->dmabuf[i].host, i + 1 == log->n_dmabuf ? "\n" : "");
	if (log->all_direct_p2p >= 0)
		printf("P2P type check: isAllDirectP2p %d\n", log->all_direct_p2p);

	if (log->n_notes)
		printf("\n%sNotes%s\n", b, o);
	for (size_t i = 0; i < log->n_notes; ++i) {
		const struct nvs_nccl_note *n = &log->notes[i];

		printf("  %s%s%s%s%s: %s\n", n->warn ? w : "", n->warn ? "WARN" : "INFO", o,
		       n->host[0] ? " " : "", n->host, n->text);
		if (n->explain)
			printf("        %s\n", n->explain);
	}
	if (log->cut_line || (log->n_conns && !log->init_complete && !log->connected))
		printf("\n%sThe log looks truncated%s: %s\n", w, o,
		       log->cut_line ? "it ends in the middle of a line (ignored)" :
				       "no `Init COMPLETE' or `Connected all rings' line");
	if (log->interleaved)
		printf("%zu line(s) held several interleaved messages; only the last of each was read\n",
		       log->interleaved);
}

static void print_json(const struct nvs_nccl_log *log, unsigned int exp, const bool *ok, char (*why)[256])
{
	struct json j;
	static const char *const names[] = { "p2p", "gdr", "dmabuf", "direct" };

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "version", log->version[0] ? log->version : NULL);
	json_uint(&j, "lines", log->lines);
	json_uint(&j, "nccl_lines", log->nccl_lines);
	json_uint(&j, "init_complete", log->init_complete);
	json_bool(&j, "truncated", log->cut_line || (log->n_conns && !log->init_complete && !log->connected));
	json_uint(&j, "interleaved", log->interleaved);
	if (log->all_direct_p2p >= 0)
		json_int(&j, "all_direct_p2p", log->all_direct_p2p);
	json_obj_open(&j, "transports");
	for (int t = 0; t < NVS_NCCL__COUNT; ++t) {
		size_t n = 0;

		for (size_t i = 0; i < log->n_conns; ++i)
			n += log->conns[i].t == (enum nvs_nccl_transport)t;
		json_uint(&j, nvs_nccl_transport_str(t), n);
	}
	json_obj_close(&j);
	json_arr_open(&j, "connections");
	for (size_t i = 0; i < log->n_conns; ++i) {
		const struct nvs_nccl_conn *c = &log->conns[i];

		json_obj_open(&j, NULL);
		json_str(&j, "host", c->host[0] ? c->host : NULL);
		json_int(&j, "pid", c->pid);
		json_int(&j, "dev", c->dev);
		json_str(&j, "kind", c->kind);
		json_int(&j, "channel", c->channel);
		json_int(&j, "from_rank", c->from_rank);
		json_int(&j, "to_rank", c->to_rank);
		json_str(&j, "dir", c->dir[0] ? c->dir : NULL);
		json_str(&j, "via", c->via);
		json_str(&j, "transport", nvs_nccl_transport_str(c->t));
		json_bool(&j, "gdr", c->gdr);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "dmabuf");
	for (size_t i = 0; i < log->n_dmabuf; ++i) {
		json_obj_open(&j, NULL);
		json_str(&j, "host", log->dmabuf[i].host[0] ? log->dmabuf[i].host : NULL);
		json_int(&j, "dev", log->dmabuf[i].dev);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_arr_open(&j, "notes");
	for (size_t i = 0; i < log->n_notes; ++i) {
		json_obj_open(&j, NULL);
		json_str(&j, "level", log->notes[i].warn ? "WARN" : "INFO");
		json_str(&j, "host", log->notes[i].host[0] ? log->notes[i].host : NULL);
		json_str(&j, "text", log->notes[i].text);
		json_str(&j, "explain", log->notes[i].explain);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_open(&j, "expect");
	for (int i = 0; i < 4; ++i) {
		if (!(exp & 1u << i))
			continue;
		json_obj_open(&j, names[i]);
		json_bool(&j, "ok", ok[i]);
		json_str(&j, "detail", why[i]);
		json_obj_close(&j);
	}
	json_obj_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s [--json] [--expect p2p,direct,gdr,dmabuf] LOG... | -\n"
		"\n"
		"Reads NCCL_DEBUG=INFO output (nccl-tests or any application; several files\n"
		"or interleaved multi-node logs are fine; - reads standard input) and reports\n"
		"the transport per rank and channel, DMA-BUF availability, GDR use, the NCCL\n"
		"version and the log lines that explain a fallback.\n"
		"\n"
		"  --expect LIST  check: p2p    every intra-node connection uses P2P\n"
		"                        direct every intra-node connection is P2P/direct pointer\n"
		"                        gdr    every network connection is NET/IB with GDRDMA\n"
		"                        dmabuf DMA-BUF is available on every GPU using the network\n"
		"  --json         JSON document\n"
		"\n"
		"Exit status: 0 read (and every expectation met), 1 an expectation failed,\n"
		"2 usage error, unreadable input or no NCCL lines in it.\n",
		PROG_NAME, prog);
}

int nccl_check_main(int argc, const char *argv[])
{
	struct nvs_nccl_log log;
	unsigned int exp = 0;
	bool json = false, ok[4] = { true, true, true, true }, all_ok = true;
	char err[512], why[4][256] = { "" };
	int nfiles = 0, ret = 2;

	nvs_nccl_init(&log);
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout, argv[0]);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--expect") && i + 1 < argc) {
			if (parse_expect(argv[++i], &exp)) {
				fprintf(stderr, "Invalid --expect (use p2p, direct, gdr, dmabuf, comma separated): `%s'\n",
					argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "Invalid argument: `%s'\n", argv[i]);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	for (int i = 1; i < argc; ++i) {
		FILE *f;
		const char *name = argv[i];
		int r;

		if (!strcmp(name, "--expect")) {
			++i;
			continue;
		}
		if (name[0] == '-' && name[1])
			continue;
		nfiles++;
		f = strcmp(name, "-") ? fopen(name, "re") : stdin;
		if (!f) {
			fprintf(stderr, "Unable to open NCCL log `%s': %s\n", name, strerror(errno));
			goto cleanup;
		}
		r = nvs_nccl_parse(&log, f, strcmp(name, "-") ? name : "standard input", err, sizeof(err));
		if (f != stdin)
			fclose(f);
		if (r) {
			fprintf(stderr, "%s\n", err);
			goto cleanup;
		}
	}
	if (!nfiles) {
		usage(stderr, argv[0]);
		goto cleanup;
	}
	if (!log.nccl_lines) {
		fprintf(stderr,
			"No NCCL INFO or WARN lines in %zu line(s) of input: run the job with NCCL_DEBUG=INFO and pass its output\n",
			log.lines);
		goto cleanup;
	}
	nvs_nccl_sort(&log);
	if (exp & EXP_P2P)
		ok[0] = nvs_nccl_expect_p2p(&log, false, why[0], sizeof(why[0]));
	if (exp & EXP_GDR)
		ok[1] = nvs_nccl_expect_gdr(&log, why[1], sizeof(why[1]));
	if (exp & EXP_DMABUF)
		ok[2] = nvs_nccl_expect_dmabuf(&log, why[2], sizeof(why[2]));
	if (exp & EXP_DIRECT)
		ok[3] = nvs_nccl_expect_p2p(&log, true, why[3], sizeof(why[3]));
	for (int k = 0; k < 4; ++k)
		all_ok &= ok[k];

	if (json) {
		print_json(&log, exp, ok, why);
	} else {
		const char *nc = getenv("NO_COLOR");
		bool color = isatty(STDOUT_FILENO) && (!nc || !*nc);
		static const char *const names[] = { "p2p", "gdr", "dmabuf", "direct" };

		print_human(&log, color);
		if (exp)
			printf("\nExpectations\n");
		for (int k = 0; k < 4; ++k)
			if (exp & 1u << k)
				printf("  %-6s %s: %s\n", names[k], ok[k] ? "met" : "NOT MET", why[k]);
	}
	ret = all_ok ? 0 : 1;
cleanup:
	nvs_nccl_free(&log);
	return ret;
}
