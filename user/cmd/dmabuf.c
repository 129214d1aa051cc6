// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsidecar dmabuf probe: makes a dma-buf (from CUDA, udmabuf, the system
 * dma-heap, or an fd the caller passes in) and has the kernel import it as
 * an RDMA driver would, then reports how the exporter mapped it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#include "sys/cuda.h"
#include "common/json.h"
#include "libnvsidecar.h"
#include "cmd/subcommands.h"
#include "common/exit.h"
#include "common/gpu.h"
#include "common/out.h"
#include "common/color.h"

enum source { SRC_NONE, SRC_CUDA, SRC_UDMABUF, SRC_HEAP, SRC_FD };
static const char *const source_names[] = {
	[SRC_NONE] = "none", [SRC_CUDA] = "cuda", [SRC_UDMABUF] = "udmabuf",
	[SRC_HEAP] = "dma-heap", [SRC_FD] = "fd",
};

#define DEFAULT_SIZE (32ULL << 20)
#define UDMABUF_DEV "/dev/udmabuf"
#define HEAP_DEV "/dev/dma_heap/system"

struct opts {
	enum source source;
	const char *gpu_arg;
	const char *importer;
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
		   "                     udmabuf: a sealed memfd through " UDMABUF_DEV ";\n"
		   "                     dma-heap: " HEAP_DEV "\n"
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

/* "4096", "2M", "1G": binary units, whole string, page multiple, non-zero. */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v, mul = 1;
	long page = sysconf(_SC_PAGESIZE);
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ULL << 10; break;
		case 'm': case 'M': mul = 1ULL << 20; break;
		case 'g': case 'G': mul = 1ULL << 30; break;
		default: return -EINVAL;
		}
		if (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
			return -EINVAL;
	}
	if (!v || v > UINT64_MAX / mul)
		return -ERANGE;
	v *= mul;
	if (page <= 0 || v % (unsigned long)page)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_fd(const char *s, int *fd)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *s == '+' || *s == ' ' || v > INT_MAX)
		return -EINVAL;
	*fd = (int)v;
	return 0;
}

static int make_udmabuf(uint64_t size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = size };
	int memfd, dev, fd = -1, saved;

	memfd = memfd_create("nvsidecar-dmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0) {
		perror("Unable to create a memfd for udmabuf");
		return -1;
	}
	if (ftruncate(memfd, (off_t)size) < 0) {
		perror("Unable to size the memfd for udmabuf");
		goto out;
	}
	/* udmabuf pins the pages: it refuses a memfd that could shrink under it. */
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		perror("Unable to seal the memfd for udmabuf");
		goto out;
	}
	dev = open(UDMABUF_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		saved = errno;
		fprintf(stderr, "Unable to open `%s': %s%s\n", UDMABUF_DEV, strerror(saved),
			saved == ENOENT ? " (load the udmabuf module; kernels before 5.4 lack it)" : "");
		goto out;
	}
	c.memfd = (uint32_t)memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	if (fd < 0) {
		saved = errno;
		fprintf(stderr, "Unable to create a udmabuf of %" PRIu64 " bytes: %s%s\n", size,
			strerror(saved),
			saved == EINVAL ? " (above /sys/module/udmabuf/parameters/size_limit_mb?)" : "");
	}
	close(dev);
out:
	close(memfd);
	return fd;
}

