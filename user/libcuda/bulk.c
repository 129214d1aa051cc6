// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Bulk writes that may cover the capability byte: calls of memset, memcpy
 * and memmove (through the PLT or the GOT, tail calls included) and rep
 * stos/movs, with a length that is a constant set just before. Each one's
 * destination is followed back through a few register moves and lea's:
 * the stack, a fresh allocation (the result of malloc/calloc/operator new),
 * or a register. It is the device structure when the same stretch of code
 * reaches the capability byte through that register first (an access at
 * +field through it, not written in between): then the bulk write is a
 * store to the byte that no same-length rewrite can fix.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcuda/bulk.h"

#define LOOKBACK 48		/* instructions kept before each site */
#define MAX_STUBS 32

struct site {
	uint64_t addr;
	const char *what;
	int width;		/* rep: element size; 0 for calls */
};

struct look {
	uint64_t addr;
	unsigned int id;
	cs_x86 x;
};

static const char *const bulk_names[] = { "memset", "memcpy", "memmove", "__memset_chk", "__memcpy_chk",
					  "__memmove_chk" };
static const char *const alloc_names[] = { "malloc", "calloc", "realloc", "_Znwm", "_Znam", "aligned_alloc" };

const char *lc_dest_name(enum lc_dest d)
{
	static const char *const n[] = { "stack", "fresh allocation", "device structure", "not proven" };

	return d <= LC_DEST_UNPROVEN ? n[d] : "not proven";
}

static unsigned int fam(unsigned int r)
{
	static const unsigned int map[][4] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL }, { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL }, { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL }, { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL }, { X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B }, { X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B },
	};

	for (size_t i = 0; r && i < sizeof(map) / sizeof(map[0]); ++i)
		for (int j = 0; j < 4; ++j)
			if (map[i][j] == r)
				return map[i][0];
	return 0;
}

static bool writes_reg(csh cs, const struct look *l, unsigned int f)
{
	const cs_x86 *x = &l->x;

	if (l->id == X86_INS_CALL)	/* caller-saved registers are clobbered */
		return f == X86_REG_RAX || f == X86_REG_RCX || f == X86_REG_RDX || f == X86_REG_RSI ||
		       f == X86_REG_RDI || f == X86_REG_R8 || f == X86_REG_R9 || f == X86_REG_R10 ||
		       f == X86_REG_R11;
	for (int o = 0; o < x->op_count; ++o)
		if (x->operands[o].type == X86_OP_REG && (x->operands[o].access & CS_AC_WRITE) &&
		    fam(x->operands[o].reg) == f)
			return true;
	(void)cs;
	return false;
}

static bool barrier(unsigned int id)
{
	return id == X86_INS_RET || id == X86_INS_JMP || id == X86_INS_CALL || id == X86_INS_UD2 ||
	       id == X86_INS_HLT || id == X86_INS_INT3;
}

static uint64_t stub_of(const uint64_t *stubs, const char *const *names, size_t n, uint64_t t, const char **name)
{
	for (size_t i = 0; i < n; ++i)
		if (stubs[i] == t) {
			*name = names[i];
			return t;
		}
	return 0;
}

/*
 * PLT stubs: "jmp *slot(%rip)" (ff 25), possibly after endbr64 and with a
 * bnd prefix (the .plt.sec layout). Returns the number found.
 */
static size_t find_stubs(const struct lc_elf *e, const char *const *want, size_t nwant, uint64_t *slots,
			 uint64_t *stubs, const char **names, size_t cap)
{
	size_t n = 0, ns = 0;
	const char *sname[MAX_STUBS];

	for (size_t i = 0; i < nwant && ns < MAX_STUBS; ++i)
		if (!lc_elf_import_slot(e, want[i], &slots[ns])) {
			sname[ns] = want[i];
			ns++;
		}
	for (int s = 0; s < e->nload && ns; ++s) {
		const struct lc_seg *sg = &e->load[s];
		const uint8_t *b = e->map + sg->off;

		if (!(sg->flags & 1))
			continue;
		for (uint64_t p = 0; p + 6 <= sg->filesz; ++p) {
			int32_t rel;

			if (b[p] != 0xff || b[p + 1] != 0x25)
				continue;
			memcpy(&rel, b + p + 2, 4);
			uint64_t t = sg->vaddr + p + 6 + (int64_t)rel, a = sg->vaddr + p;

			for (size_t i = 0; i < ns && n < cap; ++i) {
				if (slots[i] != t)
					continue;
				if (p >= 1 && b[p - 1] == 0xf2)
					a--;
				if (a - sg->vaddr >= 4 && !memcmp(b + (a - sg->vaddr) - 4, "\xf3\x0f\x1e\xfa", 4))
					a -= 4;
				stubs[n] = a;
				names[n++] = sname[i];
			}
		}
	}
	/* the slots are also called directly (call/jmp *slot(%rip)) */
	for (size_t i = 0; i < ns && n < cap; ++i) {
		stubs[n] = slots[i] | (1ULL << 63);
		names[n++] = sname[i];
	}
	return n;
}

