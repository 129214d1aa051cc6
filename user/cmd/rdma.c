// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar rdma: parse the options, run the test (check/rdma.c has the
 * protocol) and render the run, as text or JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/rdma.h"
#include "cli/args.h"
#include "cli/out.h"
#include "cmd/subcommands.h"
#include "lib/exit.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

/* --- output --- */

static void say_waiting(const struct nvs_rdma_run *r)
{
	out_note("Waiting up to %d s for a client on port %s", r->o.wait_s, r->o.port);
}

static double gbps(const struct nvs_rdma_result *x)
{
	return x->bw_ns ? (double)x->bytes / (double)x->bw_ns : 0;	/* bytes/ns = GB/s */
}

static double lat_us(const struct nvs_rdma_result *x)
{
	return x->lat_n ? (double)x->lat_ns / (double)x->lat_n / 1000.0 : 0;
}

static const char *mode_str(const struct nvs_rdma_opts *o)
{
	return o->loopback ? "loopback" : o->server ? "server" : "client";
}

static void show(struct nvs_rdma_run *r)
{
	unsigned long total = 0, ok = 0;

	out_str(OUT_JSON, "mode", NULL, mode_str(&r->o));
	out_str(OUT_JSON, "device", NULL, r->a.dev[0] ? r->a.dev : NULL);
	out_str(OUT_JSON, "device_why", NULL, r->why[0] ? r->why : NULL);
	out_int(OUT_JSON, "port", NULL, r->a.port);
	out_str(OUT_JSON, "gid", NULL, r->a.gid_str[0] ? r->a.gid_str : NULL);
	if (r->o.loopback) {
		out_str(OUT_JSON, "peer_device", NULL, r->b.dev[0] ? r->b.dev : NULL);
		out_str(OUT_JSON, "peer_device_why", NULL, r->peer_why);
	}
	out_str(OUT_JSON, "gpu", NULL, r->gpu_bdf[0] ? r->gpu_bdf : NULL);
	out_str(OUT_JSON, "mem", NULL, nvs_rmem_kind_str(r->o.mem));
	out_str(OUT_JSON, "mem_registration", NULL, r->a.mem.what[0] ? r->a.mem.what : NULL);
	out_str(OUT_JSON, "peer_mem", NULL, r->o.server ? NULL : nvs_rmem_kind_str(r->o.peer_mem));
	if (r->a.dev[0]) {
		out_text("Mode:     %s\n", mode_str(&r->o));
		out_str(OUT_TEXT, NULL, "Device:   %s", r->a.dev);
		out_text(" port %d, gid %s (%s)\n", r->a.port, r->a.gid_str, r->why);
		if (r->o.loopback && r->b.dev[0]) {
			out_str(OUT_TEXT, NULL, "Peer:     %s", r->b.dev);
			out_text(" port %d, gid %s (%s)\n", r->b.port, r->b.gid_str, r->peer_why);
		}
		if (r->gpu_bdf[0])
			out_text("GPU:      %d (%s)\n", r->o.gpu, r->gpu_bdf);
		if (r->a.mem.what[0])
			out_text("Memory:   %s%s%s\n", r->a.mem.what, r->o.server ? "" : "; peer ",
				 r->o.server ? "" : r->o.loopback && r->b.mem.what[0] ? r->b.mem.what :
				 nvs_rmem_kind_str(r->o.peer_mem));
	}
	if (r->nres) {
		out_text("\n%-6s %10s %10s %10s", "op", "bytes", "transfers", "verified");
		if (!r->o.server)
			out_text(" %12s %10s", "GB/s", "lat us");
		out_text("\n");
	}
	out_arr(OUT_JSON, "results");
	for (size_t i = 0; i < r->nres; i++) {
		const struct nvs_rdma_result *x = &r->res[i];

		out_obj(OUT_JSON, NULL);
		out_str(OUT_ANY, "op", "%-6s", x->write ? "write" : "read");
		out_uint(OUT_ANY, "size", " %10llu", x->size);
		out_uint(OUT_ANY, "transfers", " %10llu", x->done);
		out_uint(OUT_ANY, "verified", " %10llu", x->verified);
		if (!r->o.server) {
			out_double(OUT_ANY, "gbps", " %12.6f", gbps(x), 6);
			out_double(OUT_ANY, "lat_us", " %10.2f", lat_us(x), 2);
		}
		out_text("\n");
		out_obj_end(OUT_JSON);
		total += x->done;
		ok += x->verified;
	}
	out_arr_end(OUT_JSON);
	out_bool(OUT_JSON, "ok", NULL, !r->exit);
	out_int(OUT_JSON, "exit", NULL, r->exit);
	out_str(OUT_JSON, "error", NULL, r->exit ? r->err : NULL);
	if (!r->exit)
		out_text("\n%sAll %lu transfers verified%s\n", out_cfg(OUT_GOOD), ok, out_cfg(OUT_PLAIN));
	else if (total)
		/* Say it failed: the table alone reads like a clean run. */
		out_text("\nFAILED (exit %d): %lu of the %lu transfers completed before the failure were verified\n",
			 r->exit, ok, total);
	else if (r->nres)
		out_text("\nFAILED (exit %d): no transfer completed\n", r->exit);
}

