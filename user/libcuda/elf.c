// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcuda/elf.h"

#define R_X86_64_RELATIVE_ 8

static int fail(char *err, size_t len, int ret, const char *fmt, const char *path)
{
	snprintf(err, len, fmt, path);
	return ret;
}

const uint8_t *lc_elf_ptr(const struct lc_elf *e, uint64_t vaddr, size_t len)
{
	for (int i = 0; i < e->nload; ++i) {
		const struct lc_seg *s = &e->load[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr <= s->filesz &&
		    len <= s->filesz - (vaddr - s->vaddr))
			return e->map + s->off + (vaddr - s->vaddr);
	}
	return NULL;
}

int64_t lc_elf_off(const struct lc_elf *e, uint64_t vaddr)
{
	const uint8_t *p = lc_elf_ptr(e, vaddr, 1);

	return p ? (int64_t)(p - e->map) : -1;
}

bool lc_elf_exec(const struct lc_elf *e, uint64_t vaddr)
{
	for (int i = 0; i < e->nload; ++i)
		if ((e->load[i].flags & PF_X) && vaddr >= e->load[i].vaddr &&
		    vaddr - e->load[i].vaddr < e->load[i].filesz)
			return true;
	return false;
}

static bool rd(const struct lc_elf *e, uint64_t vaddr, void *out, size_t len)
{
	const uint8_t *p = lc_elf_ptr(e, vaddr, len);

	if (!p)
		return false;
	memcpy(out, p, len);
	return true;
}