static int make_heap(uint64_t size)
{
	struct dma_heap_allocation_data a = { .len = size, .fd_flags = O_RDWR | O_CLOEXEC };
	int dev, saved;

	dev = open(HEAP_DEV, O_RDONLY | O_CLOEXEC);
	if (dev < 0) {
		saved = errno;
		fprintf(stderr, "Unable to open `%s': %s%s\n", HEAP_DEV, strerror(saved),
			saved == ENOENT ? " (the kernel needs CONFIG_DMABUF_HEAPS_SYSTEM)" : "");
		return -1;
	}
	if (ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &a) < 0) {
		saved = errno;
		fprintf(stderr, "Unable to allocate %" PRIu64 " bytes from `%s': %s\n", size,
			HEAP_DEV, strerror(saved));
		close(dev);
		return -1;
	}
	close(dev);
	return (int)a.fd;
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
	if (nvs_cuda_load(&cb->cu, lib, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return -NVS_EX_MISSING;
	}
#define NEED(f) do { if (!cb->cu.f) { fprintf(stderr, "%s lacks %s: CUDA 11.7 or newer is needed for dma-buf export\n", cb->cu.path, #f); return -NVS_EX_FAIL; } } while (0)
	NEED(cuDeviceGetPCIBusId);
	NEED(cuDevicePrimaryCtxRetain);
	NEED(cuCtxSetCurrent);
	NEED(cuMemAlloc_v2);
	NEED(cuMemFree_v2);
#undef NEED
	r = cb->cu.cuInit(0);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "Unable to initialise CUDA: %s (is the NVIDIA driver loaded?)\n",
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
		return -NVS_EX_FAIL;
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
		fprintf(stderr, "No CUDA device at `%s' among %d (is CUDA_VISIBLE_DEVICES hiding it?)\n",
			busid, n);
		return -NVS_EX_MISSING;
	}
	if (cb->cu.cuDeviceGetName)
		cb->cu.cuDeviceGetName(org->cuda_dev, sizeof(org->cuda_dev), cb->dev);
	r = cb->cu.cuDevicePrimaryCtxRetain(&ctx, cb->dev);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "Unable to create a CUDA context on `%s': %s\n", busid,
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
		return -NVS_EX_FAIL;
	}
	cb->ctx = true;
	r = cb->cu.cuCtxSetCurrent(ctx);
	if (r == CUDA_SUCCESS)
		r = cb->cu.cuMemAlloc_v2(&cb->ptr, (size_t)size);
	if (r != CUDA_SUCCESS) {
		cb->ptr = 0;
		fprintf(stderr, "Unable to allocate %" PRIu64 " bytes of GPU memory: %s\n", size,
			nvs_cuda_strerror(&cb->cu, r, err, sizeof(err)));
		return -NVS_EX_FAIL;
	}
	r = nvs_cuda_export_dmabuf(&cb->cu, cb->ptr, (size_t)size, &fd, err, sizeof(err));
	if (r == CUDA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "libcuda refused to export GPU memory as a dma-buf: %s\n", err);
		return -NVS_EX_GATE;
	}
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "Unable to export GPU memory as a dma-buf: %s\n", err);
		return r == NVS_CUDA_NO_ENTRY ? -NVS_EX_MISSING : -NVS_EX_FAIL;
	}
	return fd;
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ERANGE: return "ERANGE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case 524: return "ENOTSUPP";	/* kernel-internal, NVIDIA's exporter uses it */
	default: return "errno";
	}
}

static const char *step_hint(const struct nvs_dmabuf_result *r)
{
	if (r->step == NVS_DMABUF_STEP_DONE && !r->err)
		return NULL;
	switch (r->step) {
	case NVS_DMABUF_STEP_ATTACH:
		return "the exporter refused this importer: check the PCIe topology (same switch or a\n"
		       "  P2P-capable root complex), ACS and the IOMMU mode (see docs/dmabuf.md)";
	case NVS_DMABUF_STEP_MAP:
		return "the exporter could not map the buffer for this importer: often BAR1 is full\n"
		       "  or the IOMMU refused the peer mapping (see docs/dmabuf.md)";
	case NVS_DMABUF_STEP_FENCE:
		return "the exporter's fences did not signal within 5 s: the GPU is busy or hung";
	default:
		return NULL;
	}
}

static const char *verdict_text(uint32_t v)
{
	switch (v) {
	case NVS_DMABUF_VERDICT_BAR1: return "every segment lies inside the GPU's BAR1";
	case NVS_DMABUF_VERDICT_SYSTEM_RAM: return "every segment lies in system memory";
	case NVS_DMABUF_VERDICT_ELSEWHERE: return "the segments lie outside BAR1 and outside system memory";
	case NVS_DMABUF_VERDICT_MIXED: return "the segments are a mix of BAR1, system memory and other";
	default: return "not mapped";
	}
}

static const char *human_size(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (u < 4 && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		++u;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, unit[u]);
	return buf;
}

