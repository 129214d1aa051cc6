// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paths through an initialiser's routine (see paths.h). The routine is
 * decoded once from its unwind-table start to the next function start;
 * paths are then walked over that decode, so a branch into the middle of
 * an instruction (the decode out of step) is a refusal, not a guess.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcuda/paths.h"

/* Initialisers are short device-setup routines (a few hundred bytes). */
#define MAX_INSNS 4096

enum kind { K_PLAIN, K_RET, K_TRAP, K_JMP, K_JCC, K_OUT, K_INDIRECT };

struct pinsn {
	uint64_t addr;
	uint64_t target;	/* K_JMP/K_JCC: direct target */
	enum kind kind;
	int store;		/* index into st[], or -1 */
};

struct walk {
	struct pinsn *in;
	size_t n;
	uint8_t *onpath;
	long *stk;		/* instructions on the current path, in order */
	size_t sp;
	const struct lc_path_store *st;
	bool *reached;
	size_t paths, exits;
	size_t ends;		/* paths ended at an exit or a trap */
	bool fail;
	bool judge;		/* false: only which stores are reached */
	char *why;
	size_t len;
};

static long find(const struct walk *w, uint64_t a)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->in[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->in[lo].addr == a ? (long)lo : -1;
}

static void failf(struct walk *w, const char *fmt, uint64_t a, uint64_t b)
{
	if (!w->fail)
		snprintf(w->why, w->len, fmt, a, b);
	w->fail = true;
}

/*
 * One path from instruction i; set: the bit is set by a store on the path
 * so far (and not cleared since), last: the last store on it (0: none).
 */
static void walk(struct walk *w, long i, bool set, uint64_t last)
{
	size_t sp0 = w->sp;

	while (!w->fail) {
		struct pinsn *p;

		if (i < 0 || (size_t)i >= w->n) {
			failf(w, "a path runs past the routine's end at 0x%" PRIx64 "%.0" PRIx64, w->in[w->n - 1].addr, 0);
			break;
		}
		p = &w->in[i];
		if (w->onpath[i]) {
			failf(w, "a loop at 0x%" PRIx64 "%.0" PRIx64 ": its paths cannot be enumerated", p->addr, 0);
			break;
		}
		w->onpath[i] = 1;
		w->stk[w->sp++] = i;
		if (p->store >= 0) {
			w->reached[p->store] = true;
			switch (w->st[p->store].now) {
			case LC_SETS:
				set = true;
				break;
			case LC_PRESERVES:
				break;
			default:
				set = false;
			}
			last = p->addr;
		}
		if (p->kind == K_TRAP) {
			/* not a path that returns, but it counts toward the bound */
			if (++w->ends > LC_PATHS_MAX)
				failf(w, "more than %" PRIu64 " paths (last trap 0x%" PRIx64 "): not enumerated",
				      (uint64_t)LC_PATHS_MAX, p->addr);
			break;
		}
		if (p->kind == K_RET || p->kind == K_OUT) {
			w->exits++;
			if (++w->paths > LC_PATHS_MAX || ++w->ends > LC_PATHS_MAX)
				failf(w, "more than %" PRIu64 " paths (last exit 0x%" PRIx64 "): not enumerated",
				      (uint64_t)LC_PATHS_MAX, p->addr);
			else if (!w->judge)
				;
			else if (!set && !last)
				failf(w, "a path leaves the routine at 0x%" PRIx64 " without storing the byte%.0" PRIx64,
				      p->addr, 0);
			else if (!set)
				failf(w, "a path leaves the routine at 0x%" PRIx64 " with the bit not set by its last store (0x%" PRIx64 ")",
				      p->addr, last);
			break;
		}
		if (p->kind == K_JCC) {
			long t = find(w, p->target);

			if (t < 0) {
				failf(w, "a branch at 0x%" PRIx64 " lands at 0x%" PRIx64 ", not on an instruction of the routine's decode",
				      p->addr, p->target);
				break;
			}
			walk(w, t, set, last);
			++i;
			continue;
		}
		if (p->kind == K_JMP) {
			i = find(w, p->target);
			if (i < 0) {
				failf(w, "a jump at 0x%" PRIx64 " lands at 0x%" PRIx64 ", not on an instruction of the routine's decode",
				      p->addr, p->target);
				break;
			}
			continue;
		}
		++i;
	}
	/* the branch's other side may pass the same instructions */
	while (w->sp > sp0)
		w->onpath[w->stk[--w->sp]] = 0;
}

static enum kind kind_of(const cs_insn *i, uint64_t fs, uint64_t fe, uint64_t *target)
{
	const cs_x86 *x = &i->detail->x86;
	bool imm = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

