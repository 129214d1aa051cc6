// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The locator and the planner. Everything is derived from the binary; see
 * libcuda_gate.h for the path followed. The proof obligations are kept
 * local and explicit: each store is analysed over a window of straight
 * code that every path to it must enter at its start (so the emulator may
 * start from an arbitrary state there), and each rewrite is accepted only
 * if emulation shows the stored byte gains the mask bit and nothing else,
 * and a forward walk shows the changed register and flags die unobserved.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/env.h"
#include "libcuda/bulk.h"
#include "libcuda/emu.h"
#include "libcuda/gate.h"
#include "libcuda/paths.h"

/* Reasons quote instructions and other reasons; truncating them is fine. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define MAX_WIN_INSNS 48
#define MAX_BFS_FUNCS 256
#define SCAN_SPAN 63		/* widest store we check for overlap: 64 bytes */

struct win {
	bool ok;
	char why[256];
	uint64_t start, end;
	struct lc_emu_win ew;
	struct lc_emu_out orig;	/* emulation of the unmodified bytes */
	uint64_t cand[MAX_WIN_INSNS];	/* rewrite candidates inside the window */
	int ncand;
};

struct ctx {
	csh cs;
	cs_insn *insn;
	struct lc_emu *emu;
	const struct lc_elf *e;
	struct lc_gate *g;
	struct win *w;
	/* direct branches found while decoding functions: source -> target */
	uint64_t (*br)[2];
	size_t nbr, cbr;
};

const char *lc_effect_name(enum lc_effect e)
{
	static const char *const n[] = { "sets", "clears", "preserves", "copies-computed", "unknown" };

	return e <= LC_UNKNOWN ? n[e] : "unknown";
}

static int refuse(struct lc_gate *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->reason, sizeof(g->reason), fmt, ap);
	va_end(ap);
	g->ok = false;
	return -1;
}

/* Decodes one instruction at vaddr from bytes (NULL: the file). */
static bool decode(struct ctx *c, uint64_t vaddr, const uint8_t *bytes, size_t blen)
{
	const uint8_t *p = bytes;
	size_t len = blen;
	uint64_t a = vaddr;

	if (!p) {
		len = 15;
		while (len && !(p = lc_elf_ptr(c->e, vaddr, len)))
			--len;
		if (!p)
			return false;
	}
	return cs_disasm_iter(c->cs, &p, &len, &a, c->insn);
}

static void fmt_insn(const cs_insn *i, char *buf, size_t len)
{
	snprintf(buf, len, "%.15s%s%.62s", i->mnemonic, i->op_str[0] ? " " : "", i->op_str);
}

static bool is_jcc(unsigned int id)
{
	return (id >= X86_INS_JAE && id <= X86_INS_JS && id != X86_INS_JMP) ||
	       id == X86_INS_JCXZ || id == X86_INS_JECXZ || id == X86_INS_JRCXZ;
}

static bool is_barrier(const cs_insn *i)
{
	switch (i->id) {
	case X86_INS_CALL: case X86_INS_RET: case X86_INS_JMP: case X86_INS_LJMP:
	case X86_INS_INT3: case X86_INS_UD2: case X86_INS_HLT: case X86_INS_SYSCALL:
	case X86_INS_INT: case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return true;
	}
	return false;
}

static uint64_t direct_target(const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;

	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		return (uint64_t)x->operands[0].imm;
	return 0;
}

static void add_branch(struct ctx *c, uint64_t src, uint64_t dst)
{
	if (c->nbr == c->cbr) {
		size_t n = c->cbr ? 2 * c->cbr : 1024;
		void *p = realloc(c->br, n * sizeof(*c->br));

		if (!p)
			return;
		c->br = p;
		c->cbr = n;
	}
	c->br[c->nbr][0] = src;
	c->br[c->nbr][1] = dst;
	c->nbr++;
}

/* ---- locating the gate ---- */

struct jtab {
	uint64_t func, table;
	int max, bias;
};

/*
 * A switch compiled as: cmp $max,%idx; ja default; ... lea T(%rip),%rA;
 * movslq (%rA,%idx,4),%rB; add %rA,%rB; jmp *%rB. The index may first be
 * biased by sub/lea. Looks back from an indirect jmp at insns[k].
 */
struct dinsn {
	uint64_t addr;
	unsigned int id;
	cs_x86 x;
};

static bool writes_flags(const struct dinsn *d)
{
	return d->x.eflags & (X86_EFLAGS_MODIFY_ZF | X86_EFLAGS_MODIFY_CF | X86_EFLAGS_RESET_CF |
			      X86_EFLAGS_SET_CF);
}

static bool match_jtab(struct dinsn *d, int k, struct jtab *t)
{
	int idx = -1, tabreg = -1, ja = -1;
	uint64_t table = 0;

	if (d[k].x.op_count != 1 || d[k].x.operands[0].type != X86_OP_REG)
		return false;
	for (int j = k - 1; j >= 0 && j >= k - 8 && idx < 0; --j) {
		const cs_x86 *x = &d[j].x;

		if (d[j].id == X86_INS_MOVSXD && x->op_count == 2 && x->operands[1].type == X86_OP_MEM &&
		    x->operands[1].mem.scale == 4 && x->operands[1].mem.index != X86_REG_INVALID) {
			idx = x->operands[1].mem.index;
			tabreg = x->operands[1].mem.base;
		}
	}
	for (int j = k - 1; j >= 0 && !table && tabreg >= 0; --j)
		if (d[j].id == X86_INS_LEA && d[j].x.operands[0].reg == (unsigned)tabreg &&
		    d[j].x.operands[1].mem.base == X86_REG_RIP && j + 1 <= k)
			table = d[j + 1].addr + d[j].x.operands[1].mem.disp;
	if (idx < 0 || !table)
		return false;
	for (int j = k - 1; j >= 0 && ja < 0; --j)
		if (d[j].id == X86_INS_JA || d[j].id == X86_INS_JAE)
			ja = j;
	/* the bound: the last flag-writing instruction before the ja */
	for (int j = ja - 1; j >= 0; --j) {
		const cs_x86 *x = &d[j].x;

		if (!writes_flags(&d[j]))
			continue;
		if (d[j].id != X86_INS_CMP || x->op_count != 2 || x->operands[1].type != X86_OP_IMM)
			return false;
		t->table = table;
		t->max = (int)x->operands[1].imm - (d[ja].id == X86_INS_JAE);
		t->bias = 0;
		if (j >= 1 && x->operands[0].type == X86_OP_REG && d[j - 1].id == X86_INS_SUB &&
		    d[j - 1].x.operands[1].type == X86_OP_IMM)
			t->bias = (int)d[j - 1].x.operands[1].imm;
		else if (j >= 1 && x->operands[0].type == X86_OP_REG && d[j - 1].id == X86_INS_LEA &&
			 d[j - 1].x.operands[1].mem.base != X86_REG_RIP &&
			 d[j - 1].x.operands[1].mem.index == X86_REG_INVALID &&
			 d[j - 1].x.operands[0].reg == x->operands[0].reg)
			t->bias = -(int)d[j - 1].x.operands[1].mem.disp;
		return t->max > 0 && t->max < 4096;
	}
	return false;
}

/* Decodes [start, end) into d (at most cap insns); returns the count. */
static int decode_range(struct ctx *c, uint64_t start, uint64_t end, struct dinsn *d, int cap)
{
	int n = 0;
	uint64_t a = start;

	while (a < end && n < cap && decode(c, a, NULL, 0)) {
		d[n].addr = a;
		d[n].id = c->insn->id;
		d[n].x = c->insn->detail->x86;
		a += c->insn->size;
		n++;
	}
	return n;
}

static bool jtab_entry(struct ctx *c, const struct jtab *t, int attr, uint64_t *out)
{
	int i = attr - t->bias;
	const uint8_t *p;
	int32_t rel;

	if (i < 0 || i > t->max)
		return false;
	p = lc_elf_ptr(c->e, t->table + 4 * (uint64_t)i, 4);
	if (!p)
		return false;
	memcpy(&rel, p, 4);
	*out = t->table + (int64_t)rel;
	return lc_elf_exec(c->e, *out);
}

struct tests {
	uint32_t off[8];
	uint8_t mask[8];
	int n;
	uint64_t global;
};

/* What an attribute branch tests: byte fields of the device, a global. */
static void branch_tests(struct ctx *c, uint64_t a, struct tests *t)
{
	int follows = 0;

	memset(t, 0, sizeof(*t));
	for (int k = 0; k < 32 && decode(c, a, NULL, 0); ++k) {
		const cs_insn *i = c->insn;
		const cs_x86 *x = &i->detail->x86;

		if (i->id == X86_INS_TEST && x->op_count == 2 && x->operands[0].type == X86_OP_MEM &&
		    x->operands[0].size == 1 && x->operands[1].type == X86_OP_IMM &&
		    x->operands[0].mem.base != X86_REG_RIP && x->operands[0].mem.base != X86_REG_INVALID &&
		    x->operands[0].mem.index == X86_REG_INVALID && t->n < 8) {
			t->off[t->n] = (uint32_t)x->operands[0].mem.disp;
			t->mask[t->n++] = (uint8_t)x->operands[1].imm;
		} else if (i->id == X86_INS_CMP && x->op_count == 2 && x->operands[0].type == X86_OP_MEM &&
			   x->operands[0].size == 1 && x->operands[0].mem.base == X86_REG_RIP &&
			   x->operands[1].type == X86_OP_IMM && x->operands[1].imm == 0) {
			t->global = i->address + i->size + x->operands[0].mem.disp;
		}
		if (i->id == X86_INS_RET)
			break;
		if (i->id == X86_INS_JMP) {
			uint64_t d = direct_target(i);

			if (!d || t->n || ++follows > 2)
				break;
			a = d;
			continue;
		}
		a += i->size;
	}
}