static void print_human(const struct opts *o, const struct origin *org,
			const struct nvs_dmabuf_result *r, int code)
{
	bool c = want_color();
	const char *g = c ? "\033[32m" : "", *red = c ? "\033[31m" : "", *y = c ? "\033[33m" : "";
	const char *b = c ? "\033[1m" : "", *n = c ? "\033[0m" : "";
	const char *hint = step_hint(r);
	char s1[32];

	if (code == NVS_EX_OK)
		printf("%sdma-buf probe: OK%s, %s\n", g, n, verdict_text(r->verdict));
	else if (code == NVS_EX_NOT_BAR1)
		printf("%sdma-buf probe: mapped, but not inside BAR1%s: %s\n", y, n,
		       verdict_text(r->verdict));
	else
		printf("%sdma-buf probe: failed at the %s step%s: %s (%s)\n", red,
		       nvs_dmabuf_step_name(r->step), n, strerror(r->err), errno_name(r->err));
	printf("  %ssource%s      %s%s%s%s\n", b, n, source_names[o->source],
	       org->cuda_dev[0] ? " (" : "", org->cuda_dev, org->cuda_dev[0] ? ")" : "");
	printf("  %sexporter%s    %s\n", b, n, r->exporter[0] ? r->exporter : "-");
	printf("  %simporter%s    %s\n", b, n, r->importer[0] ? r->importer : "-");
	printf("  %ssize%s        %" PRIu64 " (%s)\n", b, n, r->size, human_size(r->size, s1, sizeof(s1)));
	if (r->step == NVS_DMABUF_STEP_DONE) {
		printf("  %sentries%s     %" PRIu32 "\n", b, n, r->nents);
		printf("  %smapped%s      %" PRIu64 "\n", b, n, r->mapped);
		printf("  %ssegments%s    %" PRIu64 " .. %" PRIu64 " bytes\n", b, n, r->seg_min, r->seg_max);
		printf("  %sverdict%s     %s\n", b, n, nvs_dmabuf_verdict_name(r->verdict));
	}
	if (org->gpu != NVS_GPU_ANY)
		printf("  %sBAR1%s        0x%" PRIx64 " + %s (gpu%d %s)\n", b, n, r->bar1_start,
		       human_size(r->bar1_len, s1, sizeof(s1)), org->gpu, org->gpu_busid);
	printf("  %sp2p%s         %s", b, n, nvs_p2p_name(r->p2p));
	if (r->p2p == NVS_P2P_ALLOWED || r->p2p == NVS_P2P_REFUSED)
		printf(" (pci_p2pdma_distance %" PRId32 ")\n", r->p2p_distance);
	else if (r->p2p == NVS_P2P_UNKNOWN)
		printf(" (kernel built without CONFIG_PCI_P2PDMA)\n");
	else
		printf(" (no GPU to compare against)\n");
	if (hint)
		printf("  %shint%s        %s\n", b, n, hint);
}

static void print_json(const struct opts *o, const struct origin *org,
		       const struct nvs_dmabuf_result *r, int code)
{
	struct json j;

	json_init(&j, stdout, true);
	json_obj_open(&j, NULL);
	json_str(&j, "source", source_names[o->source]);
	json_str(&j, "cuda_device", org->cuda_dev[0] ? org->cuda_dev : NULL);
	if (org->gpu != NVS_GPU_ANY) {
		json_int(&j, "gpu", org->gpu);
		json_str(&j, "gpu_busid", org->gpu_busid);
	} else {
		json_null(&j, "gpu");
		json_null(&j, "gpu_busid");
	}
	json_bool(&j, "ok", code == NVS_EX_OK);
	json_int(&j, "exit_code", code);
	json_str(&j, "step", nvs_dmabuf_step_name(r->step));
	json_int(&j, "errno", r->err);
	json_str(&j, "error", r->err ? strerror(r->err) : NULL);
	json_str(&j, "exporter", r->exporter);
	json_str(&j, "importer", r->importer);
	json_uint(&j, "size", r->size);
	json_uint(&j, "nents", r->nents);
	json_uint(&j, "mapped", r->mapped);
	json_uint(&j, "seg_min", r->seg_min);
	json_uint(&j, "seg_max", r->seg_max);
	json_str(&j, "verdict", nvs_dmabuf_verdict_name(r->verdict));
	json_uint(&j, "bar1_start", r->bar1_start);
	json_uint(&j, "bar1_len", r->bar1_len);
	json_str(&j, "p2p", nvs_p2p_name(r->p2p));
	json_int(&j, "p2p_distance", r->p2p_distance);
	json_obj_close(&j);
	json_end(&j);
}