/* --- arguments --- */

static int parse_sizes(struct nvs_rdma_opts *o, const char *s)
{
	char buf[512], *save = NULL, *t;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	o->nsizes = 0;
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->nsizes == NVS_RDMA_MAX_SIZES || nvs_parse_size(t, 1, 1ULL << 30, 0, &v))
			return -EINVAL;
		o->sizes[o->nsizes++] = (size_t)v;
	}
	return o->nsizes ? 0 : -EINVAL;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	uint64_t v;

	if (nvs_parse_u64(s, (uint64_t)lo, (uint64_t)hi, &v))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s %s (--loopback | --server | --client HOST) [options]\n"
		"\n"
		"Registers host or GPU memory with an RDMA NIC, moves data with RDMA WRITE\n"
		"and READ over a size sweep, verifies every transfer (sequence-stamped pattern\n"
		"and checksum; GPU memory is copied back to check) and reports GB/s (decimal)\n"
		"and latency.\n"
		"\n"
		"Modes:\n"
		"  --loopback            two queue pairs on this host (--dev, --peer-dev)\n"
		"  --server              wait for one client (rdma_cm), serve it, exit\n"
		"  --client HOST         connect to a server at HOST (the NIC's IP)\n"
		"Options:\n"
		"  --dev NAME            RDMA device; default: nearest the GPU by PCI\n"
		"                        topology, else the first active port\n"
		"  --peer-dev NAME       loopback: the other queue pair's device (default --dev)\n"
		"  --mem KIND            this side's memory: host, cuda-dmabuf, cuda-peermem\n"
		"  --peer-mem KIND       loopback: the other side's memory (default host)\n"
		"  --dmabuf-source SRC   cuda (default) or udmabuf: a memfd-backed dma-buf that\n"
		"                        tests the dma-buf registration path without a GPU\n"
		"  --gpu N               CUDA device ordinal (default 0)\n"
		"  --cuda-lib PATH       libcuda to load (default libcuda.so.1)\n"
		"  --sizes LIST          comma-separated sizes, K/M/G suffixes (default 4K,64K,1M,8M)\n"
		"  --iters N             bandwidth transfers per size and op (default 200)\n"
		"  --op write|read|both  (default both)\n"
		"  --buffer SIZE         registered buffer per side (default 64M)\n"
		"  --port N              rdma_cm port (default 18515)\n"
		"  --bind ADDR           server: address to listen on; client: source address\n"
		"  --timeout S           limit for every wait: address, route, connection,\n"
		"                        each completion, each answer (default 10)\n"
		"  --wait S              server: how long to wait for a client (default 120)\n"
		"  --json                one JSON document on stdout\n"
		"\n"
		"Every transfer's destination is checked. Latency is the mean of up to %d\n"
		"transfers with one in flight.\n"
		"Test only: NVS_RDMA_TEST_CORRUPT=1 flips one received byte before it is\n"
		"checked, to show that verification catches it.\n"
		"\n"
		"Exit status: 0 every transfer verified; 1 data arrived wrong, or memory\n"
		"could not be set up; 2 usage error; 3 no RDMA\n"
		"device, rdma_cm, libcuda or GPU; 6 libcuda refused the dma-buf export (the\n"
		"GeForce gate); 7 the NIC refused the memory registration; 10 connection\n"
		"failed (address, route, refused, port in use, no client); 11 a transfer\n"
		"failed or timed out (peer gone, link down); 12 another process holds the\n"
		"GPU (exclusive-process compute mode). The codes are nvsidecar(8)'s one\n"
		"table.\n",
		PROG_NAME, prog, NVS_RDMA_LAT_ITERS);
}