	*target = imm ? (uint64_t)x->operands[0].imm : 0;
	switch (i->id) {
	case X86_INS_RET: case X86_INS_RETF:
		return K_RET;
	case X86_INS_UD2: case X86_INS_HLT: case X86_INS_INT3: case X86_INS_INT:
		return K_TRAP;
	case X86_INS_JMP:
		/* a direct jump inside the routine continues it; elsewhere it is a tail call */
		if (imm && *target >= fs && *target < fe)
			return K_JMP;
		if (!imm && x->op_count == 1 && x->operands[0].type == X86_OP_REG)
			return K_INDIRECT;	/* refused by the caller */
		return K_OUT;
	case X86_INS_LJMP:
		return K_OUT;
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return K_JCC;
	}
	if (((i->id >= X86_INS_JAE && i->id <= X86_INS_JS) || i->id == X86_INS_JCXZ || i->id == X86_INS_JECXZ ||
	     i->id == X86_INS_JRCXZ) && imm) {
		/* a conditional tail call leaves on one side */
		return K_JCC;
	}
	return K_PLAIN;
}

int lc_paths_prove(const struct lc_elf *e, uint64_t entry, const struct lc_path_store *st, size_t n, bool judge,
		   bool *reached, size_t *npaths, char *why, size_t len)
{
	uint64_t fe = lc_elf_func_end(e, entry), a = entry;
	struct walk w = { .st = st, .reached = reached, .judge = judge, .why = why, .len = len };
	cs_insn *insn = NULL;
	csh cs;
	int ret = -1;

	*npaths = 0;
	for (size_t k = 0; k < n; ++k)
		reached[k] = false;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		snprintf(why, len, "Unable to start the disassembler");
		return -1;
	}
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	w.in = calloc(MAX_INSNS, sizeof(*w.in));
	if (!insn || !w.in) {
		snprintf(why, len, "Out of memory");
		goto out;
	}
	while (a < fe) {
		const uint8_t *p = NULL;
		size_t l = 15;
		uint64_t pc = a;
		struct pinsn *d;

		while (l && !(p = lc_elf_ptr(e, a, l)))
			--l;
		if (!p || !cs_disasm_iter(cs, &p, &l, &pc, insn)) {
			snprintf(why, len, "the routine at 0x%" PRIx64 " cannot be decoded at 0x%" PRIx64, entry, a);
			goto out;
		}
		if (w.n == MAX_INSNS) {
			snprintf(why, len, "the routine at 0x%" PRIx64 " has more than %d instructions: its paths are not enumerated",
				 entry, MAX_INSNS);
			goto out;
		}
		d = &w.in[w.n++];
		d->addr = a;
		d->kind = kind_of(insn, entry, fe, &d->target);
		if (d->kind == K_INDIRECT) {
			snprintf(why, len, "a register-indirect jump at 0x%" PRIx64 " in the routine at 0x%" PRIx64 ": its paths cannot be bounded",
				 a, entry);
			goto out;
		}
		if (d->kind == K_JCC && (d->target < entry || d->target >= fe)) {
			snprintf(why, len, "a conditional jump at 0x%" PRIx64 " leaves the routine at 0x%" PRIx64 ": not followed",
				 a, entry);
			goto out;
		}
		d->store = -1;
		for (size_t k = 0; k < n; ++k)
			if (st[k].addr == a)
				d->store = (int)k;
		a += insn->size;
	}
	if (!w.n) {
		snprintf(why, len, "the routine at 0x%" PRIx64 " is empty", entry);
		goto out;
	}
	w.onpath = calloc(w.n, 1);
	w.stk = calloc(w.n, sizeof(*w.stk));
	if (!w.onpath || !w.stk) {
		snprintf(why, len, "Out of memory");
		goto out;
	}
	walk(&w, 0, false, 0);
	*npaths = w.paths;
	if (!w.fail && !w.exits)
		snprintf(why, len, "no path from the routine's entry 0x%" PRIx64 " returns: it never completes", entry);
	else if (!w.fail)
		ret = 0;
out:
	free(w.onpath);
	free(w.stk);
	free(w.in);
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return ret;
}

/*
 * The lea's register reaches a store to memory within the next few
 * instructions, directly (mov %rcx,off(%rbx)) or through vector registers
 * (535-555 build the table two entries at a time: movq %rcx,%xmm0;
 * punpcklqdq; movups %xmm0,off(%r12)). A register used only as the store's
 * address does not count: that writes through the pointer, not the pointer.
 */