/*
 * Worth decoding: in the 128 bytes before the site a constant that could be
 * a covering length or count, or a lea of an address at most 4 KiB below
 * the byte (a short write into the middle of the structure).
 */
static bool plausible(const uint8_t *b, uint64_t p, uint64_t min, uint32_t field)
{
	uint64_t from = p > 128 ? p - 128 : 0;

	for (uint64_t q = from; q + 5 <= p; ++q) {
		uint32_t v;

		if ((b[q] == 0xba || b[q] == 0xb9) || (q + 7 <= p && b[q] == 0x48 && b[q + 1] == 0xc7)) {
			memcpy(&v, b + q + (b[q] == 0x48 ? 3 : 1), 4);
			if (v >= min && v < (1u << 30))
				return true;
		}
		if ((b[q] & 0xf0) == 0x40 && b[q + 1] == 0x8d && (b[q + 2] >> 6) == 2 && q + 8 <= p) {
			memcpy(&v, b + q + 3 + ((b[q + 2] & 7) == 4), 4);
			if (v <= field && field - v < 4096)
				return true;
		}
	}
	return false;
}

static int add(struct lc_bulk **out, size_t *n, const struct lc_bulk *b)
{
	void *p = realloc(*out, (*n + 1) * sizeof(**out));

	if (!p)
		return -ENOMEM;
	*out = p;
	(*out)[(*n)++] = *b;
	return 0;
}

/* The site's arguments, from the instructions before it (newest last). */
static void judge(csh cs, const struct look *l, int nl, const struct site *st, uint32_t field,
		  const uint64_t *astubs, const char **anames, size_t nastubs, struct lc_bulk *b, bool *covers)
{
	unsigned int lenreg = st->width ? X86_REG_RCX : X86_REG_RDX, r = X86_REG_RDI;
	int64_t len = -1, at = 0;
	int k, defk = nl;

	*covers = false;
	for (k = nl - 1; k >= 0 && !barrier(l[k].id); --k) {
		if (!writes_reg(cs, &l[k], fam(lenreg)))
			continue;
		if (l[k].id == X86_INS_MOV && l[k].x.operands[1].type == X86_OP_IMM)
			len = l[k].x.operands[1].imm;
		break;
	}
	if (len < 0)
		return;
	len *= st->width ? st->width : 1;
	/* follow the destination: lea d(%r),%rdi / mov %r,%rdi, a few levels */
	b->dest = LC_DEST_UNPROVEN;
	for (k = nl - 1; k >= 0; --k) {
		if (barrier(l[k].id) && !(l[k].id == X86_INS_CALL && r == X86_REG_RAX))
			break;
		if (!writes_reg(cs, &l[k], r))
			continue;
		const cs_x86 *x = &l[k].x;

		if (l[k].id == X86_INS_CALL) {
			const char *name = NULL;
			uint64_t t = x->op_count == 1 && x->operands[0].type == X86_OP_IMM ? x->operands[0].imm : 0;

			if (r == X86_REG_RAX && t && stub_of(astubs, anames, nastubs, t, &name))
				b->dest = LC_DEST_FRESH;
			break;
		}
		if (l[k].id == X86_INS_LEA && x->operands[1].mem.base != X86_REG_RIP &&
		    x->operands[1].mem.index == X86_REG_INVALID) {
			at += x->operands[1].mem.disp;
			r = fam(x->operands[1].mem.base);
			defk = k;
			continue;
		}
		if (l[k].id == X86_INS_MOV && x->operands[1].type == X86_OP_REG && fam(x->operands[1].reg)) {
			r = fam(x->operands[1].reg);
			defk = k;
			continue;
		}
		r = 0;
		break;
	}
	b->len = (uint64_t)len;
	b->at = at;
	snprintf(b->base, sizeof(b->base), "%s", r ? cs_reg_name(cs, r) : "unknown");
	if (r == X86_REG_RSP || r == X86_REG_RBP)
		b->dest = LC_DEST_STACK;
	*covers = at <= (int64_t)field && (int64_t)field < at + len;
	if (!*covers || b->dest != LC_DEST_UNPROVEN || !r)
		return;
	/* the same code reached the byte through r before: the device structure */
	for (k = defk - 1; k >= 0 && !barrier(l[k].id); --k) {
		const cs_x86 *x = &l[k].x;

		for (int o = 0; o < x->op_count; ++o)
			if (x->operands[o].type == X86_OP_MEM && fam(x->operands[o].mem.base) == r &&
			    x->operands[o].mem.index == X86_REG_INVALID && x->operands[o].mem.disp == field) {
				b->dest = LC_DEST_DEVICE;
				return;
			}
		if (writes_reg(cs, &l[k], r))
			return;
	}
}