static int locate(struct ctx *c)
{
	struct lc_gate *g = c->g;
	const struct lc_elf *e = c->e;
	uint64_t queue[MAX_BFS_FUNCS];
	int depth[MAX_BFS_FUNCS], qn = 0;
	struct jtab found[8];
	int nfound = 0;
	struct dinsn *d = calloc(8192, sizeof(*d));

	if (!d)
		return refuse(g, "Out of memory");
	if (lc_elf_sym(e, "cuDeviceGetAttribute", &g->api) || !lc_elf_exec(e, g->api)) {
		free(d);
		return refuse(g, "cuDeviceGetAttribute is not exported as a function in an executable segment");
	}
	/* The export is a thin wrapper: a check, then a jump through a slot. */
	uint64_t a = g->api;

	for (int k = 0; k < 16 && decode(c, a, NULL, 0); ++k) {
		const cs_insn *i = c->insn;
		const cs_x86 *x = &i->detail->x86;

		if (i->id == X86_INS_JMP && x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
		    x->operands[0].mem.base == X86_REG_RIP) {
			g->slot = i->address + i->size + x->operands[0].mem.disp;
			break;
		}
		if (i->id == X86_INS_JMP && direct_target(i)) {
			g->impl = direct_target(i);
			break;
		}
		if (i->id == X86_INS_RET)
			break;
		a += i->size;
	}
	if (g->slot) {
		int r = lc_elf_relative(e, g->slot, &g->impl);

		if (r) {
			free(d);
			return refuse(g, "The cuDeviceGetAttribute slot at 0x%" PRIx64 " has %s", g->slot,
				      r == -EINVAL ? "a relocation other than R_X86_64_RELATIVE" :
						     "no R_X86_64_RELATIVE relocation");
		}
	}
	if (!g->impl)
		g->impl = g->api;
	if (!lc_elf_exec(e, g->impl)) {
		free(d);
		return refuse(g, "The cuDeviceGetAttribute implementation 0x%" PRIx64 " is not in an executable segment",
			      g->impl);
	}

	/* Breadth-first over direct calls from the implementation. */
	queue[qn] = g->impl;
	depth[qn++] = 0;
	for (int qi = 0; qi < qn; ++qi) {
		uint64_t fs = queue[qi], fe = lc_elf_func_end(e, fs);
		int n;

		if (fe <= fs || fe - fs > (1u << 20))
			fe = fs + 0x4000;
		n = decode_range(c, fs, fe, d, 8192);
		for (int k = 0; k < n; ++k) {
			struct jtab t;

			if (d[k].id == X86_INS_JMP && match_jtab(d, k, &t) && t.max >= 124 - t.bias && t.bias <= 116) {
				bool dup = false;

				t.func = fs;
				for (int j = 0; j < nfound; ++j)
					dup |= found[j].table == t.table;
				if (!dup && nfound < 8)
					found[nfound++] = t;
			}
			if ((d[k].id == X86_INS_CALL || d[k].id == X86_INS_JMP) && depth[qi] < 3 &&
			    d[k].x.op_count == 1 && d[k].x.operands[0].type == X86_OP_IMM) {
				uint64_t t = d[k].x.operands[0].imm;
				bool seen = false;

				if (d[k].id == X86_INS_JMP && t >= fs && t < fe)
					continue;
				for (int j = 0; j < qn; ++j)
					seen |= queue[j] == t;
				if (!seen && qn < MAX_BFS_FUNCS && lc_elf_exec(e, t)) {
					queue[qn] = t;
					depth[qn++] = depth[qi] + 1;
				}
			}
		}
		if (nfound)
			break;	/* nearest level wins */
	}
	free(d);
	if (!nfound)
		return refuse(g, "No attribute dispatcher (a jump table covering attributes 116 and 124) within three calls of the cuDeviceGetAttribute implementation 0x%" PRIx64,
			      g->impl);

	/* The gate: the (byte, mask) both attribute 116 and 124 test. */
	int ncap = 0, which = -1;
	struct tests t116, t124, t110;

	for (int f = 0; f < nfound; ++f) {
		uint64_t b116, b124;

		if (!jtab_entry(c, &found[f], 116, &b116) || !jtab_entry(c, &found[f], 124, &b124))
			continue;
		branch_tests(c, b116, &t116);
		branch_tests(c, b124, &t124);
		for (int i = 0; i < t116.n; ++i)
			for (int j = 0; j < t124.n; ++j)
				if (t116.off[i] == t124.off[j] && t116.mask[i] == t124.mask[j] && t116.mask[i]) {
					if (ncap++ == 0 || which != f) {
						g->field = t116.off[i];
						g->mask = t116.mask[i];
					}
					which = f;
				}
	}
	if (ncap == 0)
		return refuse(g, "Attributes 116 and 124 do not test a common device byte (dispatcher at 0x%" PRIx64 "): unknown gate layout",
			      found[0].func);
	if (ncap > 1)
		return refuse(g, "Ambiguous gate: attributes 116 and 124 test %d common device bytes, so the capability byte cannot be told apart",
			      ncap);
	if (g->mask & (g->mask - 1))
		return refuse(g, "The capability test at +0x%x uses mask 0x%02x, more than one bit: not a known gate shape",
			      g->field, g->mask);
	g->dispatcher = found[which].func;
	g->table = found[which].table;
	g->table_max = found[which].max;
	g->table_bias = found[which].bias;
	jtab_entry(c, &found[which], 116, &g->branch[1]);
	jtab_entry(c, &found[which], 124, &g->branch[2]);
	branch_tests(c, g->branch[1], &t116);
	branch_tests(c, g->branch[2], &t124);
	if (jtab_entry(c, &found[which], 110, &g->branch[0]))
		branch_tests(c, g->branch[0], &t110);
	if (t116.global && t116.global == t124.global)
		g->global = t116.global;
	for (int j = 0; j < t124.n; ++j) {
		size_t l = strlen(g->extra);

		if (t124.off[j] != g->field || t124.mask[j] != g->mask)
			snprintf(g->extra + l, sizeof(g->extra) - l, "%s+0x%x & 0x%02x", l ? ", " : "",
				 t124.off[j], t124.mask[j]);
	}
	g->located = true;
	return 0;
}

/* ---- finding the stores ---- */

static int add_store(struct lc_gate *g, const cs_insn *i, bool lea, const cs_x86_op *op)
{
	struct lc_store *s;
	void *p = realloc(g->stores, (g->nstores + 1) * sizeof(*g->stores));

	if (!p)
		return -ENOMEM;
	g->stores = p;
	s = &g->stores[g->nstores++];
	memset(s, 0, sizeof(*s));
	s->addr = i->address;
	s->len = i->size;
	s->addr_taken = lea;
	if (op) {
		s->lo = (int8_t)(op->mem.disp - (int64_t)g->field);
		s->width = op->size;
	}
	fmt_insn(i, s->text, sizeof(s->text));
	return 0;
}

/* capstone marks the memory operand of some compares as written */
static bool read_only(unsigned int id)
{
	return id == X86_INS_TEST || id == X86_INS_CMP || id == X86_INS_BT || id == X86_INS_PREFETCHT0 ||
	       id == X86_INS_PREFETCHT1 || id == X86_INS_PREFETCHT2 || id == X86_INS_PREFETCHNTA ||
	       id == X86_INS_PREFETCHW || id == X86_INS_NOP;
}

static bool reads_mem(const cs_insn *i, int op)
{
	return i->detail->x86.operands[op].access & CS_AC_READ;
}

/*
 * Offset of a 32-bit displacement in i, or 0. Read from the ModRM and SIB
 * bytes: capstone 4 reports a 16-bit displacement size for instructions
 * with an operand-size prefix (66), which would hide word stores.
 */
static unsigned int disp32_offset(const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;
	unsigned int mo = x->encoding.modrm_offset;
	uint8_t modrm, mod, rm;

	if (!mo || mo >= i->size)
		return 0;
	modrm = i->bytes[mo];
	mod = modrm >> 6;
	rm = modrm & 7;
	if (mod == 3 || x->prefix[3] == 0x67)
		return 0;
	if (rm == 4 && mo + 1 < i->size && mod == 0 && (i->bytes[mo + 1] & 7) == 5)
		return mo + 2;
	if (mod == 2)
		return mo + 1 + (rm == 4);
	if (mod == 0 && rm == 5)
		return mo + 1;
	return 0;
}