static void print_dump(const struct opts *o, const struct nvs_dmabuf_result *r)
{
	printf("%s\t%s\t%s\t%" PRIu64 "\t%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	       "\t%s\t0x%" PRIx64 "\t%" PRIu64 "\t%s\t%" PRId32 "\t%s\t%" PRId32 "\n",
	       source_names[o->source], r->exporter[0] ? r->exporter : "-",
	       r->importer[0] ? r->importer : "-", r->size, r->nents, r->mapped, r->seg_min,
	       r->seg_max, nvs_dmabuf_verdict_name(r->verdict), r->bar1_start, r->bar1_len,
	       nvs_p2p_name(r->p2p), r->p2p_distance, nvs_dmabuf_step_name(r->step), r->err);
}

static int parse_args(int argc, const char *argv[], struct opts *o)
{
	int i, ret;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->size = DEFAULT_SIZE;
	for (i = 2; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "--dump")) {
			o->dump = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			show_usage(stdout);
			exit(NVS_EX_OK);
		}
		if (strcmp(a, "--gpu") && strcmp(a, "--source") && strcmp(a, "--fd") &&
		    strcmp(a, "--importer") && strcmp(a, "--size") && strcmp(a, "--lib")) {
			fprintf(stderr, "Invalid argument: `%s'\n", a);
			return -EINVAL;
		}
		if (!v) {
			fprintf(stderr, "%s needs a value\n", a);
			return -EINVAL;
		}
		++i;
		if (!strcmp(a, "--gpu")) {
			o->gpu_arg = v;
		} else if (!strcmp(a, "--importer")) {
			o->importer = v;
		} else if (!strcmp(a, "--lib")) {
			o->lib = v;
		} else if (!strcmp(a, "--size")) {
			ret = parse_size(v, &o->size);
			if (ret) {
				fprintf(stderr, "Invalid size: `%s' (bytes with an optional K, M or G suffix, a non-zero multiple of %ld)\n",
					v, sysconf(_SC_PAGESIZE));
				return ret;
			}
		} else if (!strcmp(a, "--fd")) {
			if (o->source != SRC_NONE || parse_fd(v, &o->fd)) {
				fprintf(stderr, o->source != SRC_NONE ? "Give either --source or --fd\n"
								      : "Invalid file descriptor: `%s'\n", v);
				return -EINVAL;
			}
			o->source = SRC_FD;
		} else {
			if (o->source != SRC_NONE) {
				fprintf(stderr, "Give --source or --fd once\n");
				return -EINVAL;
			}
			if (!strcmp(v, "cuda"))
				o->source = SRC_CUDA;
			else if (!strcmp(v, "udmabuf"))
				o->source = SRC_UDMABUF;
			else if (!strcmp(v, "dma-heap"))
				o->source = SRC_HEAP;
			else {
				fprintf(stderr, "Invalid source: `%s' (cuda, udmabuf or dma-heap)\n", v);
				return -EINVAL;
			}
		}
	}
	if (o->json && o->dump) {
		fprintf(stderr, "Choose one of --json and --dump\n");
		return -EINVAL;
	}
	if (o->source == SRC_NONE)
		o->source = o->gpu_arg ? SRC_CUDA : SRC_NONE;
	if (o->source == SRC_NONE) {
		fprintf(stderr, "Nothing to probe: give --gpu, --source or --fd\n");
		return -EINVAL;
	}
	if (o->source == SRC_CUDA && !o->gpu_arg) {
		fprintf(stderr, "--source cuda needs --gpu to say which GPU to allocate on\n");
		return -EINVAL;
	}
	if (!o->gpu_arg && !o->importer) {
		fprintf(stderr, "Name an importer with --importer, or a GPU with --gpu\n");
		return -EINVAL;
	}
	return 0;
}