/* DWARF exception-header pointer decoding, limited to what linkers emit. */
static bool eh_read(const struct lc_elf *e, uint8_t enc, uint64_t *pos, uint64_t base,
		    uint64_t *out)
{
	int64_t v = 0;

	if (enc == 0xff)
		return false;
	switch (enc & 0x0f) {
	case 0x03: {
		uint32_t x;

		if (!rd(e, *pos, &x, 4))
			return false;
		v = x;
		*pos += 4;
		break;
	}
	case 0x0b: {
		int32_t x;

		if (!rd(e, *pos, &x, 4))
			return false;
		v = x;
		*pos += 4;
		break;
	}
	case 0x04:
	case 0x0c: {
		int64_t x;

		if (!rd(e, *pos, &x, 8))
			return false;
		v = x;
		*pos += 8;
		break;
	}
	default:
		return false;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		v += (int64_t)(*pos - ((enc & 0x0f) == 0x04 || (enc & 0x0f) == 0x0c ? 8 : 4));
		break;
	case 0x30:
		v += (int64_t)base;
		break;
	default:
		return false;
	}
	*out = (uint64_t)v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void load_eh(struct lc_elf *e)
{
	uint8_t hdr[4];
	uint64_t pos = e->ehhdr + 4, ehptr, count;

	if (!e->ehhdr || !rd(e, e->ehhdr, hdr, 4) || hdr[0] != 1)
		return;
	if (!eh_read(e, hdr[1], &pos, e->ehhdr, &ehptr) ||
	    !eh_read(e, hdr[2], &pos, e->ehhdr, &count) || count > (1u << 24))
		return;
	e->fstart = calloc(count ? count : 1, sizeof(*e->fstart));
	if (!e->fstart)
		return;
	for (uint64_t i = 0; i < count; ++i) {
		uint64_t loc, fde;

		if (!eh_read(e, hdr[3], &pos, e->ehhdr, &loc) ||
		    !eh_read(e, hdr[3], &pos, e->ehhdr, &fde))
			break;
		e->fstart[e->nfstart++] = loc;
	}
	qsort(e->fstart, e->nfstart, sizeof(*e->fstart), cmp_u64);
}

uint64_t lc_elf_func_start(const struct lc_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->nfstart;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->fstart[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? e->fstart[lo - 1] : 0;
}

uint64_t lc_elf_func_end(const struct lc_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->nfstart;
	uint64_t segend = vaddr;

	for (int i = 0; i < e->nload; ++i)
		if (vaddr >= e->load[i].vaddr && vaddr - e->load[i].vaddr < e->load[i].filesz)
			segend = e->load[i].vaddr + e->load[i].filesz;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->fstart[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < e->nfstart && e->fstart[lo] < segend)
		return e->fstart[lo];
	return segend;
}

int lc_elf_open(struct lc_elf *e, const char *path, char *err, size_t errlen)
{
	struct stat st;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf = NULL;
	int fd, ret;
	uint64_t dynaddr = 0, dynsz = 0;

	memset(e, 0, sizeof(*e));
	/* O_NONBLOCK: a FIFO given by mistake must be refused, not waited on. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to open `%s': %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, -EINVAL, "Not a regular file: `%s'", path);
	}
	if ((uint64_t)st.st_size > LC_MAX_LIB_SIZE) {
		close(fd);
		snprintf(err, errlen, "`%s' is %lld bytes, more than the %llu MiB nvsidecar reads (the largest libcuda read, 615.71.09, is 112 MB): not a libcuda",
			 path, (long long)st.st_size, LC_MAX_LIB_SIZE >> 20);
		return -EFBIG;
	}
	if (st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return fail(err, errlen, -ENOEXEC, "Too short to be an ELF shared library: `%s'", path);
	}
	e->size = st.st_size;
	e->map = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		ret = -errno;
		snprintf(err, errlen, "Unable to map `%s': %s", path, strerror(errno));
		return ret;
	}
	ret = -ENOEXEC;
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)e->map, e->size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		fail(err, errlen, ret, "Not an ELF file: `%s'", path);
		goto out;
	}
	if (gelf_getclass(elf) != ELFCLASS64) {
		fail(err, errlen, ret, "Not a 64-bit ELF file (libcuda is x86-64 only): `%s'", path);
		goto out;
	}
	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || eh.e_type != ET_DYN ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB) {
		fail(err, errlen, ret, "Not an x86-64 ELF shared library: `%s'", path);
		goto out;
	}
	if (elf_getphdrnum(elf, &nph) || !nph || eh.e_phoff > e->size ||
	    nph * sizeof(Elf64_Phdr) > e->size - eh.e_phoff) {
		fail(err, errlen, ret, "ELF program headers are missing or truncated: `%s'", path);
		goto out;
	}
	for (size_t i = 0; i < nph; ++i) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph)) {
			fail(err, errlen, ret, "Unable to read an ELF program header: `%s'", path);
			goto out;
		}
		if (ph.p_type == PT_LOAD) {
			if (e->nload == LC_MAX_LOAD || ph.p_offset > e->size ||
			    ph.p_filesz > e->size - ph.p_offset) {
				fail(err, errlen, ret, "A loadable segment lies beyond the end of the file (truncated?): `%s'", path);
				goto out;
			}
			e->load[e->nload++] = (struct lc_seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz,
							       ph.p_memsz, ph.p_flags };
		} else if (ph.p_type == PT_DYNAMIC) {
			dynaddr = ph.p_vaddr;
			dynsz = ph.p_filesz;
		} else if (ph.p_type == PT_GNU_EH_FRAME) {
			e->ehhdr = ph.p_vaddr;
			e->ehhdr_size = ph.p_filesz;
		}
	}
	if (!dynaddr || !lc_elf_ptr(e, dynaddr, dynsz)) {
		fail(err, errlen, ret, "No dynamic segment inside the file (truncated or not a shared library): `%s'", path);
		goto out;
	}
	for (uint64_t p = dynaddr; p + 16 <= dynaddr + dynsz; p += 16) {
		int64_t tag = DT_NULL;
		uint64_t val = 0;

		rd(e, p, &tag, 8);
		rd(e, p + 8, &val, 8);
		if (tag == DT_NULL)
			break;
		switch (tag) {
		case DT_SYMTAB:
			e->symtab = val;
			break;
		case DT_STRTAB:
			e->strtab = val;
			break;
		case DT_STRSZ:
			e->strsz = val;
			break;
		case DT_GNU_HASH:
			e->gnuhash = val;
			break;
		case DT_HASH:
			e->hash = val;
			break;
		case DT_RELA:
			e->rela = val;
			break;
		case DT_RELASZ:
			e->relasz = val;
			break;
		case DT_JMPREL:
			e->jmprel = val;
			break;
		case DT_PLTRELSZ:
			e->pltrelsz = val;
			break;
		}
	}
	if (!e->symtab || !e->strtab || (!e->gnuhash && !e->hash) ||
	    !lc_elf_ptr(e, e->strtab, e->strsz)) {
		fail(err, errlen, ret, "The dynamic symbol table is missing or truncated: `%s'", path);
		goto out;
	}
	load_eh(e);
	ret = 0;
out:
	if (elf)
		elf_end(elf);
	if (ret)
		lc_elf_close(e);
	return ret;
}

void lc_elf_close(struct lc_elf *e)
{
	if (e->map)
		munmap((void *)e->map, e->size);
	free(e->fstart);
	memset(e, 0, sizeof(*e));
}

static bool sym_matches(const struct lc_elf *e, uint32_t idx, const char *name, uint64_t *value)
{
	Elf64_Sym s;
	size_t n = strlen(name);
	const char *str;

	if (!rd(e, e->symtab + (uint64_t)idx * sizeof(s), &s, sizeof(s)) || s.st_name >= e->strsz ||
	    e->strsz - s.st_name < n + 1)
		return false;
	str = (const char *)lc_elf_ptr(e, e->strtab + s.st_name, n + 1);
	if (!str || memcmp(str, name, n + 1) || s.st_shndx == SHN_UNDEF ||
	    ELF64_ST_TYPE(s.st_info) != STT_FUNC)
		return false;
	*value = s.st_value;
	return true;
}

int lc_elf_sym(const struct lc_elf *e, const char *name, uint64_t *value)
{
	if (e->gnuhash) {
		uint32_t h = 5381, hdr[4], bucket;

		for (const unsigned char *c = (const unsigned char *)name; *c; ++c)
			h = h * 33 + *c;
		if (!rd(e, e->gnuhash, hdr, sizeof(hdr)) || !hdr[0])
			return -ENOENT;
		/* header, bloom words (8 bytes each), buckets, then the chain */
		uint64_t buckets = e->gnuhash + 16 + (uint64_t)hdr[2] * 8;
		uint64_t chain = buckets + (uint64_t)hdr[0] * 4;

		if (!rd(e, buckets + (uint64_t)(h % hdr[0]) * 4, &bucket, 4) || !bucket)
			return -ENOENT;
		for (uint32_t i = bucket; i >= hdr[1] && i - bucket < (1u << 20); ++i) {
			uint32_t c;

			if (!rd(e, chain + (uint64_t)(i - hdr[1]) * 4, &c, 4))
				return -ENOENT;
			if ((c | 1) == (h | 1) && sym_matches(e, i, name, value))
				return 0;
			if (c & 1)
				break;
		}
		return -ENOENT;
	}
	uint32_t hh[2], h = 0, g, idx;

	for (const unsigned char *c = (const unsigned char *)name; *c; ++c) {
		h = (h << 4) + *c;
		g = h & 0xf0000000;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	if (!rd(e, e->hash, hh, 8) || !hh[0])
		return -ENOENT;
	if (!rd(e, e->hash + 8 + (uint64_t)(h % hh[0]) * 4, &idx, 4))
		return -ENOENT;
	for (uint32_t n = 0; idx && n < hh[1]; ++n) {
		if (sym_matches(e, idx, name, value))
			return 0;
		if (!rd(e, e->hash + 8 + (uint64_t)hh[0] * 4 + (uint64_t)idx * 4, &idx, 4))
			break;
	}
	return -ENOENT;
}

int lc_elf_relative(const struct lc_elf *e, uint64_t slot, uint64_t *value)
{
	/* bytes, copied out: DT_RELA comes from the file and may be misaligned */
	const uint8_t *p = lc_elf_ptr(e, e->rela, e->relasz);
	Elf64_Rela r;

	if (!p)
		return -ENOENT;
	for (size_t i = 0; i < e->relasz / sizeof(r); ++i) {
		memcpy(&r, p + i * sizeof(r), sizeof(r));
		if (r.r_offset != slot)
			continue;
		if (ELF64_R_TYPE(r.r_info) != R_X86_64_RELATIVE_)
			return -EINVAL;
		*value = r.r_addend;
		return 0;
	}
	return -ENOENT;
}

/* The GOT slot of an imported function (R_X86_64_JUMP_SLOT or GLOB_DAT). */
int lc_elf_import_slot(const struct lc_elf *e, const char *name, uint64_t *slot)
{
	const struct { uint64_t at, size; } tabs[] = { { e->jmprel, e->pltrelsz }, { e->rela, e->relasz } };
	size_t n = strlen(name);

	for (size_t t = 0; t < 2; ++t) {
		const uint8_t *p = lc_elf_ptr(e, tabs[t].at, tabs[t].size);

		if (!p || !tabs[t].size)
			continue;
		for (size_t i = 0; i < tabs[t].size / sizeof(Elf64_Rela); ++i) {
			Elf64_Rela r;	/* copied out, as in lc_elf_relative() */
			uint32_t type, idx;
			Elf64_Sym s;
			const char *str;

			memcpy(&r, p + i * sizeof(r), sizeof(r));
			type = ELF64_R_TYPE(r.r_info);
			idx = ELF64_R_SYM(r.r_info);
			if ((type != 7 /* JUMP_SLOT */ && type != 6 /* GLOB_DAT */) || !idx ||
			    !rd(e, e->symtab + (uint64_t)idx * sizeof(s), &s, sizeof(s)) || s.st_name >= e->strsz ||
			    e->strsz - s.st_name < n + 1)
				continue;
			str = (const char *)lc_elf_ptr(e, e->strtab + s.st_name, n + 1);
			if (str && !memcmp(str, name, n + 1)) {
				*slot = r.r_offset;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* Digits and dots with at least one dot, e.g. "535.261.03"; returns its length. */
static size_t version_span(const uint8_t *p, size_t max)
{
	size_t n = 0, dots = 0;

	while (n < max && n < 31 && ((p[n] >= '0' && p[n] <= '9') || p[n] == '.')) {
		dots += p[n] == '.';
		n++;
	}
	if (!n || !dots || p[0] == '.' || p[n - 1] == '.')
		return 0;
	return n;
}

/*
 * The driver version the library was built as, from strings NVIDIA embeds:
 * the search path of the application profiles
 * (".../nvidia-application-profiles-535.261.03-rc", every branch from 340
 * on), and where present the names of the libraries it loads
 * ("libnvidia-pkcs11.so.535.261.03") and the copyright banner ("Version
 * 555.58.02. Copyright"). Returns the number of markers found; *conflict
 * is set when they disagree (the first one found wins).
 */
int lc_elf_driver_version(const struct lc_elf *e, char *ver, size_t len, bool *conflict)
{
	static const struct { const char *pre, *post; } marks[] = {
		{ "nvidia-application-profiles-", "-rc" },
		{ "Version ", ". Copyright" },
		{ ".so.", NULL },
	};
	int found = 0;

	ver[0] = 0;
	*conflict = false;
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); ++m) {
		for (int s = 0; s < e->nload; ++s) {
			const struct lc_seg *sg = &e->load[s];
			const uint8_t *base = e->map + sg->off, *p = base, *end = base + sg->filesz;
			size_t pl = strlen(marks[m].pre);

			if (sg->flags & PF_X)
				continue;
			while ((p = memmem(p, end - p, marks[m].pre, pl))) {
				const uint8_t *v = p + pl;
				size_t n = version_span(v, end - v);
				char tmp[32];

				p += pl;
				if (!n)
					continue;
				if (marks[m].post) {
					size_t ql = strlen(marks[m].post);

					if ((size_t)(end - v) < n + ql || memcmp(v + n, marks[m].post, ql))
						continue;
				} else {
					/* "libnvidia-<name>.so.<version>", ended by NUL or a path separator */
					const uint8_t *b = p - pl;

					while (b > base && b[-1] > ' ' && b[-1] != '/' && b[-1] != ':' && b[-1] < 0x7f)
						--b;
					if ((size_t)(p - pl - b) < 11 || memcmp(b, "libnvidia-", 10) ||
					    (v + n < end && v[n] && v[n] != ':'))
						continue;
				}
				snprintf(tmp, sizeof(tmp), "%.*s", (int)n, (const char *)v);
				if (!found++)
					snprintf(ver, len, "%s", tmp);
				else if (strcmp(ver, tmp))
					*conflict = true;
			}
		}
	}
	return found;
}