/* The four bytes at hit are the displacement of a (non-RIP) memory operand of i. */
static bool is_disp(const cs_insn *i, uint64_t hit)
{
	const cs_x86 *x = &i->detail->x86;
	unsigned int d = disp32_offset(i);

	if (!d || hit - i->address != d || d + 4 > i->size)
		return false;
	for (int o = 0; o < x->op_count; ++o)
		if (x->operands[o].type == X86_OP_MEM && x->operands[o].mem.base != X86_REG_RIP)
			return true;
	return false;
}

/*
 * Bytes that are not a displacement in the linear disassembly (part of an
 * immediate, of an opcode, a branch offset) are a coincidence, unless the
 * disassembly is out of step there: then the real instruction may be a
 * store that uses them as its displacement. Decoding from each of the
 * eight bytes before them tells: if one of those decodes to a store that
 * covers the byte with exactly these bytes as its displacement, a store may
 * hide there.
 */
static bool hidden_store(struct ctx *c, uint64_t hit, uint64_t field, char *alt, size_t altlen)
{
	for (int back = 1; back <= 8; ++back) {
		const cs_x86 *x;

		if (!decode(c, hit - back, NULL, 0) || c->insn->size < back + 4)
			continue;
		x = &c->insn->detail->x86;
		if (!is_disp(c->insn, hit) || read_only(c->insn->id))
			continue;
		for (int o = 0; o < x->op_count; ++o) {
			const cs_x86_op *op = &x->operands[o];

			if (op->type == X86_OP_MEM && (op->access & CS_AC_WRITE) && op->mem.disp >= 0 &&
			    (uint64_t)op->mem.disp <= field && field < (uint64_t)op->mem.disp + (op->size ? op->size : 64)) {
				fmt_insn(c->insn, alt, altlen);
				return true;
			}
		}
	}
	return false;
}

/*
 * A lea of a field just below the byte makes a pointer from which a small
 * displacement reaches it. Its uses are followed in the straight code
 * after it, until the register is overwritten or the code branches: a
 * store through it that covers the byte is reported in why (returns
 * true). A pointer that is copied away or passed on is not followed (see
 * docs/libcuda.md, Limits): in the builds read, such pointers serve a lock
 * cmpxchg of their own 8-byte field, or are stored into a request record.
 */
static unsigned int family(unsigned int r);

static bool near_pointer(struct ctx *c, uint64_t a, unsigned int r, int64_t at, char *why, size_t len)
{
	uint64_t field = c->g->field;

	for (int k = 0; k < 32 && decode(c, a, NULL, 0); ++k, a += c->insn->size) {
		const cs_insn *i = c->insn;
		const cs_x86 *x = &i->detail->x86;
		cs_regs rr, ww;
		uint8_t nr, nw;
		bool reads = false, writes = false;

		if (cs_regs_access(c->cs, i, rr, &nr, ww, &nw)) {
			snprintf(why, len, "its use at 0x%" PRIx64 " cannot be decoded", a);
			return true;
		}
		for (int n = 0; n < nr; ++n)
			reads |= family(rr[n]) == r;
		for (int n = 0; n < nw; ++n)
			writes |= family(ww[n]) == r;
		for (int o = 0; o < x->op_count; ++o) {
			const cs_x86_op *op = &x->operands[o];

			if (op->type != X86_OP_MEM || family(op->mem.base) != r)
				continue;
			if ((op->access & CS_AC_WRITE) && !read_only(i->id) &&
			    (op->mem.index != X86_REG_INVALID ||
			     (at + op->mem.disp <= (int64_t)field &&
			      (int64_t)field < at + op->mem.disp + (op->size ? op->size : 64)))) {
				snprintf(why, len, "the store at 0x%" PRIx64 " through it (%s %s) may cover the byte", a,
					 i->mnemonic, i->op_str);
				return true;
			}
		}
		if (writes && !reads)
			return false;	/* overwritten: the pointer is dead */
		if (i->id == X86_INS_RET || i->id == X86_INS_CALL || i->id == X86_INS_JMP || is_jcc(i->id))
			return false;	/* leaves straight code; the register is then not tracked */
	}
	return false;
}

/*
 * Every four-byte value in the executable segments between field-63 and
 * field is a candidate displacement. Each one is decoded from the start of
 * its function (unwind information) and must turn out to be an operand:
 * a store that covers the byte, a load, a lea, an immediate, a branch
 * offset. Anything else (undecodable code before it, or the bytes not being
 * an operand of the instruction that holds them) means a store may hide
 * there, and the analysis is refused.
 */
static int scan_stores(struct ctx *c)
{
	struct lc_gate *g = c->g;
	const struct lc_elf *e = c->e;
	uint32_t lo = g->field - SCAN_SPAN;

	if (g->field < 0x80)
		return refuse(g, "The capability byte offset +0x%x fits an 8-bit displacement; a displacement scan cannot prove it found every store",
			      g->field);
	for (int s = 0; s < e->nload; ++s) {
		const struct lc_seg *sg = &e->load[s];
		const uint8_t *base = e->map + sg->off;
		uint64_t cur = 0, fs_prev = UINT64_MAX;

		if (!(sg->flags & 1 /* PF_X */) || sg->filesz < 4)
			continue;
		for (uint64_t p = 0; p + 4 <= sg->filesz; ++p) {
			uint32_t v;

			memcpy(&v, base + p, 4);
			if (v - lo > SCAN_SPAN)
				continue;
			uint64_t hit = sg->vaddr + p, fs = lc_elf_func_start(e, hit);
			const cs_insn *i = c->insn;

			g->nhits++;
			if (!fs || fs < sg->vaddr)
				fs = sg->vaddr;
			if (fs != fs_prev || cur > hit) {
				cur = fs;
				fs_prev = fs;
			}
			for (;;) {
				if (!decode(c, cur, NULL, 0))
					return refuse(g, "Undecodable code at 0x%" PRIx64 " stands between the start of its function (0x%" PRIx64 ") and bytes at 0x%" PRIx64 " that could address +0x%x: a store there cannot be ruled out",
						      cur, fs, hit, v);
				if (hit < cur + i->size)
					break;
				cur += i->size;
			}
			if (!is_disp(i, hit)) {
				char t[80], alt[80];
				uint64_t at = cur;

				fmt_insn(i, t, sizeof(t));
				if (hidden_store(c, hit, g->field, alt, sizeof(alt)))
					return refuse(g, "Bytes at 0x%" PRIx64 " would be the displacement of a store to +0x%x (%s) if the code were decoded a few bytes earlier, but the disassembly from the start of the function makes them part of 0x%" PRIx64 " (%s): it may be out of step there, so a store cannot be ruled out",
						      hit, v, alt, at, t);
				continue;
			}
			const cs_x86 *x = &i->detail->x86;

			for (int o = 0; o < x->op_count; ++o) {
				const cs_x86_op *op = &x->operands[o];
				int64_t dd = op->mem.disp;

				if (op->type != X86_OP_MEM || (uint32_t)dd != v || dd < 0)
					continue;
				if (i->id == X86_INS_LEA) {
					if ((uint64_t)dd == g->field && add_store(g, i, true, NULL))
						return refuse(g, "Out of memory");
					if ((uint64_t)dd < g->field) {
						char why[200];
						uint64_t at = cur + i->size;
						unsigned int r = family(x->operands[0].reg);

						if (near_pointer(c, at, r, dd, why, sizeof(why)))
							return refuse(g, "A pointer to +0x%" PRIx64 ", %" PRIu64 " byte(s) below the capability byte, is made at 0x%" PRIx64 " and %s",
								      (uint64_t)dd, g->field - (uint64_t)dd, cur, why);
						decode(c, cur, NULL, 0);	/* i again */
					}
				} else if ((op->access & CS_AC_WRITE) && !read_only(i->id) &&
					   (uint64_t)dd <= g->field &&
					   (g->field < (uint64_t)dd + op->size || !op->size)) {
					if (!op->size)
						return refuse(g, "The instruction at 0x%" PRIx64 " writes memory from +0x%x with a size the disassembler does not give: it may cover the byte",
							      cur, v);
					if (add_store(g, i, false, op))
						return refuse(g, "Out of memory");
					g->stores[g->nstores - 1].rmw = reads_mem(i, o);
				}
			}
		}
	}
	return 0;
}

/* ---- windows ---- */

static void scan_rel32(struct ctx *c)
{
	const struct lc_elf *e = c->e;
	struct lc_gate *g = c->g;
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t k = 0; k < g->nstores; ++k) {
		if (!c->w[k].ok)
			continue;
		lo = c->w[k].start < lo ? c->w[k].start : lo;
		hi = c->w[k].end > hi ? c->w[k].end : hi;
	}
	if (lo >= hi)
		return;
	/* Any jmp/jcc rel32 in the file landing inside a window is an entry. */
	for (int s = 0; s < e->nload; ++s) {
		const struct lc_seg *sg = &e->load[s];
		const uint8_t *b = e->map + sg->off;

		if (!(sg->flags & 1))
			continue;
		for (uint64_t p = 0; p + 6 <= sg->filesz; ++p) {
			int len;
			int32_t rel;

			if (b[p] == 0xe9)
				len = 5;
			else if (b[p] == 0x0f && (b[p + 1] & 0xf0) == 0x80)
				len = 6;
			else
				continue;
			memcpy(&rel, b + p + len - 4, 4);
			uint64_t src = sg->vaddr + p, dst = src + len + (int64_t)rel;

			if (dst <= lo || dst >= hi)
				continue;
			for (size_t k = 0; k < g->nstores; ++k)
				if (c->w[k].ok && dst > c->w[k].start && dst < c->w[k].end &&
				    (src < c->w[k].start || src >= c->w[k].end))
					add_branch(c, src, dst);
		}
	}
}