static int exit_for_errno(int e)
{
	switch (e) {
	case EPERM: case EACCES: return NVS_EX_PERM;
	case ENOENT: return NVS_EX_MISSING;
	default: return NVS_EX_FAIL;
	}
}

static int probe_main(int argc, const char *argv[])
{
	struct nvs_gpu_info *gpus = NULL;
	struct nvs_dmabuf_result res;
	struct nvs_handle *h = NULL;
	struct cuda_buf cb = { 0 };
	struct origin org = { .gpu = NVS_GPU_ANY };
	struct opts o;
	bool have_cuda = false;
	size_t ngpus = 0;
	uint32_t idx;
	int ret, fd = -1, code;

	if (parse_args(argc, argv, &o))
		return NVS_EX_USAGE;

	if (nvs_open(&h) < 0) {
		fprintf(stderr, "%s\n", nvs_last_error(NULL));
		return errno == ENOENT ? NVS_EX_MISSING : exit_for_errno(errno);
	}
	if (o.gpu_arg) {
		if (nvs_gpu_list(h, &gpus, &ngpus) < 0) {
			fprintf(stderr, "Unable to list GPUs: %s\n", nvs_last_error(h));
			ret = exit_for_errno(errno);
			goto cleanup;
		}
		if (nvs_parse_gpu(o.gpu_arg, gpus, ngpus, &idx) < 0) {
			fprintf(stderr, "No such GPU: `%s' (see `%s status')\n", o.gpu_arg, PROG_NAME);
			ret = NVS_EX_USAGE;
			goto cleanup;
		}
		org.gpu = (int)idx;
		for (size_t i = 0; i < ngpus; ++i)
			if (gpus[i].index == idx)
				snprintf(org.gpu_busid, sizeof(org.gpu_busid), "%s", gpus[i].busid);
	}

	switch (o.source) {
	case SRC_CUDA:
		fd = make_cuda(&cb, o.lib, org.gpu_busid, o.size, &org);
		have_cuda = true;
		if (fd < 0) {
			ret = -fd;
			goto cleanup;
		}
		break;
	case SRC_UDMABUF:
		fd = make_udmabuf(o.size);
		break;
	case SRC_HEAP:
		fd = make_heap(o.size);
		break;
	default:
		break;
	}
	if (o.source != SRC_FD && fd < 0) {
		ret = NVS_EX_FAIL;
		goto cleanup;
	}

	ret = nvs_dmabuf_probe(h, o.source == SRC_FD ? o.fd : fd, o.importer, org.gpu, &res);
	if (ret < 0) {
		int e = -ret;

		fprintf(stderr, "Unable to probe the dma-buf: %s\n", nvs_last_error(h));
		ret = exit_for_errno(e);
		goto cleanup;
	}
	if (res.err)
		code = res.step == NVS_DMABUF_STEP_GET ? NVS_EX_FAIL : NVS_EX_REFUSED;
	else if (o.source == SRC_CUDA && res.verdict != NVS_DMABUF_VERDICT_BAR1)
		code = NVS_EX_NOT_BAR1;
	else
		code = NVS_EX_OK;

	if (o.json)
		print_json(&o, &org, &res, code);
	else if (o.dump)
		print_dump(&o, &res);
	else
		print_human(&o, &org, &res, code);
	ret = code;

cleanup:
	if (fd >= 0)
		close(fd);
	if (have_cuda)
		cuda_release(&cb);
	free(gpus);
	nvs_close(h);
	return ret;
}

int dmabuf_main(int argc, const char *argv[])
{
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return probe_main(argc, argv);
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "help"))) {
		show_usage(stdout);
		return NVS_EX_OK;
	}
	if (argc < 2)
		fprintf(stderr, "Missing action: `probe'\n");
	else
		fprintf(stderr, "Invalid action: `%s' (the only one is `probe')\n", argv[1]);
	show_usage(stderr);
	return NVS_EX_USAGE;
}
