// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar dmabuf probe: makes a dma-buf (from CUDA, udmabuf, the system
 * dma-heap, or an fd the caller passes in) and has the kernel import it as
 * an RDMA driver would, then reports how the exporter mapped it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/gpu.h"
#include "cli/out.h"
#include "cli/row_dmabuf.h"
#include "cmd/subcommands.h"
#include "lib/busid.h"
#include "lib/exit.h"
#include "lib/parse.h"
#include "sys/cuda.h"
#include "sys/dmabuf.h"
#include "libnvsidecar.h"

enum source { SRC_NONE, SRC_CUDA, SRC_UDMABUF, SRC_HEAP, SRC_FD };
static const char *const source_names[] = {
	[SRC_NONE] = "none", [SRC_CUDA] = "cuda", [SRC_UDMABUF] = "udmabuf",
	[SRC_HEAP] = "dma-heap", [SRC_FD] = "fd",
};

#define DEFAULT_SIZE (32ULL << 20)

struct opts {
	enum source source;
	const char *gpu_arg;
	const char *importer;
	char importer_name[NVS_BUSID_LEN];	/* what the module is sent */
	const char *lib;
	uint64_t size;
	int fd;
	bool json, dump;
};

/* What the buffer came from, for the report. */
struct origin {
	char cuda_dev[64];	/* CUDA device name, cuda source only */
	int gpu;		/* nvsidecar index compared against, or NVS_GPU_ANY */
	char gpu_busid[NVS_BUSID_LEN];
};

static void show_usage(FILE *f)
{
	fprintf(f, "Usage: %s dmabuf probe [--gpu GPU] [--source cuda|udmabuf|dma-heap | --fd N]\n"
		   "                 [--importer BDF] [--size SIZE] [--lib PATH] [--json | --dump]\n\n",
		PROG_NAME);
	fprintf(f, "Has the kernel import a dma-buf the way an RDMA driver does (a dynamic,\n"
		   "peer-to-peer capable attachment on a PCI device), map it, and report the\n"
		   "exporter, size, scatterlist entries, whether the DMA addresses lie in the\n"
		   "GPU's BAR1, and whether the kernel's P2P-DMA check allows the pair.\n"
		   "Needs root (CAP_NET_ADMIN) and the nvsidecar module.\n\n"
		   "  --gpu GPU          nvsidecar GPU (\"0\", \"gpu0\" or its bus id) whose BAR1\n"
		   "                     is compared against; also the default importer\n"
		   "  --source SRC       cuda (default with --gpu): cuMemAlloc on that GPU, then\n"
		   "                     cuMemGetHandleForAddressRange(DMA_BUF_FD);\n"
		   "                     udmabuf: a sealed memfd through " NVS_UDMABUF_DEV ";\n"
		   "                     dma-heap: " NVS_DMAHEAP_DEV "\n"
		   "  --fd N             probe dma-buf fd N inherited from the caller instead\n"
		   "  --importer BDF     attach on behalf of this PCI device (e.g. the RDMA NIC),\n"
		   "                     \"0000:41:00.0\"; default: the GPU itself\n"
		   "  --size SIZE        bytes, with an optional K, M or G (binary) suffix; a\n"
		   "                     multiple of the page size (default 32M)\n"
		   "  --lib PATH         libcuda to load (default: libcuda.so.1, e.g. a copy\n"
		   "                     written by `nvsidecar libcuda patch')\n"
		   "  --json             one JSON document\n"
		   "  --dump             one tab-separated line: source exporter importer size\n"
		   "                     nents mapped seg_min seg_max verdict bar1_start bar1_len\n"
		   "                     p2p p2p_distance step errno\n\n"
		   "Exit codes (the table in nvsidecar(8)):\n"
		   "  0  the buffer was mapped (for --source cuda: and lies inside BAR1)\n"
		   "  1  other failure (bad fd, no such importer device, ...)\n"
		   "  2  invalid arguments\n"
		   "  3  missing: the nvsidecar module, libcuda, the CUDA device or the GPU\n"
		   "  4  permission denied (run as root)\n"
		   "  6  libcuda refused to export (CUDA_ERROR_NOT_SUPPORTED, 801): the GeForce\n"
		   "     dma-buf gate; run `nvsidecar libcuda patch' and pass --lib\n"
		   "  7  the exporter refused the importer (attach, map or fence step)\n"
		   "  8  GPU memory was mapped but not inside BAR1 (no Resizable BAR, or a\n"
		   "     BAR1 too small); see the dmabuf section of nvsidecar(8)\n");
}

