// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A fake multi-GPU libcuda for `nvsidecar p2p' tests: host memory stands in
 * for device memory, with real copies, so the verification is exercised
 * end to end. Time is virtual (per stream), so bandwidth and latency come
 * out of a model and the ladder's level 4 is deterministic.
 *
 * Environment:
 *   FAKE_CUDA_DEVICES=N        devices (default 2, at most 16)
 *   FAKE_CUDA_NOPEER=A-B,...   ordered pairs without peer access
 *   FAKE_CUDA_CORRUPT=A-B@OFF  flip one byte at OFF in direct (peer access
 *                              enabled) copies from device A to device B
 *   FAKE_CUDA_BUSIDS=BDF,...   PCI bus ids (default 0000:0N:00.0, N = 1 + index)
 *   FAKE_CUDA_P2P_GBPS, FAKE_CUDA_STAGED_GBPS, FAKE_CUDA_LOCAL_GBPS
 *                              copy rates (default 48.5, 31.5, 1500)
 *   FAKE_CUDA_P2P_LAT_US, FAKE_CUDA_STAGED_LAT_US  per-copy latency (0.4, 14.3)
 *   FAKE_CUDA_INIT_ERROR=N     cuInit returns N
 *   FAKE_CUDA_LOG=FILE         appends "ctx-create BUSID pid N" and
 *                              "ctx-destroy BUSID pid N" for cuCtxCreate_v2 and
 *                              cuCtxDestroy_v2 (nvsidecar idle-fix tests)
 *   FAKE_CUDA_CTX_ERROR=N      cuCtxCreate_v2 returns N
 *   FAKE_CUDA_CTX_HANG=1       cuCtxCreate_v2 never returns (a wedged GPU)
 *   FAKE_CUDA_BUSY=D,...       devices another process holds in exclusive-process
 *                              compute mode: the compute-mode attribute (20) is
 *                              CU_COMPUTEMODE_EXCLUSIVE_PROCESS (3), and
 *                              cuDevicePrimaryCtxRetain and cuCtxCreate_v2 on
 *                              them return CUDA_ERROR_DEVICE_UNAVAILABLE (46)
 *   FAKE_CUDA_PROHIBITED=D,... devices in CU_COMPUTEMODE_PROHIBITED (2): the
 *                              attribute says so, context calls return 46
 *   FAKE_CUDA_RETAIN_ERROR=D:N cuDevicePrimaryCtxRetain on device D returns N
 *                              (a broken GPU: 999 CUDA_ERROR_UNKNOWN, ...)
 *   FAKE_CUDA_RETAIN_HANG=D    cuDevicePrimaryCtxRetain on device D never returns
 *                              (a wedged GPU; with NVS_TEST_UNKILLABLE=1 the
 *                              doctor's SIGKILL does not reach it either)
 *   FAKE_CUDA_ONLY_IN=WORD     the four above answer their errors only in a
 *                              process with WORD among its arguments
 *                              (/proc/self/cmdline; the compute mode is the
 *                              same in every process): "p2p"
 *                              makes a GPU busy for `nvsidecar p2p' but free for
 *                              the doctor's probe before it (a job that took the
 *                              GPU between the two)
 *
 * The busy GPU as the driver reports it: cuda.h documents
 * CUDA_ERROR_DEVICE_UNAVAILABLE = 46 as "the requested CUDA device is
 * unavailable at the current time. Devices are often unavailable due to
 * use of CU_COMPUTEMODE_EXCLUSIVE_PROCESS or CU_COMPUTEMODE_PROHIBITED",
 * returned where a context is made (cuCtxCreate, cuDevicePrimaryCtxRetain;
 * the runtime's cudaErrorDevicesUnavailable, also 46, "CUDA-capable
 * device(s) is/are busy or unavailable"); CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
 * is 20 and CUcomputemode DEFAULT 0, PROHIBITED 2, EXCLUSIVE_PROCESS 3.
 * Querying attributes needs no context, so it answers for a busy device.
 * Build: cc -shared -fPIC -o libcuda.so.1 fakecuda.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

#define MAXDEV 16
#define OK 0
#define E_INVALID_VALUE 1
#define E_OUT_OF_MEMORY 2
#define E_NOT_INITIALIZED 3
#define E_DEVICE_UNAVAILABLE 46
#define E_INVALID_DEVICE 101
#define E_INVALID_CONTEXT 201
#define E_PEER_UNSUPPORTED 217
#define E_INVALID_HANDLE 400
#define E_PEER_ALREADY 704
#define E_PEER_NOT_ENABLED 705
#define E_UNKNOWN 999
#define ATTR_COMPUTE_MODE 20
#define MODE_PROHIBITED 2
#define MODE_EXCLUSIVE_PROCESS 3

struct CUctx_st {
	int dev;
	int peer[MAXDEV];	/* peer access enabled towards device k */
};

struct CUstream_st {
	int dev;
	double clock;		/* virtual microseconds */
};

struct CUevent_st {
	double t;
	int recorded;
};

struct alloc {
	struct alloc *next;
	uint8_t *p;
	size_t n;
	int dev;
};

static int inited, ndev = 2;
static int nopeer[MAXDEV][MAXDEV];
static int corrupt_src = -1, corrupt_dst = -1;
static size_t corrupt_off;
static char busid[MAXDEV][32];
static double p2p_gbps = 48.5, staged_gbps = 31.5, local_gbps = 1500, p2p_lat = 0.4, staged_lat = 14.3;
static struct CUctx_st ctxs[MAXDEV];
static int retained[MAXDEV];
static int compute_mode[MAXDEV];	/* FAKE_CUDA_BUSY, FAKE_CUDA_PROHIBITED */
static int unavailable[MAXDEV];		/* context calls answer 46 */
static int retain_error[MAXDEV];	/* FAKE_CUDA_RETAIN_ERROR */
static int retain_hang = -1;		/* FAKE_CUDA_RETAIN_HANG */
static __thread struct CUctx_st *cur;
static struct alloc *allocs;
static double null_clock;
/* The host's present: it only moves on when the host waits for the GPU. */
static double host_now;

static void host_waits(double t)
{
	if (t > host_now)
		host_now = t;
}

/* Work queued now cannot start before the host's present. */
static void catch_up(double *clock)
{
	if (*clock < host_now)
		*clock = host_now;
}

static double envd(const char *k, double def)
{
	const char *v = getenv(k);

	return v && *v ? atof(v) : def;
}

/* FAKE_CUDA_ONLY_IN: whether this process has that word among its arguments. */
static int only_here(void)
{
	const char *w = getenv("FAKE_CUDA_ONLY_IN");
	char buf[4096];
	size_t n;
	FILE *f;
	int hit = 0;

	if (!w || !*w)
		return 1;
	f = fopen("/proc/self/cmdline", "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (!strcmp(buf + i, w))
			hit = 1;
	return hit;
}

/*
 * "1,3": those devices get mode, and their contexts answer 46. The mode
 * is the admin's setting (nvidia-smi -c), the same for every process;
 * FAKE_CUDA_ONLY_IN limits only the 46, the job holding the GPU.
 */
static void dev_list(const char *var, int mode)
{
	const char *s = getenv(var);
	int here = only_here();
	char *end;

	while (s && *s) {
		long d = strtol(s, &end, 10);

		if (end == s)
			break;
		if (d >= 0 && d < MAXDEV) {
			compute_mode[d] = mode;
			unavailable[d] = here;
		}
		s = *end == ',' ? end + 1 : end;
	}
}

CUresult cuInit(unsigned int flags)
{
	const char *s;

	if (flags)
		return E_INVALID_VALUE;
	if ((s = getenv("FAKE_CUDA_INIT_ERROR")) && atoi(s))
		return atoi(s);
	if ((s = getenv("FAKE_CUDA_DEVICES")))
		ndev = atoi(s);
	if (ndev < 0 || ndev > MAXDEV)
		ndev = MAXDEV;
	if ((s = getenv("FAKE_CUDA_NOPEER"))) {
		int a, b, used;

		while (sscanf(s, "%d-%d%n", &a, &b, &used) == 2) {
			if (a >= 0 && b >= 0 && a < MAXDEV && b < MAXDEV)
				nopeer[a][b] = 1;
			s += used;
			if (*s == ',')
				s++;
		}
	}
	dev_list("FAKE_CUDA_BUSY", MODE_EXCLUSIVE_PROCESS);
	dev_list("FAKE_CUDA_PROHIBITED", MODE_PROHIBITED);
	if ((s = getenv("FAKE_CUDA_RETAIN_ERROR")) && only_here()) {
		int d, e;

		if (sscanf(s, "%d:%d", &d, &e) == 2 && d >= 0 && d < MAXDEV)
			retain_error[d] = e;
	}
	if ((s = getenv("FAKE_CUDA_RETAIN_HANG")) && *s && only_here())
		retain_hang = atoi(s);
	if ((s = getenv("FAKE_CUDA_CORRUPT")))
		sscanf(s, "%d-%d@%zu", &corrupt_src, &corrupt_dst, &corrupt_off);
	for (int i = 0; i < MAXDEV; ++i)
		snprintf(busid[i], sizeof(busid[i]), "0000:%02X:00.0", i + 1);
	if ((s = getenv("FAKE_CUDA_BUSIDS"))) {
		for (int i = 0; i < MAXDEV && *s; ++i) {
			size_t n = strcspn(s, ",");

			snprintf(busid[i], sizeof(busid[i]), "%.*s", (int)n, s);
			s += n;
			if (*s == ',')
				s++;
		}
	}
	p2p_gbps = envd("FAKE_CUDA_P2P_GBPS", p2p_gbps);
	staged_gbps = envd("FAKE_CUDA_STAGED_GBPS", staged_gbps);
	local_gbps = envd("FAKE_CUDA_LOCAL_GBPS", local_gbps);
	p2p_lat = envd("FAKE_CUDA_P2P_LAT_US", p2p_lat);
	staged_lat = envd("FAKE_CUDA_STAGED_LAT_US", staged_lat);
	for (int i = 0; i < MAXDEV; ++i)
		ctxs[i].dev = i;
	inited = 1;
	return OK;
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 12080;
	return OK;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
	switch (e) {
	case OK: *s = "CUDA_SUCCESS"; break;
	case E_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case E_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case E_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case E_DEVICE_UNAVAILABLE: *s = "CUDA_ERROR_DEVICE_UNAVAILABLE"; break;
	case E_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	case E_UNKNOWN: *s = "CUDA_ERROR_UNKNOWN"; break;
	case E_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case E_PEER_UNSUPPORTED: *s = "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"; break;
	case E_PEER_ALREADY: *s = "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"; break;
	case E_PEER_NOT_ENABLED: *s = "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"; break;
	default: *s = NULL; return E_INVALID_VALUE;
	}
	return OK;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
	*s = e == E_NOT_INITIALIZED ? "initialization error" : e == OK ? "no error" :
	     e == E_DEVICE_UNAVAILABLE ? "CUDA-capable device(s) is/are busy or unavailable" : "fake error";
	return OK;
}

#define NEED_INIT() do { if (!inited) return E_NOT_INITIALIZED; } while (0)
#define NEED_DEV(d) do { if ((d) < 0 || (d) >= ndev) return E_INVALID_DEVICE; } while (0)

CUresult cuDeviceGetCount(int *n)
{
	NEED_INIT();
	*n = ndev;
	return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ord)
{
	NEED_INIT();
	NEED_DEV(ord);
	*d = ord;
	return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	snprintf(name, (size_t)len, "NVIDIA GeForce RTX 5090 (fake %d)", d);
	return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	*v = attr == 33 ? d + 1 : attr == ATTR_COMPUTE_MODE ? compute_mode[d] : 0;
	return OK;
}

CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	snprintf(s, (size_t)len, "%s", busid[d]);
	return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	*b = 32ULL << 30;
	return OK;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice p)
{
	NEED_INIT();
	NEED_DEV(d);
	NEED_DEV(p);
	*can = d != p && !nopeer[d][p];
	return OK;
}

CUresult cuDevicePrimaryCtxRetain(struct CUctx_st **c, CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	if (unavailable[d])
		return E_DEVICE_UNAVAILABLE;
	if (retain_error[d])
		return retain_error[d];
	if (d == retain_hang)
		for (;;)
			pause();
	retained[d]++;
	*c = &ctxs[d];
	return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	NEED_INIT();
	NEED_DEV(d);
	if (!retained[d])
		return E_INVALID_CONTEXT;
	retained[d]--;
	return OK;
}

/*
 * Contexts of their own (cuCtxCreate), beside the primary ones: created,
 * made current and destroyed; FAKE_CUDA_LOG records each.
 */
static struct CUctx_st *created[64];

static void ctx_log(const char *what, int dev)
{
	const char *p = getenv("FAKE_CUDA_LOG");
	FILE *f;

	if (!p || !(f = fopen(p, "a")))
		return;
	fprintf(f, "ctx-%s %s pid %d\n", what, busid[dev], (int)getpid());
	fclose(f);
}

/* "0000:03:00.0" and NVML's "00000000:03:00.0" name the same device. */
CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *id)
{
	unsigned int a[4], b[4];

	NEED_INIT();
	if (!d || !id || sscanf(id, "%x:%x:%x.%x", &a[0], &a[1], &a[2], &a[3]) != 4)
		return E_INVALID_VALUE;
	for (int i = 0; i < ndev; ++i)
		if (sscanf(busid[i], "%x:%x:%x.%x", &b[0], &b[1], &b[2], &b[3]) == 4 && !memcmp(a, b, sizeof(a))) {
			*d = i;
			return OK;
		}
	return E_INVALID_DEVICE;
}

CUresult cuCtxCreate_v2(struct CUctx_st **c, unsigned int flags, CUdevice d)
{
	const char *s;
	size_t i;

	(void)flags;
	NEED_INIT();
	NEED_DEV(d);
	if (!c)
		return E_INVALID_VALUE;
	if ((s = getenv("FAKE_CUDA_CTX_ERROR")) && atoi(s))
		return atoi(s);
	if (unavailable[d])
		return E_DEVICE_UNAVAILABLE;
	if ((s = getenv("FAKE_CUDA_CTX_HANG")) && atoi(s))
		for (;;)
			pause();
	for (i = 0; i < sizeof(created) / sizeof(created[0]) && created[i]; ++i)
		;
	if (i == sizeof(created) / sizeof(created[0]) || !(created[i] = calloc(1, sizeof(*created[i]))))
		return E_OUT_OF_MEMORY;
	created[i]->dev = d;
	*c = cur = created[i];
	ctx_log("create", d);
	return OK;
}

CUresult cuCtxDestroy_v2(struct CUctx_st *c)
{
	NEED_INIT();
	for (size_t i = 0; c && i < sizeof(created) / sizeof(created[0]); ++i)
		if (created[i] == c) {
			ctx_log("destroy", c->dev);
			if (cur == c)
				cur = NULL;
			free(c);
			created[i] = NULL;
			return OK;
		}
	return E_INVALID_CONTEXT;
}

static int valid_ctx(const struct CUctx_st *c)
{
	return c && c >= ctxs && c < ctxs + ndev && retained[c->dev];
}

CUresult cuCtxSetCurrent(struct CUctx_st *c)
{
	NEED_INIT();
	if (c && !valid_ctx(c))
		return E_INVALID_CONTEXT;
	cur = c;
	return OK;
}

CUresult cuCtxSynchronize(void)
{
	return cur ? OK : E_INVALID_CONTEXT;
}

CUresult cuCtxEnablePeerAccess(struct CUctx_st *peer, unsigned int flags)
{
	if (!cur)
		return E_INVALID_CONTEXT;
	if (flags || !valid_ctx(peer) || peer == cur)
		return E_INVALID_VALUE;
	if (nopeer[cur->dev][peer->dev])
		return E_PEER_UNSUPPORTED;
	if (cur->peer[peer->dev])
		return E_PEER_ALREADY;
	cur->peer[peer->dev] = 1;
	return OK;
}

CUresult cuCtxDisablePeerAccess(struct CUctx_st *peer)
{
	if (!cur)
		return E_INVALID_CONTEXT;
	if (!valid_ctx(peer))
		return E_INVALID_VALUE;
	if (!cur->peer[peer->dev])
		return E_PEER_NOT_ENABLED;
	cur->peer[peer->dev] = 0;
	return OK;
}

static struct alloc *find(CUdeviceptr p, size_t n)
{
	for (struct alloc *a = allocs; a; a = a->next)
		if ((uintptr_t)p >= (uintptr_t)a->p && (uintptr_t)p + n <= (uintptr_t)a->p + a->n)
			return a;
	return NULL;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	struct alloc *a;

	if (!cur)
		return E_INVALID_CONTEXT;
	if (!n)
		return E_INVALID_VALUE;
	a = calloc(1, sizeof(*a));
	if (!a)
		return E_OUT_OF_MEMORY;
	a->p = malloc(n);
	if (!a->p) {
		free(a);
		return E_OUT_OF_MEMORY;
	}
	/* fresh device memory is not zeroed: make stale reads visible */
	memset(a->p, 0x5a, n);
	a->n = n;
	a->dev = cur->dev;
	a->next = allocs;
	allocs = a;
	*p = (CUdeviceptr)(uintptr_t)a->p;
	return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
		struct alloc *a = *pp;

		if ((uintptr_t)a->p == (uintptr_t)p) {
			*pp = a->next;
			free(a->p);
			free(a);
			return OK;
		}
	}
	return E_INVALID_VALUE;
}

CUresult cuMemAllocHost_v2(void **p, size_t n)
{
	*p = malloc(n);
	return *p ? OK : E_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *p)
{
	free(p);
	return OK;
}

CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
	if (!find(p, n))
		return E_INVALID_VALUE;
	memset((void *)(uintptr_t)p, v, n);
	return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
	if (!cur)
		return E_INVALID_CONTEXT;
	if (!find(d, n))
		return E_INVALID_VALUE;
	memcpy((void *)(uintptr_t)d, s, n);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
	if (!cur)
		return E_INVALID_CONTEXT;
	if (!find(s, n))
		return E_INVALID_VALUE;
	memcpy(d, (void *)(uintptr_t)s, n);
	return OK;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n)
{
	if (!cur)
		return E_INVALID_CONTEXT;
	if (!find(d, n) || !find(s, n))
		return E_INVALID_VALUE;
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return OK;
}

/* Copies and returns the modelled duration in microseconds. */
static CUresult peer_copy(CUdeviceptr d, struct CUctx_st *dc, CUdeviceptr s, struct CUctx_st *sc, size_t n,
			  double *us)
{
	struct alloc *da = find(d, n), *sa = find(s, n);
	int direct;

	if (!valid_ctx(dc) || !valid_ctx(sc))
		return E_INVALID_CONTEXT;
	/* each pointer must belong to the context it is passed with */
	if (!da || !sa || da->dev != dc->dev || sa->dev != sc->dev)
		return E_INVALID_VALUE;
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	direct = sc == dc || sc->peer[dc->dev] || dc->peer[sc->dev];
	if (direct && sc != dc && sc->dev == corrupt_src && dc->dev == corrupt_dst && corrupt_off < n)
		((uint8_t *)(uintptr_t)d)[corrupt_off] ^= 0x40;
	if (sc == dc)
		*us = 1.0 + n / (local_gbps * 1e3);
	else if (direct)
		*us = p2p_lat + n / (p2p_gbps * 1e3);
	else
		*us = staged_lat + n / (staged_gbps * 1e3);
	return OK;
}

CUresult cuMemcpyPeer(CUdeviceptr d, struct CUctx_st *dc, CUdeviceptr s, struct CUctx_st *sc, size_t n)
{
	double us;
	CUresult r = peer_copy(d, dc, s, sc, n, &us);

	if (!r) {
		catch_up(&null_clock);
		null_clock += us;
		host_waits(null_clock);
	}
	return r;
}

CUresult cuStreamCreate(struct CUstream_st **s, unsigned int flags)
{
	(void)flags;
	if (!cur)
		return E_INVALID_CONTEXT;
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return E_OUT_OF_MEMORY;
	(*s)->dev = cur->dev;
	(*s)->clock = null_clock;
	return OK;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr d, struct CUctx_st *dc, CUdeviceptr s, struct CUctx_st *sc, size_t n,
			   struct CUstream_st *st)
{
	double us;
	CUresult r = peer_copy(d, dc, s, sc, n, &us);

	if (!r) {
		double *clock = st ? &st->clock : &null_clock;

		catch_up(clock);
		*clock += us;
	}
	return r;
}

CUresult cuStreamSynchronize(struct CUstream_st *s)
{
	host_waits(s ? s->clock : null_clock);
	return OK;
}

CUresult cuStreamDestroy_v2(struct CUstream_st *s)
{
	if (!s)
		return E_INVALID_HANDLE;
	free(s);
	return OK;
}

CUresult cuEventCreate(struct CUevent_st **e, unsigned int flags)
{
	(void)flags;
	if (!cur)
		return E_INVALID_CONTEXT;
	*e = calloc(1, sizeof(**e));
	return *e ? OK : E_OUT_OF_MEMORY;
}

CUresult cuEventRecord(struct CUevent_st *e, struct CUstream_st *s)
{
	if (!e)
		return E_INVALID_HANDLE;
	catch_up(s ? &s->clock : &null_clock);
	e->t = s ? s->clock : null_clock;
	e->recorded = 1;
	return OK;
}

CUresult cuStreamWaitEvent(struct CUstream_st *s, struct CUevent_st *e, unsigned int flags)
{
	if (!s || !e || flags)
		return E_INVALID_HANDLE;
	if (e->t > s->clock)
		s->clock = e->t;
	return OK;
}

CUresult cuEventSynchronize(struct CUevent_st *e)
{
	if (!e || !e->recorded)
		return E_INVALID_HANDLE;
	host_waits(e->t);
	return OK;
}

CUresult cuEventElapsedTime(float *ms, struct CUevent_st *a, struct CUevent_st *b)
{
	if (!a || !b || !a->recorded || !b->recorded)
		return E_INVALID_HANDLE;
	*ms = (float)((b->t - a->t) / 1000.0);
	return OK;
}

CUresult cuEventDestroy_v2(struct CUevent_st *e)
{
	if (!e)
		return E_INVALID_HANDLE;
	free(e);
	return OK;
}