int lc_bulk_scan(const struct lc_elf *e, uint32_t field, struct lc_bulk **out, size_t *nout, char *err,
		 size_t errlen)
{
	uint64_t slots[MAX_STUBS], stubs[MAX_STUBS], aslots[MAX_STUBS], astubs[MAX_STUBS];
	const char *names[MAX_STUBS], *anames[MAX_STUBS];
	size_t nstubs, nastubs;
	struct site *sites = NULL;
	size_t nsites = 0, csites = 0;
	struct look *ring = NULL;
	cs_insn *insn = NULL;
	csh cs;
	int ret = -ENOMEM;

	*out = NULL;
	*nout = 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		snprintf(err, errlen, "Unable to start the disassembler");
		return -EIO;
	}
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	ring = calloc(LOOKBACK, sizeof(*ring));
	if (!insn || !ring)
		goto out;
	nstubs = find_stubs(e, bulk_names, sizeof(bulk_names) / sizeof(bulk_names[0]), slots, stubs, names, MAX_STUBS);
	nastubs = find_stubs(e, alloc_names, sizeof(alloc_names) / sizeof(alloc_names[0]), aslots, astubs, anames,
			     MAX_STUBS);

	for (int s = 0; s < e->nload; ++s) {
		const struct lc_seg *sg = &e->load[s];
		const uint8_t *b = e->map + sg->off;

		if (!(sg->flags & 1))
			continue;
		for (uint64_t p = 0; p + 6 <= sg->filesz; ++p) {
			struct site st = { sg->vaddr + p, NULL, 0 };
			int32_t rel;

			if (b[p] == 0xe8 || b[p] == 0xe9) {
				memcpy(&rel, b + p + 1, 4);
				stub_of(stubs, names, nstubs, sg->vaddr + p + 5 + (int64_t)rel, &st.what);
			} else if (b[p] == 0xff && (b[p + 1] == 0x15 || b[p + 1] == 0x25)) {
				memcpy(&rel, b + p + 2, 4);
				stub_of(stubs, names, nstubs, (sg->vaddr + p + 6 + (int64_t)rel) | (1ULL << 63),
					&st.what);
			} else if (b[p] == 0xf3) {
				size_t q = p + 1 + (b[p + 1] == 0x48);
				static const char *const rep[] = { "rep movsb", "rep movs", "rep stosb", "rep stos" };

				if (b[q] == 0xa4 || b[q] == 0xa5 || b[q] == 0xaa || b[q] == 0xab) {
					int k = (b[q] == 0xaa || b[q] == 0xab) * 2 + (b[q] & 1);

					st.what = rep[k];
					st.width = b[q] & 1 ? (q > p + 1 ? 8 : 4) : 1;
				}
			}
			if (!st.what || !plausible(b, p, st.width ? (field + 1) / 8 : field / 2, field))
				continue;
			if (nsites == csites) {
				size_t nc = csites ? 2 * csites : 64;
				void *np = realloc(sites, nc * sizeof(*sites));

				if (!np)
					goto out;
				sites = np;
				csites = nc;
			}
			sites[nsites++] = st;
		}
	}
	/*
	 * Decode each site's function from its start, keeping the last
	 * instructions; sites come in address order, so a function with
	 * several is decoded once.
	 */
	uint64_t cur_fs = 0, a = 0;
	int n = 0;

	for (size_t i = 0; i < nsites; ++i) {
		uint64_t fs = lc_elf_func_start(e, sites[i].addr);
		bool at_site = false;

		if (!fs || sites[i].addr - fs > (4u << 20))
			continue;
		if (fs != cur_fs || a > sites[i].addr) {
			cur_fs = a = fs;
			n = 0;
		}
		while (a <= sites[i].addr) {
			size_t len = 15;
			const uint8_t *p = NULL;
			uint64_t ia = a;

			while (len && !(p = lc_elf_ptr(e, a, len)))
				--len;
			if (!p || !cs_disasm_iter(cs, &p, &len, &ia, insn))
				break;
			if (a == sites[i].addr) {
				at_site = true;
				break;
			}
			struct look *l = &ring[n % LOOKBACK];

			l->addr = a;
			l->id = insn->id;
			l->x = insn->detail->x86;
			n++;
			a += insn->size;
		}
		if (!at_site)
			continue;	/* the bytes are not an instruction there */
		struct look lin[LOOKBACK];
		int m = n < LOOKBACK ? n : LOOKBACK;
		struct lc_bulk bw = { .addr = sites[i].addr };
		bool covers;

		for (int k = 0; k < m; ++k)
			lin[k] = ring[(n - m + k) % LOOKBACK];
		judge(cs, lin, m, &sites[i], field, astubs, anames, nastubs, &bw, &covers);
		if (!covers)
			continue;
		snprintf(bw.what, sizeof(bw.what), "%s", sites[i].what);
		if (add(out, nout, &bw))
			goto out;
	}
	ret = 0;
out:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "Out of memory");
	free(sites);
	free(ring);
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return ret;
}