static bool reg_in(cs_regs regs, uint8_t n, unsigned int fam, unsigned int (*family)(unsigned int))
{
	for (int i = 0; i < n; ++i)
		if (family(regs[i]) == fam)
			return true;
	return false;
}

/* The 64-bit register a (sub)register belongs to; 0 for non-GPRs. */
static unsigned int family(unsigned int r)
{
	static const unsigned int map[][5] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 0 },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 0 },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 0 },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 0 },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0 },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0 },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0 },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0 },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 0 },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 0 },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 0 },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 0 },
	};

	if (!r)
		return 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i)
		for (int j = 0; j < 5; ++j)
			if (map[i][j] == r)
				return map[i][0];
	return 0;
}

/* An or/and with an immediate into a register: a rewrite candidate. */
static bool is_cand(const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;

	return (i->id == X86_INS_OR || i->id == X86_INS_AND) && x->op_count == 2 &&
	       x->operands[0].type == X86_OP_REG && x->operands[1].type == X86_OP_IMM &&
	       (x->opcode[0] == 0x80 || x->opcode[0] == 0x81 || x->opcode[0] == 0x83) &&
	       (x->modrm & 0xc0) == 0xc0 && x->encoding.imm_offset;
}

/* A store to memory with an immediate: or/and/mov (80 81 83 c6 c7) or bts/btr (0f ba). */
static bool is_store_cand(const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;
	uint8_t op = x->opcode[0];

	if (x->op_count != 2 || x->operands[0].type != X86_OP_MEM || x->operands[1].type != X86_OP_IMM ||
	    !x->encoding.imm_offset || (x->modrm & 0xc0) == 0xc0)
		return false;
	switch (i->id) {
	case X86_INS_OR: case X86_INS_AND:
		return op == 0x80 || op == 0x81 || op == 0x83;
	case X86_INS_MOV:
		return op == 0xc6 || op == 0xc7;
	case X86_INS_BTS: case X86_INS_BTR:
		return op == 0x0f && x->opcode[1] == 0xba;
	}
	return false;
}

/*
 * Every branch target inside a function: direct jumps anywhere in it, and
 * the entries of the jump tables it dispatches through. Indirect jumps that
 * are not recognisable tables are counted (tail calls mostly).
 */
static int function_branches(struct ctx *c, uint64_t fs, uint64_t *bad)
{
	uint64_t fe = lc_elf_func_end(c->e, fs), a = fs;
	struct dinsn ring[64], lin[40];
	long n = 0;
	int unresolved = 0;
	size_t first = c->nbr;
	uint8_t *starts;

	*bad = 0;
	if (fe <= fs || fe - fs > (16u << 20))
		fe = fs + (16u << 20);
	starts = calloc((fe - fs + 7) / 8, 1);
	while (a < fe && decode(c, a, NULL, 0)) {
		struct dinsn *x = &ring[n % 64];
		uint64_t t;

		if (starts)
			starts[(a - fs) / 8] |= 1 << ((a - fs) % 8);
		x->addr = a;
		x->id = c->insn->id;
		x->x = c->insn->detail->x86;
		t = 0;
		if (is_jcc(x->id) || x->id == X86_INS_JMP)
			t = direct_target(c->insn);
		if (t) {
			add_branch(c, a, t);
		} else if (x->id == X86_INS_JMP) {
			struct jtab jt;
			int m = n < 39 ? (int)n : 39;

			for (int i = 0; i <= m; ++i)
				lin[i] = ring[(n - m + i) % 64];
			if (match_jtab(lin, m, &jt)) {
				for (int i = 0; i <= jt.max; ++i) {
					uint64_t tgt;

					jt.bias = 0;
					if (jtab_entry(c, &jt, i, &tgt))
						add_branch(c, a, tgt);
				}
			} else if (x->x.op_count == 1 && x->x.operands[0].type == X86_OP_REG) {
				/* jmp *mem is a tail call through a slot; jmp *reg could go anywhere */
				unresolved++;
			}
		}
		a += c->insn->size;
		n++;
	}
	/* The linear decode must agree with every branch into the function. */
	for (size_t b = first; starts && b < c->nbr && !*bad; ++b) {
		uint64_t t = c->br[b][1];

		if (t >= fs && t < a && !(starts[(t - fs) / 8] & (1 << ((t - fs) % 8))))
			*bad = t;
	}
	free(starts);
	return unresolved;
}

/*
 * Decodes each function holding stores from its start (unwind info),
 * keeping the last instructions before each store.
 */
#define RING 64

static void build_windows(struct ctx *c)
{
	struct lc_gate *g = c->g;
	const struct lc_elf *e = c->e;
	struct dinsn ring[RING];
	uint64_t cur_fs = 0, a = 0, scanned_fs = 0, bad = 0;
	long n = 0;
	int unresolved = 0;

	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];
		struct win *w = &c->w[k];
		uint64_t fs = lc_elf_func_start(e, s->addr), t;
		long si = -1, st;

		w->ok = false;
		if (s->addr_taken) {
			snprintf(w->why, sizeof(w->why), "the address of the byte is taken (lea); its uses cannot be followed");
			continue;
		}
		if (!fs || s->addr - fs > (8u << 20)) {
			snprintf(w->why, sizeof(w->why), "no unwind information to anchor the disassembly");
			continue;
		}
		if (fs != scanned_fs) {
			unresolved = function_branches(c, fs, &bad);
			scanned_fs = fs;
		}
		if (bad) {
			snprintf(w->why, sizeof(w->why),
				 "a branch in its function lands at 0x%" PRIx64 ", inside an instruction of the linear disassembly: the code is out of step",
				 bad);
			continue;
		}
		if (unresolved) {
			snprintf(w->why, sizeof(w->why),
				 "its function has %d register-indirect jump(s) that are not jump tables, so entries into the code before the store cannot be bounded",
				 unresolved);
			continue;
		}
		if (fs != cur_fs || a > s->addr) {
			cur_fs = a = fs;
			n = 0;
		}
		while (a <= s->addr && decode(c, a, NULL, 0)) {
			struct dinsn *x = &ring[n % RING];

			(void)t;
			x->addr = a;
			x->id = c->insn->id;
			if (a == s->addr)
				si = n;
			a += c->insn->size;
			n++;
		}
		if (si < 0) {
			snprintf(w->why, sizeof(w->why), "the disassembly from the function start does not reach the store");
			continue;
		}
		st = si;
		while (st > 0 && si - st < MAX_WIN_INSNS - 1) {
			cs_insn fake;

			fake.id = ring[(st - 1) % RING].id;
			if (is_barrier(&fake))
				break;
			st--;
		}
		w->start = ring[st % RING].addr;
		w->end = s->addr + s->len;
		w->ok = true;
	}
}