static bool stored_after(csh cs, cs_insn *insn, const struct lc_elf *e, uint64_t a, unsigned int reg)
{
	uint16_t taint[16];
	int nt = 1;

	taint[0] = (uint16_t)reg;
	for (int k = 0; k < 24; ++k) {
		const uint8_t *p = NULL;
		size_t l = 15;
		uint64_t pc = a;
		const cs_x86 *x;
		cs_regs rr, ww;
		uint8_t nr, nw;
		bool reads = false, mem_write = false;

		while (l && !(p = lc_elf_ptr(e, a, l)))
			--l;
		if (!p || !cs_disasm_iter(cs, &p, &l, &pc, insn))
			return false;
		if (insn->id == X86_INS_RET || insn->id == X86_INS_JMP || insn->id == X86_INS_CALL ||
		    cs_regs_access(cs, insn, rr, &nr, ww, &nw))
			return false;
		x = &insn->detail->x86;
		/* capstone's per-operand access is not filled in for every SSE form: use the register lists */
		for (int o = 0; o < x->op_count; ++o)
			if (x->operands[o].type == X86_OP_MEM && o == 0 &&
			    (insn->id == X86_INS_MOV || insn->id == X86_INS_MOVUPS || insn->id == X86_INS_MOVAPS ||
			     insn->id == X86_INS_MOVDQU || insn->id == X86_INS_MOVDQA || insn->id == X86_INS_MOVQ ||
			     insn->id == X86_INS_MOVLPS || insn->id == X86_INS_MOVHPS || insn->id == X86_INS_VMOVUPS ||
			     insn->id == X86_INS_VMOVDQU || insn->id == X86_INS_VMOVAPS || insn->id == X86_INS_VMOVDQA))
				mem_write = true;
		for (int r = 0; r < nr; ++r) {
			bool addr = false;

			for (int o = 0; o < x->op_count; ++o)
				if (x->operands[o].type == X86_OP_MEM &&
				    (x->operands[o].mem.base == rr[r] || x->operands[o].mem.index == rr[r]))
					addr = true;
			for (int t = 0; t < nt && !addr; ++t)
				reads |= rr[r] == taint[t];
		}
		/* a move of the register to memory: capstone (Intel order) puts the destination first */
		if (mem_write && x->op_count == 2 && x->operands[0].type == X86_OP_MEM && x->operands[1].type == X86_OP_REG)
			for (int t = 0; t < nt; ++t)
				if (x->operands[1].reg == taint[t])
					return true;
		/* registers written: tainted when the value came from a tainted one */
		for (int w = 0; w < nw; ++w) {
			int t;

			if (ww[w] == X86_REG_EFLAGS)
				continue;
			for (t = 0; t < nt && taint[t] != ww[w]; ++t)
				;
			if (reads && t == nt && nt < 16)
				taint[nt++] = ww[w];
			else if (!reads && t < nt && insn->id != X86_INS_PUNPCKLQDQ && insn->id != X86_INS_MOVHPS &&
				 insn->id != X86_INS_PINSRQ)
				taint[t] = taint[--nt];	/* overwritten; merging forms keep it */
		}
		if (!nt)
			return false;
		a += insn->size;
	}
	return false;
}

int lc_paths_referenced(const struct lc_elf *e, uint64_t entry, char *why, size_t len)
{
	cs_insn *insn;
	csh cs;
	int ret = -ENOENT;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		snprintf(why, len, "Unable to start the disassembler");
		return -EINVAL;
	}
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(cs);
	for (int s = 0; insn && s < e->nload && ret; ++s) {
		const struct lc_seg *sg = &e->load[s];
		const uint8_t *b = e->map + sg->off;

		if (!(sg->flags & 1))
			continue;
		for (uint64_t p = 1; p + 4 <= sg->filesz && ret; ++p) {
			int32_t rel;
			uint64_t at, ilen;

			memcpy(&rel, b + p, 4);
			/* call/jmp rel32: opcode just before the displacement */
			if (b[p - 1] == 0xe8 || b[p - 1] == 0xe9) {
				at = sg->vaddr + p - 1;
				ilen = 5;
			} else if (p >= 3 && (b[p - 3] & 0xfb) == 0x48 && b[p - 2] == 0x8d && (b[p - 1] & 0xc7) == 0x05) {
				/* lea disp32(%rip),%r64 */
				at = sg->vaddr + p - 3;
				ilen = 7;
			} else {
				continue;
			}
			if (at + ilen + (int64_t)rel != entry)
				continue;
			const uint8_t *q = b + (at - sg->vaddr);
			size_t l = ilen;
			uint64_t pc = at;

			if (!cs_disasm_iter(cs, &q, &l, &pc, insn) || insn->size != ilen)
				continue;
			if (insn->id == X86_INS_CALL || insn->id == X86_INS_JMP) {
				snprintf(why, len, "%s at 0x%" PRIx64, insn->id == X86_INS_CALL ? "called" : "jumped to", at);
				ret = 0;
			} else if (insn->id == X86_INS_LEA &&
				   stored_after(cs, insn, e, at + ilen, insn->detail->x86.operands[0].reg)) {
				snprintf(why, len, "its address is loaded at 0x%" PRIx64 " and stored", at);
				ret = 0;
			}
		}
	}
	if (!insn)
		snprintf(why, len, "Out of memory");
	else if (ret)
		snprintf(why, len, "nothing calls the routine at 0x%" PRIx64 " or stores its address", entry);
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return ret;
}
