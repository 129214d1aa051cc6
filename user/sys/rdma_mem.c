// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Test buffers for `nvsidecar rdma': allocation, registration with the
 * NIC, and the sequence-stamped pattern every transfer is checked against.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sys/dmabuf.h"
#include "sys/rdma_mem.h"

#define GPU_ALIGN (2UL << 20)

static const char *const kind_names[] = {
	[NVS_RMEM_HOST] = "host",
	[NVS_RMEM_CUDA_DMABUF] = "cuda-dmabuf",
	[NVS_RMEM_CUDA_PEERMEM] = "cuda-peermem",
};

int nvs_rmem_parse_kind(const char *s, enum nvs_rmem_kind *k)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
		if (!strcmp(s, kind_names[i])) {
			*k = (enum nvs_rmem_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *nvs_rmem_kind_str(enum nvs_rmem_kind k)
{
	return kind_names[k];
}

/* splitmix64: every 8-byte word depends on the transfer and its position. */
static inline uint64_t pat_word(uint64_t seq, uint64_t i)
{
	uint64_t z = seq * 0x9e3779b97f4a7c15ULL + i + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void pat_fill(uint8_t *p, size_t len, uint64_t seq)
{
	size_t i, n = len / 8;
	uint64_t w;

	for (i = 0; i < n; i++) {
		w = pat_word(seq, i);
		memcpy(p + i * 8, &w, 8);
	}
	if (len % 8) {
		w = pat_word(seq, n);
		memcpy(p + n * 8, &w, len % 8);
	}
}

/* Returns the offset of the first byte that differs, or len. */
static size_t pat_cmp(const uint8_t *p, size_t len, uint64_t seq, uint8_t *got, uint8_t *want)
{
	size_t i, j, n = (len + 7) / 8;
	uint64_t w;
	uint8_t b[8];

	for (i = 0; i < n; i++) {
		size_t chunk = i * 8 + 8 <= len ? 8 : len - i * 8;

		w = pat_word(seq, i);
		memcpy(b, &w, 8);
		if (!memcmp(p + i * 8, b, chunk))
			continue;
		for (j = 0; j < chunk; j++) {
			if (p[i * 8 + j] != b[j]) {
				*got = p[i * 8 + j];
				*want = b[j];
				return i * 8 + j;
			}
		}
	}
	return len;
}

uint64_t nvs_pattern_csum(const uint8_t *p, size_t len, uint64_t seq)
{
	uint64_t c = 0xcbf29ce484222325ULL ^ seq, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		c = (c ^ w) * 0x100000001b3ULL;
		c ^= c >> 29;
	}
	for (; i < len; i++)
		c = (c ^ p[i]) * 0x100000001b3ULL;
	return c ^ len;
}

static int cuda_fail(struct nvs_cuda *cu, CUresult r, const char *call, char *err, size_t errlen)
{
	char buf[160];

	snprintf(err, errlen, "%s failed: %s", call, nvs_cuda_strerror(cu, r, buf, sizeof(buf)));
	return -EIO;
}

static int alloc_udmabuf(struct nvs_rmem *m, char *err, size_t errlen)
{
	void *map = NULL;
	int fd = nvs_udmabuf_create(m->len, &map, err, errlen);

	if (fd < 0)
		return fd;
	m->dmabuf_fd = fd;
	m->host = map;
	m->host_is_buf = true;
	m->addr = (uintptr_t)m->host;
	snprintf(m->what, sizeof(m->what), "dma-buf from udmabuf (ibv_reg_dmabuf_mr)");
	return 0;
}

int nvs_rmem_alloc(struct nvs_rmem *m, enum nvs_rmem_kind k, enum nvs_rmem_source src,
		   size_t len, struct nvs_cuda *cu, char *err, size_t errlen)
{
	CUresult r;
	int ret;

	memset(m, 0, sizeof(*m));
	m->kind = k;
	m->src = src;
	m->dmabuf_fd = -1;
	m->len = (len + 4095) & ~4095UL;

	if (k == NVS_RMEM_HOST) {
		if (posix_memalign((void **)&m->host, 4096, m->len)) {
			snprintf(err, errlen, "Unable to allocate %zu bytes of host memory", m->len);
			m->host = NULL;
			return -ENOMEM;
		}
		memset(m->host, 0, m->len);
		m->host_is_buf = true;
		m->addr = (uintptr_t)m->host;
		snprintf(m->what, sizeof(m->what), "host (ibv_reg_mr)");
		return 0;
	}
	if (k == NVS_RMEM_CUDA_DMABUF && src == NVS_RMEM_SRC_UDMABUF)
		return alloc_udmabuf(m, err, errlen);

	if (!cu || !cu->cuMemAlloc_v2 || !cu->cuMemFree_v2) {
		snprintf(err, errlen, "The loaded libcuda lacks cuMemAlloc_v2 or cuMemFree_v2: cannot use GPU memory");
		return -ENOSYS;
	}
	/* dma-buf export works on page-aligned ranges; round to the GPU's 2 MiB pages. */
	m->len = (len + GPU_ALIGN - 1) & ~(GPU_ALIGN - 1);
	m->cu = cu;
	r = cu->cuMemAlloc_v2(&m->dptr, m->len);
	if (r)
		return cuda_fail(cu, r, "cuMemAlloc_v2", err, errlen);
	m->host = calloc(1, m->len);
	if (!m->host) {
		snprintf(err, errlen, "Unable to allocate a %zu byte staging buffer", m->len);
		ret = -ENOMEM;
		goto out_free;
	}
	m->addr = m->dptr;
	if (k == NVS_RMEM_CUDA_PEERMEM) {
		snprintf(m->what, sizeof(m->what), "GPU memory, peermem (ibv_reg_mr on a device pointer)");
		return 0;
	}
	r = nvs_cuda_export_dmabuf(cu, m->dptr, m->len, &m->dmabuf_fd, err, errlen);
	if (r != CUDA_SUCCESS) {
		/* -EOPNOTSUPP is the GeForce gate: the caller says so in its exit code */
		ret = r == CUDA_ERROR_NOT_SUPPORTED ? -EOPNOTSUPP : r == NVS_CUDA_NO_ENTRY ? -ENOSYS : -EIO;
		goto out_free;
	}
	snprintf(m->what, sizeof(m->what), "GPU memory, dma-buf from CUDA (ibv_reg_dmabuf_mr)");
	return 0;

out_free:
	free(m->host);
	m->host = NULL;
	cu->cuMemFree_v2(m->dptr);
	m->dptr = 0;
	return ret;
}

const char *nvs_rmem_reg_meaning(enum nvs_rmem_kind k, int e)
{
	switch (e) {
	case EOPNOTSUPP:
	case ENOSYS:
		if (k == NVS_RMEM_CUDA_DMABUF)
			return "this RDMA driver cannot take dma-buf MRs (soft-RoCE never can; mlx5 and bnxt_re need kernel 5.12+ and rdma-core 34+)";
		return "this RDMA driver does not support this registration";
	case EFAULT:
		if (k == NVS_RMEM_CUDA_PEERMEM)
			return "the NIC driver cannot pin GPU memory: nvidia-peermem is not loaded, or does not work with this GPU (use --mem cuda-dmabuf)";
		return "the address range is not memory the kernel can pin";
	case EINVAL:
		if (k == NVS_RMEM_CUDA_DMABUF)
			return "the dma-buf was refused: bad fd, offset or length, or the exporter rejected the NIC as a peer (PCIe topology, ACS, IOMMU)";
		return "bad address, length or access flags";
	case ENOMEM:
	case EAGAIN:
		return "out of memory or over the locked-memory limit (ulimit -l, LimitMEMLOCK=)";
	case EPERM:
	case EACCES:
		return "not allowed: check the locked-memory limit and access to /dev/infiniband";
	case EBADF:
		return "not a dma-buf file descriptor";
	default:
		return "unexpected error";
	}
}

static const char *errno_name(int e)
{
	switch (e) {
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSYS: return "ENOSYS";
	case EFAULT: return "EFAULT";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EBADF: return "EBADF";
	default: return "errno";
	}
}

int nvs_rmem_register(struct nvs_rmem *m, struct ibv_pd *pd, char *err, size_t errlen)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	const char *call;
	int e;

	errno = 0;
	if (m->kind == NVS_RMEM_CUDA_DMABUF) {
		call = "ibv_reg_dmabuf_mr";
		m->mr = ibv_reg_dmabuf_mr(pd, 0, m->len, m->addr, m->dmabuf_fd, access);
	} else if (m->kind == NVS_RMEM_CUDA_PEERMEM) {
		call = "ibv_reg_mr(device pointer)";
		m->mr = ibv_reg_mr(pd, (void *)(uintptr_t)m->dptr, m->len, access);
	} else {
		call = "ibv_reg_mr";
		m->mr = ibv_reg_mr(pd, m->host, m->len, access);
	}
	if (m->mr)
		return 0;
	e = errno ? errno : EINVAL;
	snprintf(err, errlen, "%s on %s, %zu bytes: %s (%s, %d): %s", call,
		 ibv_get_device_name(pd->context->device), m->len, errno_name(e),
		 strerror(e), e, nvs_rmem_reg_meaning(m->kind, e));
	errno = e;
	return -e;
}

void nvs_rmem_free(struct nvs_rmem *m)
{
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->dmabuf_fd >= 0)
		close(m->dmabuf_fd);
	if (m->kind == NVS_RMEM_CUDA_DMABUF && m->src == NVS_RMEM_SRC_UDMABUF) {
		if (m->host)
			munmap(m->host, m->len);
	} else {
		free(m->host);
	}
	if (m->dptr && m->cu)
		m->cu->cuMemFree_v2(m->dptr);
	memset(m, 0, sizeof(*m));
	m->dmabuf_fd = -1;
}