/* Moves window starts past every entry from outside; fills the emu window. */
static void finish_window(struct ctx *c, size_t k)
{
	struct lc_store *s = &c->g->stores[k];
	struct win *w = &c->w[k];
	bool moved = true;
	const cs_x86_op *mop = NULL;

	while (moved) {
		moved = false;
		for (size_t b = 0; b < c->nbr; ++b) {
			uint64_t src = c->br[b][0], dst = c->br[b][1];

			if (dst > w->start && dst < w->end && (src < w->start || src >= w->end)) {
				w->start = dst;
				moved = true;
			}
		}
	}
	/* Walk the window: branches must go forward; collect candidates. */
	uint64_t a = w->start;
	int n = 0;

	w->ew.njcc = 0;
	w->ncand = 0;
	w->ew.base_stable = true;
	while (a < w->end && decode(c, a, NULL, 0)) {
		const cs_insn *i = c->insn;
		const cs_x86 *x = &i->detail->x86;

		if (a == s->addr) {
			for (int o = 0; o < x->op_count; ++o)
				if (x->operands[o].type == X86_OP_MEM && (x->operands[o].access & CS_AC_WRITE))
					mop = &x->operands[o];
			if (!mop) {
				w->ok = false;
				snprintf(w->why, sizeof(w->why), "the store operand was not found");
				return;
			}
			w->ew.base_reg = lc_emu_reg(mop->mem.base);
			w->ew.index_reg = mop->mem.index ? lc_emu_reg(mop->mem.index) : 0;
			w->ew.scale = mop->mem.scale;
			w->ew.disp = mop->mem.disp;
			if ((mop->mem.base && !w->ew.base_reg) || (mop->mem.index && !w->ew.index_reg)) {
				w->ok = false;
				snprintf(w->why, sizeof(w->why), "the store addresses the byte through a non-64-bit register");
				return;
			}
			break;
		}
		if (is_jcc(i->id)) {
			uint64_t t = direct_target(i);

			if (!t || (t <= a && t >= w->start)) {
				w->ok = false;
				snprintf(w->why, sizeof(w->why), "a loop or indirect branch at 0x%" PRIx64 " precedes the store", a);
				return;
			}
			if (w->ew.njcc == LC_EMU_MAX_JCC) {
				w->ok = false;
				snprintf(w->why, sizeof(w->why), "more than %d branches precede the store", LC_EMU_MAX_JCC);
				return;
			}
			w->ew.jcc[w->ew.njcc] = a;
			w->ew.jcc_target[w->ew.njcc++] = t;
		}
		if (is_cand(i) && w->ncand < MAX_WIN_INSNS)
			w->cand[w->ncand++] = a;
		a += i->size;
		n++;
	}
	if (a != s->addr || !mop) {
		w->ok = false;
		snprintf(w->why, sizeof(w->why), "the window disassembly does not reach the store");
		return;
	}
	/* Does anything in the window overwrite the base or index register? */
	unsigned int bf = family(c->insn->detail->x86.operands[0].type == X86_OP_MEM ?
				 c->insn->detail->x86.operands[0].mem.base : 0);
	unsigned int base_fam = 0, idx_fam = 0;

	for (int o = 0; o < c->insn->detail->x86.op_count; ++o)
		if (c->insn->detail->x86.operands[o].type == X86_OP_MEM &&
		    (c->insn->detail->x86.operands[o].access & CS_AC_WRITE)) {
			base_fam = family(c->insn->detail->x86.operands[o].mem.base);
			idx_fam = family(c->insn->detail->x86.operands[o].mem.index);
		}
	(void)bf;
	a = w->start;
	while (a < s->addr && decode(c, a, NULL, 0)) {
		cs_regs rr, ww;
		uint8_t nr, nw;

		if (!cs_regs_access(c->cs, c->insn, rr, &nr, ww, &nw) &&
		    ((base_fam && reg_in(ww, nw, base_fam, family)) || (idx_fam && reg_in(ww, nw, idx_fam, family))))
			w->ew.base_stable = false;
		a += c->insn->size;
	}
	w->ew.start = w->start;
	w->ew.store = s->addr;
	w->ew.end = w->end;
	w->ew.field = c->g->field - w->ew.disp + w->ew.disp;	/* byte = base + index*scale + field */
	w->ew.wlo = s->lo;
	w->ew.wlen = s->width;
	/* the store itself, when it carries the immediate, is the last candidate */
	if (decode(c, s->addr, NULL, 0) && is_store_cand(c->insn) && w->ncand < MAX_WIN_INSNS) {
		s->imm_form = true;
		w->cand[w->ncand++] = s->addr;
	}
	s->win_start = w->start;
	(void)n;
}

/* ---- emulation over an image with a set of rewrites ---- */

static int emulate(struct ctx *c, size_t k, const struct lc_rewrite *plan, size_t nplan,
		   const struct lc_rewrite *extra, struct lc_emu_out *out, char *err, size_t errlen)
{
	struct win *w = &c->w[k];
	struct lc_emu_win ew = w->ew;
	size_t len = w->end - w->start;
	uint8_t *buf;
	const uint8_t *src = lc_elf_ptr(c->e, w->start, len);
	int r;

	if (!src) {
		snprintf(err, errlen, "window outside the file");
		return -EINVAL;
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, src, len);
	for (size_t i = 0; i <= nplan; ++i) {
		const struct lc_rewrite *rw = i < nplan ? &plan[i] : extra;

		if (rw && rw->vaddr >= w->start && rw->vaddr + rw->len <= w->end)
			memcpy(buf + (rw->vaddr - w->start), rw->new, rw->len);
	}
	ew.code = buf;
	ew.code_base = w->start;
	ew.code_len = len;
	r = lc_emu_run(c->emu, &ew, out, err, errlen);
	free(buf);
	return r;
}

static enum lc_effect classify(const struct lc_emu_out *o, uint8_t m)
{
	bool all_set = true, all_clear = true, all_keep = true, any = false;

	for (size_t i = 0; i < o->n; ++i) {
		if (!o->reached[i])
			continue;
		any = true;
		all_set &= !!(o->q[i] & m);
		all_clear &= !(o->q[i] & m);
		all_keep &= (o->q[i] & m) == (o->p[i] & m);
	}
	if (!any)
		return LC_UNKNOWN;
	if (all_set)
		return LC_SETS;
	if (all_keep)
		return LC_PRESERVES;
	if (all_clear)
		return LC_CLEARS;
	return LC_COMPUTED;
}

/* ---- rewrites ---- */

static int64_t sext(uint64_t v, int bytes)
{
	int sh = 64 - 8 * bytes;

	return bytes >= 8 ? (int64_t)v : (int64_t)(v << sh) >> sh;
}

/*
 * The store itself carries the immediate: or/and/mov gain the mask bit in
 * the byte's position (so or sets it, and keeps it, mov writes it), btr of
 * the bit becomes bts. Only when the new immediate has the same encoding
 * length (an 8-bit immediate is sign-extended to the operand width).
 */
static bool store_rewrite(struct ctx *c, const cs_insn *i, uint8_t m, struct lc_rewrite *rw)
{
	const cs_x86 *x = &i->detail->x86;
	const cs_x86_op *mo = &x->operands[0];
	int w = mo->size, k = (int)((int64_t)c->g->field - mo->mem.disp);
	int io = x->encoding.imm_offset, isz = x->encoding.imm_size;
	uint64_t wmask = w >= 8 ? ~0ULL : (1ULL << (8 * w)) - 1;
	uint64_t bit = (uint64_t)m << (8 * k), v, nv, enc;

	if (k < 0 || k >= w || w > 8 || !isz || isz > 4 || io + isz > rw->len)
		return false;
	if (i->id == X86_INS_BTS || i->id == X86_INS_BTR) {
		int b = (int)((uint64_t)x->operands[1].imm & (8u * w - 1));

		if (i->id == X86_INS_BTS || b != 8 * k + __builtin_ctz(m) || !x->encoding.modrm_offset)
			return false;
		/* 0f ba /6 (btr) -> 0f ba /5 (bts) */
		rw->new[x->encoding.modrm_offset] = (rw->new[x->encoding.modrm_offset] & ~0x38) | (5 << 3);
		return true;
	}
	v = (uint64_t)x->operands[1].imm & wmask;
	if (v & bit)
		return false;	/* already sets (or), keeps (and) or writes (mov) the bit */
	nv = (v | bit) & wmask;
	enc = isz >= 8 ? nv : nv & ((1ULL << (8 * isz)) - 1);
	if (((uint64_t)sext(enc, isz) & wmask) != nv)
		return false;	/* not expressible in an immediate of the same size */
	for (int b = 0; b < isz; ++b)
		rw->new[io + b] = (uint8_t)(enc >> (8 * b));
	return true;
}

static bool make_rewrite(struct ctx *c, uint64_t a, uint8_t m, bool want_or, struct lc_rewrite *rw)
{
	const uint8_t *p;
	const cs_x86 *x;
	int64_t imm;
	bool store;

	if (!decode(c, a, NULL, 0))
		return false;
	store = is_store_cand(c->insn);
	if (!store && !is_cand(c->insn))
		return false;
	if (store && !want_or)
		return false;	/* one attempt per store */
	x = &c->insn->detail->x86;
	imm = x->operands[1].imm;
	memset(rw, 0, sizeof(*rw));
	rw->vaddr = a;
	rw->len = c->insn->size;
	rw->off = lc_elf_off(c->e, a);
	p = lc_elf_ptr(c->e, a, rw->len);
	if (!p || rw->off < 0)
		return false;
	memcpy(rw->old, p, rw->len);
	memcpy(rw->new, p, rw->len);
	fmt_insn(c->insn, rw->from, sizeof(rw->from));
	int io = x->encoding.imm_offset, mo = io - 1;

	if (store) {
		if (!store_rewrite(c, c->insn, m, rw))
			return false;
	} else if (c->insn->id == X86_INS_OR) {
		if (!want_or || (imm & m))
			return false;
		rw->new[io] |= m;	/* the immediate gains the mask */
	} else {
		/* clear-then-or: and $~mask becomes or $mask */
		uint64_t width = x->operands[0].size >= 8 ? ~0ULL : (1ULL << (8 * x->operands[0].size)) - 1;

		if (want_or || ((uint64_t)imm & width) != (~(uint64_t)m & width))
			return false;
		if (x->opcode[0] == 0x83 && (m & 0x80))
			return false;
		rw->new[mo] = (rw->new[mo] & ~0x38) | (1 << 3);
		memset(rw->new + io, 0, rw->len - io);
		rw->new[io] = m;
	}
	/* Describe the new instruction. */
	const uint8_t *q = rw->new;
	size_t ql = rw->len;
	uint64_t qa = a;

	if (cs_disasm_iter(c->cs, &q, &ql, &qa, c->insn))
		fmt_insn(c->insn, rw->to, sizeof(rw->to));
	return true;
}