/* Every option, for nvs_arg_invalid(): those that take a value end in `=' */
#define OPTIONS "--loopback --server --client= --dev= --peer-dev= --bind= --cuda-lib= --port= --mem= " \
	"--peer-mem= --dmabuf-source= --gpu= --iters= --timeout= --wait= --sizes= --buffer= --op="

static bool takes_value(const char *a)
{
	static const char *const names[] = {
		"--client", "--dev", "--peer-dev", "--bind", "--cuda-lib", "--port", "--mem",
		"--peer-mem", "--dmabuf-source", "--gpu", "--iters", "--timeout", "--wait",
		"--sizes", "--buffer", "--op",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return true;
	return false;
}

static int parse(struct nvs_rdma_opts *o, int argc, const char *argv[])
{
	bool peer_mem_set = false, wait_set = false;
	struct nvs_args_seen seen = { 0 };
	int modes = 0;

	*o = (struct nvs_rdma_opts){ .iters = 200, .timeout_s = 10, .wait_s = 120, .port = "18515",
			    .do_write = true, .do_read = true, .buffer = 64UL << 20 };
	parse_sizes(o, "4K,64K,1M,8M");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return 1;
		} else if (!strcmp(a, "--loopback")) {
			o->loopback = true;
			modes++;
			takes = false;
		} else if (!strcmp(a, "--server")) {
			o->server = true;
			modes++;
			takes = false;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
			takes = false;
			out_set_json(true);
		} else if (!strcmp(a, "--lib") || !strncmp(a, "--lib=", 6)) {
			/* the others' name for it (p2p, doctor, libcuda): admin review L7 */
			return out_usage(argv[0], "Invalid argument: `%s': rdma names its libcuda with --cuda-lib PATH", a);
		} else if (!takes_value(a)) {
			return nvs_arg_invalid(argv[0], a, OPTIONS);
		} else if (!v) {
			return out_usage(argv[0], "Missing value for `%s'", a);
		} else if (nvs_arg_twice(&seen, argv[0], a)) {
			return NVS_EX_USAGE;
		} else if (!strcmp(a, "--client")) {
			o->client = v;
			modes++;
		} else if (!strcmp(a, "--dev")) {
			o->dev = v;
		} else if (!strcmp(a, "--peer-dev")) {
			o->peer_dev = v;
		} else if (!strcmp(a, "--bind")) {
			o->bind = v;
		} else if (!strcmp(a, "--cuda-lib")) {
			o->cuda_lib = v;
		} else if (!strcmp(a, "--port")) {
			int p;

			if (parse_int(v, 1, 65535, &p))
				return out_usage(argv[0], "Port is not 1..65535: `%s'", v);
			o->port = v;
		} else if (!strcmp(a, "--mem") || !strcmp(a, "--peer-mem")) {
			if (nvs_rmem_parse_kind(v, a[2] == 'm' ? &o->mem : &o->peer_mem))
				return out_usage(argv[0], "Unknown memory kind (host, cuda-dmabuf, cuda-peermem): `%s'", v);
			peer_mem_set |= a[2] == 'p';
		} else if (!strcmp(a, "--dmabuf-source")) {
			if (!strcmp(v, "cuda"))
				o->src = NVS_RMEM_SRC_CUDA;
			else if (!strcmp(v, "udmabuf"))
				o->src = NVS_RMEM_SRC_UDMABUF;
			else
				return out_usage(argv[0], "Unknown dma-buf source (cuda, udmabuf): `%s'", v);
		} else if (!strcmp(a, "--gpu")) {
			if (parse_int(v, 0, 1023, &o->gpu))
				return out_usage(argv[0], "GPU is not a CUDA ordinal: `%s'", v);
		} else if (!strcmp(a, "--iters")) {
			if (parse_int(v, 1, 100000000, &o->iters))
				return out_usage(argv[0], "Iterations are not 1..100000000: `%s'", v);
		} else if (!strcmp(a, "--timeout") || !strcmp(a, "--wait")) {
			wait_set |= a[2] == 'w';
			if (parse_int(v, 1, 86400, a[2] == 't' ? &o->timeout_s : &o->wait_s))
				return out_usage(argv[0], "%s takes seconds, 1..86400: `%s'", a, v);
		} else if (!strcmp(a, "--sizes")) {
			if (parse_sizes(o, v))
				return out_usage(argv[0], "Sizes are a comma-separated list of 1 byte..1G, with K/M/G suffixes, at most %d: `%s'",
					NVS_RDMA_MAX_SIZES, v);
		} else if (!strcmp(a, "--buffer")) {
			uint64_t b;

			if (nvs_parse_size(v, 1, 1ULL << 30, 0, &b))
				return out_usage(argv[0], "Buffer size is not 1 byte..1G: `%s'", v);
			o->buffer = (size_t)b;
		} else if (!strcmp(a, "--op")) {
			o->do_write = !strcmp(v, "write") || !strcmp(v, "both");
			o->do_read = !strcmp(v, "read") || !strcmp(v, "both");
			if (!o->do_write && !o->do_read)
				return out_usage(argv[0], "Operation is write, read or both: `%s'", v);
		} else {
			return nvs_arg_invalid(argv[0], a, OPTIONS);
		}
		if (takes)
			i++;
	}
	if (modes != 1)
		return out_usage(argv[0], "Choose exactly one of --loopback, --server or --client HOST");
	if (!o->loopback && (o->peer_dev || peer_mem_set))
		return out_usage(argv[0], "--peer-dev and --peer-mem are for --loopback: in two-node mode each side chooses its own");
	for (size_t i = 0; i < o->nsizes; i++) {
		if (o->sizes[i] > o->buffer)
			return out_usage(argv[0], "Size %zu is larger than the %zu byte buffer: raise --buffer",
				o->sizes[i], o->buffer);
	}
	if (wait_set && !o->server)
		return out_usage(argv[0], "--wait is for --server: how long it waits for a client");
	if (o->src == NVS_RMEM_SRC_UDMABUF && o->mem != NVS_RMEM_CUDA_DMABUF && o->peer_mem != NVS_RMEM_CUDA_DMABUF)
		return out_usage(argv[0], "--dmabuf-source applies to --mem cuda-dmabuf");
	return 0;
}

int rdma_main(int argc, const char *argv[])
{
	struct nvs_rdma_run *r;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r) {
		perror("Unable to allocate memory");
		return NVS_EX_FAIL;
	}
	ret = parse(&r->o, argc, argv);
	if (ret) {
		free(r);
		return ret == 1 ? NVS_EX_OK : ret;
	}
	nvs_rdma_init(r);
	r->waiting = say_waiting;
	nvs_rdma_do(r);
	out_begin(false);
	show(r);
	out_end();
	if (r->exit)
		out_note("%s", r->err);
	ret = r->exit;
	nvs_rdma_release(r);
	free(r);
	return ret;
}