struct cuda_buf {
	struct nvs_cuda cu;
	CUdevice dev;
	bool ctx;
	CUdeviceptr ptr;
};

static void cuda_release(struct cuda_buf *cb)
{
	if (cb->ptr && cb->cu.cuMemFree_v2)
		cb->cu.cuMemFree_v2(cb->ptr);
	if (cb->ctx && cb->cu.cuDevicePrimaryCtxRelease_v2)
		cb->cu.cuDevicePrimaryCtxRelease_v2(cb->dev);
	nvs_cuda_unload(&cb->cu);
}

/*
 * Allocates size bytes on the CUDA device at busid and exports them. Returns
 * the fd, or -EX_* with the message printed.
 */
static int make_cuda(struct cuda_buf *cb, const char *lib, const char *busid,
		     uint64_t size, struct origin *org)
{
	char err[512], name[32];
	CUcontext ctx;
	CUresult r;
	int n = 0, fd = -1, i;

	memset(cb, 0, sizeof(*cb));
	if (nvs_cuda_load(&cb->cu, lib, err, sizeof(err)) < 0)
		return -out_fail(lib ? NVS_EX_USAGE : NVS_EX_MISSING, "%s", err);
#define NEED(f) do { if (!cb->cu.f) return -out_fail(NVS_EX_MISSING, "%s lacks %s: CUDA 11.7 or newer is needed for dma-buf export", cb->cu.path, #f); } while (0)
	NEED(cuDeviceGetPCIBusId);
	NEED(cuDevicePrimaryCtxRetain);
	NEED(cuCtxSetCurrent);
	NEED(cuMemAlloc_v2);
	NEED(cuMemFree_v2);
#undef NEED
	r = cb->cu.cuInit(0);
	if (r != CUDA_SUCCESS) {
		return -out_fail(NVS_EX_FAIL, "Unable to initialise CUDA: %s (is the NVIDIA driver loaded?)",
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
	}
	if (cb->cu.cuDeviceGetCount(&n) != CUDA_SUCCESS)
		n = 0;
	for (i = 0; i < n; ++i) {
		CUdevice d;

		if (cb->cu.cuDeviceGet(&d, i) != CUDA_SUCCESS ||
		    cb->cu.cuDeviceGetPCIBusId(name, sizeof(name), d) != CUDA_SUCCESS)
			continue;
		if (nvs_same_busid(name, busid)) {
			cb->dev = d;
			break;
		}
	}
	if (i == n) {
		return -out_fail(NVS_EX_MISSING, "No CUDA device at `%s' among %d (is CUDA_VISIBLE_DEVICES hiding it?)",
			busid, n);
	}
	if (cb->cu.cuDeviceGetName)
		cb->cu.cuDeviceGetName(org->cuda_dev, sizeof(org->cuda_dev), cb->dev);
	r = cb->cu.cuDevicePrimaryCtxRetain(&ctx, cb->dev);
	if (r != CUDA_SUCCESS) {
		return -out_fail(NVS_EX_FAIL, "Unable to create a CUDA context on `%s': %s", busid,
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
	}
	cb->ctx = true;
	r = cb->cu.cuCtxSetCurrent(ctx);
	if (r == CUDA_SUCCESS)
		r = cb->cu.cuMemAlloc_v2(&cb->ptr, (size_t)size);
	if (r != CUDA_SUCCESS) {
		cb->ptr = 0;
		return -out_fail(NVS_EX_FAIL, "Unable to allocate %" PRIu64 " bytes of GPU memory: %s", size,
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
	}
	r = nvs_cuda_export_dmabuf(&cb->cu, cb->ptr, (size_t)size, &fd, err, sizeof(err));
	if (r == CUDA_ERROR_NOT_SUPPORTED)
		return -out_fail(NVS_EX_GATE, "libcuda refused to export GPU memory as a dma-buf: %s", err);
	if (r != CUDA_SUCCESS)
		return -out_fail(r == NVS_CUDA_NO_ENTRY ? NVS_EX_MISSING : NVS_EX_FAIL,
				 "Unable to export GPU memory as a dma-buf: %s", err);
	return fd;
}

/* The result as text, JSON or a --dump line (cli/row_dmabuf.c describes it). */
static void show(const struct opts *o, const struct origin *org, const struct nvs_dmabuf_result *r, int code)
{
	struct dmabuf_row row = { .r = *r, .code = code, .source = source_names[o->source],
				  .cuda_dev = org->cuda_dev, .has_gpu = org->gpu != NVS_GPU_ANY, .gpu = org->gpu,
				  .gpu_busid = org->gpu_busid };

	dmabuf_row_finish(&row);
	out_begin(true);
	row_render(&dmabuf_probe_row, &row, row_mode(o->dump), NULL);
}

/* Returns 0 to run, 1 after --help, or the exit code (reported). */
static int parse_args(int argc, const char *argv[], struct opts *o)
{
	const char *u = "dmabuf probe";
	struct nvs_args_seen seen = { 0 };
	uint64_t v64;
	int i;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->size = DEFAULT_SIZE;
	for (i = 2; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			o->json = true;
			out_set_json(true);
			continue;
		}
		if (!strcmp(a, "--dump")) {
			o->dump = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			show_usage(stdout);
			return 1;
		}
		if (strcmp(a, "--gpu") && strcmp(a, "--source") && strcmp(a, "--fd") &&
		    strcmp(a, "--importer") && strcmp(a, "--size") && strcmp(a, "--lib"))
			return nvs_arg_invalid(u, a, "--dump --gpu= --source= --fd= --importer= --size= --lib=");
		if (!v)
			return out_usage(u, "Missing value for `%s'", a);
		if (nvs_arg_twice(&seen, u, a))
			return NVS_EX_USAGE;
		++i;
		if (!strcmp(a, "--gpu")) {
			/* checked before the module is asked: a typo is an argument error */
			if (!nvs_gpu_spec_ok(v))
				return out_usage(u, "Invalid --gpu (gpuN, N or a PCI bus id such as 0000:01:00.0): `%s'", v);
			o->gpu_arg = v;
		} else if (!strcmp(a, "--importer")) {
			struct nvs_busid b;

			if (nvs_busid_parse(v, &b))
				return out_usage(u, "Invalid --importer (a PCI bus id such as 0000:41:00.0): `%s'", v);
			/* CUDA's "00000000:41:00.0" as the kernel names it */
			if (nvs_busid_name(&b, o->importer_name, sizeof(o->importer_name)))
				return out_usage(u, "Invalid --importer: PCI domain %x is out of range: `%s'",
						 b.domain, v);
			o->importer = o->importer_name;
		} else if (!strcmp(a, "--lib")) {
			if (!*v)
				return out_usage(u, "Empty value for `--lib'");
			o->lib = v;
		} else if (!strcmp(a, "--size")) {
			long page = sysconf(_SC_PAGESIZE);

			if (nvs_parse_size(v, 1, UINT64_MAX, page > 0 ? (uint64_t)page : 4096, &o->size))
				return out_usage(u, "Invalid size: `%s' (bytes with an optional K, M or G suffix, a non-zero multiple of %ld)",
						 v, page);
		} else if (!strcmp(a, "--fd")) {
			/* each once (nvs_arg_twice above); here the other one was given */
			if (o->source != SRC_NONE)
				return out_usage(u, "--source and --fd exclude each other: probe a buffer made by --source, or the fd given");
			if (nvs_parse_u64(v, 0, INT_MAX, &v64))
				return out_usage(u, "Invalid file descriptor: `%s'", v);
			o->fd = (int)v64;
			o->source = SRC_FD;
		} else {
			if (o->source != SRC_NONE)
				return out_usage(u, "--source and --fd exclude each other: probe a buffer made by --source, or the fd given");
			if (!strcmp(v, "cuda"))
				o->source = SRC_CUDA;
			else if (!strcmp(v, "udmabuf"))
				o->source = SRC_UDMABUF;
			else if (!strcmp(v, "dma-heap"))
				o->source = SRC_HEAP;
			else
				return out_usage(u, "Invalid source: `%s' (cuda, udmabuf or dma-heap)", v);
		}
	}
	if (o->json && o->dump)
		return out_usage(u, "Choose one of --json and --dump");
	if (o->source == SRC_NONE)
		o->source = o->gpu_arg ? SRC_CUDA : SRC_NONE;
	if (o->source == SRC_NONE)
		return out_usage(u, "Nothing to probe: give --gpu, --source or --fd");
	if (o->source == SRC_CUDA && !o->gpu_arg)
		return out_usage(u, "--source cuda needs --gpu to say which GPU to allocate on");
	if (!o->gpu_arg && !o->importer)
		return out_usage(u, "Name an importer with --importer, or a GPU with --gpu");
	return 0;
}

static int probe_main(int argc, const char *argv[])
{
	struct nvs_dmabuf_result res;
	struct nvs_cli c = { 0 };
	struct cuda_buf cb = { 0 };
	struct origin org = { .gpu = NVS_GPU_ANY };
	struct opts o;
	bool have_cuda = false;
	char err[512];
	int ret, fd = -1, code;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret == 1 ? NVS_EX_OK : ret;

	ret = nvs_cli_open(&c, false, o.gpu_arg);
	if (ret)
		goto cleanup;
	if (c.sel) {
		org.gpu = (int)c.sel->index;
		snprintf(org.gpu_busid, sizeof(org.gpu_busid), "%s", c.sel->busid);
	}
	switch (o.source) {
	case SRC_CUDA:
		have_cuda = true;
		fd = make_cuda(&cb, o.lib, org.gpu_busid, o.size, &org);
		if (fd < 0) {
			ret = -fd;
			goto cleanup;
		}
		break;
	case SRC_UDMABUF:
		fd = nvs_udmabuf_create(o.size, NULL, err, sizeof(err));
		break;
	case SRC_HEAP:
		fd = nvs_dmaheap_alloc(o.size, err, sizeof(err));
		break;
	default:
		break;
	}
	if (o.source != SRC_FD && fd < 0) {
		ret = out_fail(fd == -ENOENT ? NVS_EX_MISSING : nvs_exit_for_errno(-fd), "%s", err);
		goto cleanup;
	}

	ret = nvs_dmabuf_probe(c.h, o.source == SRC_FD ? o.fd : fd, o.importer, org.gpu, &res);
	if (ret < 0) {
		/* ENOENT here is a missing device, not a missing module */
		ret = out_fail(-ret == EPERM || -ret == EACCES ? NVS_EX_PERM : NVS_EX_FAIL,
			       "Unable to probe the dma-buf: %s", nvs_last_error(c.h));
		goto cleanup;
	}
	if (res.err)
		code = res.step == NVS_DMABUF_STEP_GET ? NVS_EX_FAIL : NVS_EX_REFUSED;
	else if (o.source == SRC_CUDA && res.verdict != NVS_DMABUF_VERDICT_BAR1)
		code = NVS_EX_NOT_BAR1;
	else
		code = NVS_EX_OK;

	show(&o, &org, &res, code);
	ret = out_end() < 0 && !code ? NVS_EX_FAIL : code;

cleanup:
	if (fd >= 0)
		close(fd);
	if (have_cuda)
		cuda_release(&cb);
	nvs_cli_close(&c);
	return ret;
}

int dmabuf_main(int argc, const char *argv[])
{
	int a = nvs_arg_action(argc, argv, 1);

	if (a < argc && !strcmp(argv[a], "probe")) {
		argv[a - 1] = argv[0];
		return probe_main(argc - (a - 1), argv + (a - 1));
	}
	if (a < argc && (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h") || !strcmp(argv[a], "help"))) {
		show_usage(stdout);
		return NVS_EX_OK;
	}
	if (a >= argc)
		return out_usage("dmabuf", "Missing action: `probe'");
	return out_usage("dmabuf", "Invalid action: `%s' (the only one is `probe')", argv[a]);
}