static bool is_store_addr(struct ctx *c, uint64_t a)
{
	for (size_t k = 0; k < c->g->nstores; ++k)
		if (c->g->stores[k].addr == a)
			return true;
	return false;
}

/*
 * After a rewrite the register it writes differs in the mask bit and the
 * flags may differ. Follow every path until both are dead; the only reads
 * allowed are copies into other registers (tracked the same way) and the
 * stores to the capability byte (their effect is what emulation proved).
 */
struct taint_state {
	uint64_t addr;
	uint32_t regs;	/* bit per register family index */
	bool flags;
};

static int fam_index(unsigned int f)
{
	static const unsigned int order[] = { X86_REG_RAX, X86_REG_RBX, X86_REG_RCX, X86_REG_RDX,
		X86_REG_RSI, X86_REG_RDI, X86_REG_RBP, X86_REG_RSP, X86_REG_R8, X86_REG_R9,
		X86_REG_R10, X86_REG_R11, X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15 };

	for (int i = 0; i < 16; ++i)
		if (order[i] == f)
			return i;
	return -1;
}

#define ARGS ((1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 8) | (1u << 9))	/* rcx rdx rsi rdi r8 r9 */
#define CALLER_SAVED (ARGS | 1u | (1u << 10) | (1u << 11))
/*
 * Only rax is taken as a return value: rdx carries one only for 128-bit or
 * two-word struct returns, which the device setup routines do not use.
 */
#define RETVAL (1u << 0)

static bool taint_ok(struct ctx *c, const struct lc_rewrite *rw, char *why, size_t wlen)
{
	struct taint_state stack[64];
	int sp = 0, steps = 0;
	struct taint_state seen[512];
	int nseen = 0;
	int f;

	if (!decode(c, rw->vaddr, rw->new, rw->len))
		return false;
	if (c->insn->detail->x86.operands[0].type == X86_OP_MEM) {
		/* a store rewritten in place changes no register, only flags */
		stack[sp++] = (struct taint_state){ rw->vaddr + rw->len, 0, true };
	} else {
		f = fam_index(family(c->insn->detail->x86.operands[0].reg));
		if (f < 0) {
			snprintf(why, wlen, "unsupported register");
			return false;
		}
		stack[sp++] = (struct taint_state){ rw->vaddr + rw->len, 1u << f, true };
	}
	while (sp) {
		struct taint_state t = stack[--sp];

		while (t.regs || t.flags) {
			bool dup = false;

			if (++steps > 2048) {
				snprintf(why, wlen, "the changed value could not be followed to its end");
				return false;
			}
			for (int i = 0; i < nseen; ++i)
				dup |= seen[i].addr == t.addr && (seen[i].regs | t.regs) == seen[i].regs &&
				       (seen[i].flags || !t.flags);
			if (dup)
				break;
			if (nseen < 512)
				seen[nseen++] = t;
			if (!decode(c, t.addr, NULL, 0)) {
				snprintf(why, wlen, "undecodable code at 0x%" PRIx64, t.addr);
				return false;
			}
			const cs_insn *i = c->insn;
			const cs_x86 *x = &i->detail->x86;
			cs_regs rr, ww;
			uint8_t nr, nw;
			uint32_t rd = 0, wr = 0;
			bool freads = x->eflags & (X86_EFLAGS_TEST_OF | X86_EFLAGS_TEST_SF | X86_EFLAGS_TEST_ZF |
						   X86_EFLAGS_TEST_PF | X86_EFLAGS_TEST_CF | X86_EFLAGS_TEST_AF);
			uint64_t fw = X86_EFLAGS_MODIFY_ZF | X86_EFLAGS_RESET_ZF | X86_EFLAGS_SET_ZF;
			bool fwrites = (x->eflags & fw) && !freads;
			uint64_t next = t.addr + i->size, tgt = direct_target(i);
			bool mem_op = false;

			if (i->id == X86_INS_NOP) {
				t.addr = next;
				continue;
			}

			if (cs_regs_access(c->cs, i, rr, &nr, ww, &nw)) {
				snprintf(why, wlen, "no register information at 0x%" PRIx64, t.addr);
				return false;
			}
			for (int k = 0; k < nr; ++k) {
				f = fam_index(family(rr[k]));
				if (f >= 0)
					rd |= 1u << f;
			}
			for (int k = 0; k < nw; ++k) {
				f = fam_index(family(ww[k]));
				if (f >= 0)
					wr |= 1u << f;
			}
			for (int k = 0; k < x->op_count; ++k)
				mem_op |= x->operands[k].type == X86_OP_MEM && i->id != X86_INS_LEA;
			/* xor %eax,%eax reads nothing: it is how a register is zeroed */
			if ((i->id == X86_INS_XOR || i->id == X86_INS_SUB) && x->op_count == 2 &&
			    x->operands[0].type == X86_OP_REG && x->operands[1].type == X86_OP_REG &&
			    x->operands[0].reg == x->operands[1].reg)
				rd = 0;

			if (t.flags && freads) {
				snprintf(why, wlen, "changed flags are read at 0x%" PRIx64 " (%s)", t.addr, i->mnemonic);
				return false;
			}
			if (i->id == X86_INS_RET) {
				if (t.regs & (RETVAL | 0xf042u /* rbx rbp r12-r15 */)) {
					snprintf(why, wlen, "a changed register is live at the return at 0x%" PRIx64, t.addr);
					return false;
				}
				break;
			}
			if (i->id == X86_INS_CALL) {
				if (t.regs & ARGS) {
					snprintf(why, wlen, "a changed register is passed to the call at 0x%" PRIx64, t.addr);
					return false;
				}
				t.regs &= ~CALLER_SAVED;
				t.flags = false;
				t.addr = next;
				continue;
			}
			if (rd & t.regs) {
				bool ok_store = is_store_addr(c, t.addr);
				bool reg_only = !mem_op && x->op_count >= 1 && x->operands[0].type == X86_OP_REG;

				if (!ok_store && !reg_only) {
					snprintf(why, wlen, "the changed register is used at 0x%" PRIx64 " (%s %s)", t.addr,
						 i->mnemonic, i->op_str);
					return false;
				}
				if (reg_only) {
					t.regs |= wr;
					if (x->eflags & fw)
						t.flags = true;
				}
			} else {
				/* A full-width write that reads nothing tainted kills the taint. */
				for (int k = 0; k < nw; ++k) {
					f = fam_index(family(ww[k]));
					if (f >= 0 && (ww[k] == family(ww[k]) ||
						       (ww[k] >= X86_REG_EAX && ww[k] <= X86_REG_ESP) ||
						       (ww[k] >= X86_REG_R8D && ww[k] <= X86_REG_R15D)))
						t.regs &= ~(1u << f);
				}
				if (fwrites)
					t.flags = false;
			}
			if (i->id == X86_INS_JMP) {
				if (!tgt) {
					snprintf(why, wlen, "an indirect jump at 0x%" PRIx64 " with a live changed value", t.addr);
					return false;
				}
				t.addr = tgt;
				continue;
			}
			if (is_jcc(i->id)) {
				if (!tgt || sp == 64) {
					snprintf(why, wlen, "too many paths to follow");
					return false;
				}
				stack[sp++] = (struct taint_state){ tgt, t.regs, t.flags };
			}
			if (i->id == X86_INS_UD2 || i->id == X86_INS_HLT || i->id == X86_INS_INT3)
				break;
			t.addr = next;
		}
	}
	return true;
}

/*
 * Tries a rewrite for store k on top of the plan: the stored byte differs
 * from before only in the mask bit, which it sets (must_set: initialisers)
 * or at least never clears, and nothing else the store writes moves.
 */
static bool try_rewrite(struct ctx *c, size_t k, const struct lc_rewrite *rw, bool must_set, char *why,
			size_t wlen)
{
	struct lc_emu_out o;
	const struct lc_emu_out *base = &c->w[k].orig;
	uint8_t m = c->g->mask;
	bool ok = true, any = false;

	if (emulate(c, k, c->g->plan, c->g->nplan, rw, &o, why, wlen))
		return false;
	for (size_t i = 0; i < o.n && ok; ++i) {
		if (o.reached[i] != base->reached[i]) {
			ok = false;
			snprintf(why, wlen, "the rewrite changes which paths reach the store");
		} else if (o.reached[i]) {
			any = true;
			bool bit_ok = (o.q[i] & m) || (!must_set && !(o.p[i] & m));

			if (!bit_ok || (o.q[i] & ~m) != (base->q[i] & ~m)) {
				ok = false;
				snprintf(why, wlen, "with %s the store writes 0x%02x where 0x%02x was written (start 0x%02x)",
					 rw->to, o.q[i], base->q[i], o.v[i]);
			}
			/* a wider store: every other byte it writes must be as before */
			for (int b = 0; ok && b < o.wlen; ++b) {
				if (b == -o.wlo)
					continue;
				if (o.qw[i * o.wlen + b] != base->qw[i * o.wlen + b]) {
					ok = false;
					snprintf(why, wlen, "with %s the store changes byte %+d of the field too", rw->to,
						 b + o.wlo);
				}
			}
		}
	}
	lc_emu_free(&o);
	if (ok && !any) {
		snprintf(why, wlen, "no path reaches the store");
		ok = false;
	}
	return ok && taint_ok(c, rw, why, wlen);
}