int nvs_rmem_fill(struct nvs_rmem *m, size_t off, size_t len, uint64_t seq, uint64_t *csum,
		  char *err, size_t errlen)
{
	CUresult r;

	pat_fill(m->host + off, len, seq);
	*csum = nvs_pattern_csum(m->host + off, len, seq);
	if (m->host_is_buf)
		return 0;
	if (!m->cu->cuMemcpyHtoD_v2) {
		snprintf(err, errlen, "The loaded libcuda lacks cuMemcpyHtoD_v2");
		return -ENOSYS;
	}
	r = m->cu->cuMemcpyHtoD_v2(m->dptr + off, m->host + off, len);
	return r ? cuda_fail(m->cu, r, "cuMemcpyHtoD_v2", err, errlen) : 0;
}

int nvs_rmem_check(struct nvs_rmem *m, size_t off, size_t len, uint64_t seq, uint64_t *csum,
		   size_t *bad_off, uint8_t *got, uint8_t *want, char *err, size_t errlen)
{
	CUresult r;
	size_t at;

	if (!m->host_is_buf) {
		if (!m->cu->cuMemcpyDtoH_v2) {
			snprintf(err, errlen, "The loaded libcuda lacks cuMemcpyDtoH_v2");
			return -ENOSYS;
		}
		r = m->cu->cuMemcpyDtoH_v2(m->host + off, m->dptr + off, len);
		if (r)
			return cuda_fail(m->cu, r, "cuMemcpyDtoH_v2 (copying back to check)", err, errlen);
	}
	*csum = nvs_pattern_csum(m->host + off, len, seq);
	at = pat_cmp(m->host + off, len, seq, got, want);
	if (at == len)
		return 0;
	*bad_off = at;
	return -EILSEQ;
}

int nvs_rmem_corrupt(struct nvs_rmem *m, size_t off, size_t len, char *err, size_t errlen)
{
	size_t at = off + len / 2;
	uint8_t b;
	CUresult r;

	if (m->host_is_buf) {
		m->host[at] ^= 0x5a;
		return 0;
	}
	if (!m->cu->cuMemcpyDtoH_v2 || !m->cu->cuMemcpyHtoD_v2)
		return -ENOSYS;
	r = m->cu->cuMemcpyDtoH_v2(&b, m->dptr + at, 1);
	if (!r) {
		b ^= 0x5a;
		r = m->cu->cuMemcpyHtoD_v2(m->dptr + at, &b, 1);
	}
	return r ? cuda_fail(m->cu, r, "cuMemcpy (test corruption hook)", err, errlen) : 0;
}