static int add_plan(struct lc_gate *g, const struct lc_rewrite *rw)
{
	void *p;

	for (size_t i = 0; i < g->nplan; ++i)
		if (g->plan[i].vaddr == rw->vaddr)
			return 0;
	p = realloc(g->plan, (g->nplan + 1) * sizeof(*g->plan));
	if (!p)
		return -ENOMEM;
	g->plan = p;
	g->plan[g->nplan++] = *rw;
	return 1;
}

/*
 * The store is the first thing its routine does: no branch, call or return
 * between the routine's start (unwind information) and the store, and no
 * branch into that stretch, so every call of the routine runs it.
 */
static bool entry_store(struct ctx *c, const struct lc_store *s)
{
	uint64_t fs = lc_elf_func_start(c->e, s->addr), a = fs;

	if (!fs || s->addr - fs > 256)
		return false;
	while (a < s->addr && decode(c, a, NULL, 0)) {
		if (is_jcc(c->insn->id) || is_barrier(c->insn))
			return false;
		a += c->insn->size;
	}
	if (a != s->addr)
		return false;
	for (size_t b = 0; b < c->nbr; ++b)
		if (c->br[b][1] > fs && c->br[b][1] <= s->addr)
			return false;
	return true;
}

/* The byte's stores inside the routine that starts at fs, with their effect now. */
static struct lc_path_store *routine_stores(struct lc_gate *g, uint64_t fs, uint64_t fe, bool use_orig, size_t *n)
{
	struct lc_path_store *st = calloc(g->nstores ? g->nstores : 1, sizeof(*st));

	*n = 0;
	for (size_t k = 0; st && k < g->nstores; ++k)
		if (g->stores[k].addr >= fs && g->stores[k].addr < fe) {
			st[*n].addr = g->stores[k].addr;
			st[(*n)++].now = use_orig ? g->stores[k].orig : g->stores[k].now;
		}
	return st;
}

/*
 * An initialiser counts only when it runs: its routine is called or its
 * address is stored (into a device function table), and some path from the
 * routine's entry reaches the store. A routine that returns, jumps away or
 * traps first, or that nothing references, is dropped with its rewrites
 * (patching dead code would prove nothing). -1 only when out of memory.
 */
static int qualify_inits(struct ctx *c)
{
	struct lc_gate *g = c->g;

	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];
		uint64_t fs, fe;
		struct lc_path_store *st;
		bool *reached;
		size_t n, np, j;
		char why[256] = "", how[128] = "";

		if (!s->init)
			continue;
		fs = lc_elf_func_start(c->e, s->addr);
		fe = fs ? lc_elf_func_end(c->e, fs) : 0;
		if (!fs)
			snprintf(why, sizeof(why), "no unwind information gives its routine's entry");
		else if (lc_paths_referenced(c->e, fs, how, sizeof(how)))
			snprintf(why, sizeof(why), "%s", how);
		if (!why[0]) {
			st = routine_stores(g, fs, fe, true, &n);
			reached = calloc(n ? n : 1, sizeof(*reached));
			if (!st || !reached) {
				free(st);
				free(reached);
				return -1;
			}
			lc_paths_prove(c->e, fs, st, n, false, reached, &np, why, sizeof(why));
			for (j = 0; j < n && st[j].addr != s->addr; ++j)
				;
			if (j < n && reached[j])
				why[0] = 0;
			else if (!why[0])
				snprintf(why, sizeof(why), "no path from the routine's entry 0x%" PRIx64 " reaches it", fs);
			free(st);
			free(reached);
		}
		if (!why[0]) {
			snprintf(s->note, sizeof(s->note), "routine 0x%" PRIx64 " %s", fs, how);
			continue;
		}
		snprintf(s->note, sizeof(s->note), "not an initialiser: %s", why);
		if (nvs_env_libcuda_debug())
			fprintf(stderr, "init 0x%" PRIx64 ": %s\n", s->addr, s->note);
		s->init = s->init_or = false;
		if (s->has_mask_or)
			g->already_set--;
		s->has_mask_or = false;
		g->ninit--;
		for (size_t i = 0; i < g->nplan;)
			if (g->plan[i].store == s->addr)
				g->plan[i] = g->plan[--g->nplan];
			else
				++i;
	}
	return 0;
}

/*
 * After the plan: every path from each initialiser routine's entry to an
 * exit stores the byte with the bit set, and no later store on it clears
 * it. Emulation showed each store's effect; this shows that the stores
 * that set the bit are on every path.
 */
static int prove_inits(struct ctx *c)
{
	struct lc_gate *g = c->g;
	uint64_t done[16];
	size_t ndone = 0;

	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];
		uint64_t fs = lc_elf_func_start(c->e, s->addr), fe;
		struct lc_path_store *st;
		bool *reached, seen = false;
		size_t n, np;
		char why[256] = "";
		int r;

		if (!s->init)
			continue;
		for (size_t i = 0; i < ndone; ++i)
			seen |= done[i] == fs;
		if (seen)
			continue;
		if (ndone == sizeof(done) / sizeof(done[0]))
			return refuse(g, "More than %zu initialiser routines: not proven", ndone);
		done[ndone++] = fs;
		fe = lc_elf_func_end(c->e, fs);
		st = routine_stores(g, fs, fe, false, &n);
		reached = calloc(n ? n : 1, sizeof(*reached));
		if (!st || !reached) {
			free(st);
			free(reached);
			return refuse(g, "Out of memory");
		}
		r = lc_paths_prove(c->e, fs, st, n, true, reached, &np, why, sizeof(why));
		free(st);
		free(reached);
		if (r)
			return refuse(g, "The initialiser at 0x%" PRIx64 " (%s) is not proven to set bit 0x%02x on every path of its routine 0x%" PRIx64 ": %s",
				      s->addr, s->text, g->mask, fs, why);
		snprintf(s->note + strlen(s->note), sizeof(s->note) - strlen(s->note), "; %zu path(s), each sets the bit",
			 np);
	}
	return 0;
}

static int plan(struct ctx *c)
{
	struct lc_gate *g = c->g;
	char why[256], err[256];
	uint8_t m = g->mask;

	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];

		s->orig = s->now = LC_UNKNOWN;
		if (!c->w[k].ok) {
			snprintf(s->note, sizeof(s->note), "%s", c->w[k].why);
			continue;
		}
		err[0] = 0;
		if (emulate(c, k, NULL, 0, NULL, &c->w[k].orig, err, sizeof(err))) {
			snprintf(s->note, sizeof(s->note), "emulation failed: %.120s", err);
			c->w[k].ok = false;
			continue;
		}
		s->orig = classify(&c->w[k].orig, m);
	}
	/*
	 * Initialisers: stores that OR constant bits into the byte when the
	 * device is set up. Two shapes are recognised: the value built in a
	 * register by an or-immediate and stored (535: movzbl, or $0x40, mov
	 * %dl), and an or-immediate (or bts) straight to memory that is the
	 * first thing its routine does (525: orb $0x40 at the routine's entry,
	 * before any branch or call). An or to memory further into a routine
	 * (the feature bits set by the device constructors, the datacenter
	 * path's conditional orb $0x20) is not an initialiser: nothing shows it
	 * runs when every device is set up. The immediate gains the mask bit
	 * when that is proven.
	 */
	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];
		struct win *w = &c->w[k];

		if (!w->ok || s->orig == LC_UNKNOWN)
			continue;
		if (s->rmw) {
			struct lc_rewrite rw;

			if (!s->imm_form || !entry_store(c, s) || !decode(c, s->addr, NULL, 0) ||
			    (c->insn->id != X86_INS_OR && c->insn->id != X86_INS_BTS))
				continue;
			s->entry = true;
			if (s->orig == LC_SETS) {
				/* already includes the bit: patched before, or open by design */
				s->has_mask_or = true;
				s->or_imm = (uint8_t)(c->insn->detail->x86.operands[1].imm >> (8 * -s->lo));
				g->already_set++;
			} else if (make_rewrite(c, s->addr, m, true, &rw)) {
				rw.store = s->addr;
				if (try_rewrite(c, k, &rw, true, why, sizeof(why))) {
					s->init_or = true;
					s->or_imm = (uint8_t)(c->insn->detail->x86.operands[1].imm >> (8 * -s->lo));
					if (add_plan(g, &rw) < 0)
						return refuse(g, "Out of memory");
				} else if (nvs_env_libcuda_debug()) {
					fprintf(stderr, "init 0x%" PRIx64 ": %s\n", s->addr, why);
				}
			}
		} else {
			for (int j = w->ncand - 1; j >= 0; --j) {
				struct lc_rewrite rw;

				if (w->cand[j] == s->addr || !decode(c, w->cand[j], NULL, 0) ||
				    c->insn->id != X86_INS_OR)
					continue;
				uint8_t imm = (uint8_t)c->insn->detail->x86.operands[1].imm;

				if (imm & m) {
					/* Already includes the bit: patched before, or open by design. */
					if (s->orig == LC_SETS && !s->has_mask_or) {
						s->has_mask_or = true;
						s->or_imm = imm;
						g->already_set++;
					}
					continue;
				}
				if (!make_rewrite(c, w->cand[j], m, true, &rw))
					continue;
				rw.store = s->addr;
				if (!try_rewrite(c, k, &rw, true, why, sizeof(why))) {
					if (nvs_env_libcuda_debug())
						fprintf(stderr, "init 0x%" PRIx64 " at 0x%" PRIx64 ": %s\n", s->addr, rw.vaddr, why);
				} else {
					s->init_or = true;
					s->or_imm = imm;
					if (add_plan(g, &rw) < 0)
						return refuse(g, "Out of memory");
					break;
				}
			}
		}
		if (s->init_or || s->has_mask_or) {
			s->init = true;
			g->ninit++;
		}
	}
	if (qualify_inits(c) < 0)
		return refuse(g, "Out of memory");
	if (!g->ninit) {
		char setters[160] = "";
		size_t l = 0;

		for (size_t k = 0; k < g->nstores && l < sizeof(setters) - 24; ++k)
			if (g->stores[k].orig == LC_COMPUTED || g->stores[k].orig == LC_SETS)
				l += snprintf(setters + l, sizeof(setters) - l, "%s0x%" PRIx64, l ? ", " : "",
					      g->stores[k].addr);
		if (!l)
			return refuse(g, "No initialiser of the capability byte was identified (a store that ORs constant bits into it, built in a register or at the start of a routine), and no store can set bit 0x%02x",
				      m);
		return refuse(g, "No initialiser of the capability byte was identified (a store that ORs constant bits into it, built in a register or at the start of a routine); the only stores that could set bit 0x%02x (%s) are not shown to run when a device is set up",
			      m, setters);
	}
	/* Fixpoint: every store must set or preserve the bit in the patched image. */
	for (size_t iter = 0; iter <= g->nstores; ++iter) {
		bool changed = false;

		for (size_t k = 0; k < g->nstores; ++k) {
			struct lc_store *s = &g->stores[k];
			struct win *w = &c->w[k];
			struct lc_emu_out o;

			if (!w->ok) {
				s->now = LC_UNKNOWN;
				return refuse(g, "Store at 0x%" PRIx64 " (%s) cannot be analysed: %s", s->addr, s->text,
					      w->why);
			}
			bool touched = false;

			for (size_t i = 0; i < g->nplan; ++i)
				touched |= g->plan[i].vaddr >= w->start && g->plan[i].vaddr < w->end;
			if (!touched) {
				s->now = s->orig;
				if (s->now == LC_SETS || s->now == LC_PRESERVES)
					continue;
				o = (struct lc_emu_out){ 0 };
			} else {
				if (emulate(c, k, g->plan, g->nplan, NULL, &o, err, sizeof(err)))
					return refuse(g, "Emulation of the store at 0x%" PRIx64 " failed: %s",
						      s->addr, err);
				s->now = classify(&o, m);
			}
			if (nvs_env_libcuda_debug() && strtoull(nvs_env_libcuda_debug(), NULL, 16) == s->addr)
				for (size_t i = 0; i < o.n; ++i)
					fprintf(stderr, "now %zu r=%d v=%02x p=%02x q=%02x | orig r=%d v=%02x p=%02x q=%02x\n", i,
						o.reached[i], o.v[i], o.p[i], o.q[i], w->orig.reached[i], w->orig.v[i],
						w->orig.p[i], w->orig.q[i]);
			lc_emu_free(&o);
			if (s->now == LC_SETS || s->now == LC_PRESERVES)
				continue;
			if (s->now == LC_UNKNOWN)
				return refuse(g, "No emulated path reaches the store at 0x%" PRIx64 " (%s): not proven",
					      s->addr, s->text);
			bool fixed = false;

			why[0] = 0;
			for (int j = w->ncand - 1; j >= 0 && !fixed; --j) {
				for (int want_or = 1; want_or >= 0 && !fixed; --want_or) {
					struct lc_rewrite rw;
					char w2[256];

					if (!make_rewrite(c, w->cand[j], m, want_or, &rw))
						continue;
					rw.store = s->addr;
					if (try_rewrite(c, k, &rw, s->init, w2, sizeof(w2))) {
						if (add_plan(g, &rw) < 0)
							return refuse(g, "Out of memory");
						fixed = changed = true;
					} else if (!why[0]) {
						snprintf(why, sizeof(why), "%s", w2);
					}
				}
			}
			if (!fixed)
				return refuse(g, "Store at 0x%" PRIx64 " (%s) %s the bit and no proven same-length rewrite fixes it%s%s",
					      s->addr, s->text, s->now == LC_CLEARS ? "clears" : "writes a computed value into",
					      why[0] ? ": " : "", why);
		}
		if (!changed)
			break;
	}
	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];
		size_t l = strlen(s->note);

		for (size_t i = 0; i < g->nplan; ++i)
			if (g->plan[i].store == s->addr)
				l += snprintf(s->note + l, l < sizeof(s->note) ? sizeof(s->note) - l : 0,
					      "%srewrite 0x%" PRIx64 ": %s -> %s", l ? "; " : "", g->plan[i].vaddr,
					      g->plan[i].from, g->plan[i].to);
		if (!l && s->has_mask_or)
			snprintf(s->note, sizeof(s->note), "or-immediate 0x%02x already includes the bit", s->or_imm);
		else if (!l && !s->rmw && s->orig == LC_PRESERVES)
			snprintf(s->note, sizeof(s->note), "built in a register from its own load; the bit is carried over");
		else if (!l && s->rmw && s->orig == LC_PRESERVES && s->now == LC_SETS)
			snprintf(s->note, sizeof(s->note), "keeps the bit; set by the rewritten store before it");
	}
	/* Every path through each initialiser now sets the bit. */
	for (size_t k = 0; k < g->nstores; ++k) {
		struct lc_store *s = &g->stores[k];

		if (s->init && s->now != LC_SETS)
			return refuse(g, "The initialiser at 0x%" PRIx64 " (%s) does not set bit 0x%02x on every path, even with the planned rewrites",
				      s->addr, s->text, m);
	}
	if (prove_inits(c))
		return -1;
	g->ok = true;
	return 0;
}

int lc_gate_analyse(const struct lc_elf *e, struct lc_gate *g)
{
	struct ctx c = { .e = e, .g = g };
	struct timespec t0, t1;
	int ret = -1;

	memset(g, 0, sizeof(*g));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &c.cs) != CS_ERR_OK)
		return refuse(g, "Unable to start the disassembler");
	cs_option(c.cs, CS_OPT_DETAIL, CS_OPT_ON);
	c.insn = cs_malloc(c.cs);
	if (!c.insn) {
		refuse(g, "Out of memory");
		goto out;
	}
	if (locate(&c) || scan_stores(&c))
		goto out;
	if (lc_bulk_scan(e, g->field, &g->bulk, &g->nbulk, g->reason, sizeof(g->reason))) {
		g->ok = false;
		goto out;
	}
	for (size_t k = 0; k < g->nbulk; ++k)
		if (g->bulk[k].dest == LC_DEST_DEVICE) {
			refuse(g, "%s at 0x%" PRIx64 " overwrites %" PRIu64 " bytes from %+" PRId64 " of the device structure (the code before it reaches the byte through %s): it rewrites bit 0x%02x and no same-length change can keep it",
			       g->bulk[k].what, g->bulk[k].addr, g->bulk[k].len, g->bulk[k].at, g->bulk[k].base, g->mask);
			goto out;
		}
	if (!g->nstores) {
		refuse(g, "No instruction stores to the capability byte +0x%x", g->field);
		goto out;
	}
	c.emu = lc_emu_new(g->reason, sizeof(g->reason));
	if (!c.emu)
		goto out;
	c.w = calloc(g->nstores, sizeof(*c.w));
	if (!c.w) {
		refuse(g, "Out of memory");
		goto out;
	}
	if (nvs_env_libcuda_timing()) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "located+scanned: %.3f s\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	build_windows(&c);
	scan_rel32(&c);
	if (nvs_env_libcuda_timing()) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "windows: %.3f s\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	for (size_t k = 0; k < g->nstores; ++k)
		if (c.w[k].ok)
			finish_window(&c, k);
	ret = plan(&c);
out:
	if (!g->ok) {
		/* a refusal offers no rewrites: a partial plan is never a plan */
		free(g->plan);
		g->plan = NULL;
		g->nplan = 0;
	}
	if (c.w)
		for (size_t k = 0; k < g->nstores; ++k)
			lc_emu_free(&c.w[k].orig);
	free(c.w);
	free(c.br);
	lc_emu_destroy(c.emu);
	if (c.insn)
		cs_free(c.insn, 1);
	cs_close(&c.cs);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	g->seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	return ret;
}

void lc_gate_free(struct lc_gate *g)
{
	free(g->bulk);
	free(g->stores);
	free(g->plan);
	memset(g, 0, sizeof(*g));
}
