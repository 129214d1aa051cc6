/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_GATE_H
#define LIBCUDA_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcuda/elf.h"

/*
 * The GeForce dma-buf / GPUDirect RDMA gate in libcuda, found from the
 * binary itself: cuDeviceGetAttribute -> relocated slot -> implementation
 * -> attribute dispatcher -> jump table -> the branches for attributes 116
 * and 124 -> the capability byte and mask they test. Then every store to
 * that byte is found, emulated and classified, and same-length rewrites are
 * planned so that no store can leave the bit clear.
 */
enum lc_effect {
	LC_SETS,		/* the bit is set afterwards, always */
	LC_CLEARS,		/* the bit is clear afterwards, always */
	LC_PRESERVES,		/* the bit keeps the value it had before the store */
	LC_COMPUTED,		/* the bit comes from some other value */
	LC_UNKNOWN,		/* could not be analysed */
};

struct lc_rewrite {
	uint64_t vaddr;		/* instruction address */
	int64_t off;		/* file offset */
	uint8_t len;
	uint8_t old[16], new[16];
	char from[80], to[80];	/* disassembly */
	uint64_t store;		/* the store it is for */
};

struct lc_store {
	uint64_t addr;
	uint8_t len;
	char text[80];
	bool rmw;		/* the store instruction reads the byte itself */
	bool addr_taken;	/* lea of the byte: the address escapes */
	uint64_t win_start;
	enum lc_effect orig, now;	/* before and after the planned rewrites */
	bool init_or;		/* carries an or-immediate into the byte */
	bool has_mask_or;	/* ... which already includes the mask */
	uint8_t or_imm;
	char note[256];
};

struct lc_gate {
	/* the path from the export to the gate */
	uint64_t api, slot, impl, dispatcher, table;
	int table_bias, table_max;
	uint64_t branch[3];		/* 110, 116, 124 */
	uint32_t field;
	uint8_t mask;
	uint64_t global;		/* 0: none found */
	char extra[160];		/* other preconditions of attribute 124 */
	struct lc_store *stores;
	size_t nstores;
	struct lc_rewrite *plan;
	size_t nplan;
	size_t already_set;		/* init stores that already set the bit */
	bool located;			/* the gate was found */
	bool ok;			/* the plan is proven (possibly empty) */
	char reason[512];		/* why not, when !ok */
	double seconds;
};

int lc_gate_analyse(const struct lc_elf *e, struct lc_gate *g);
void lc_gate_free(struct lc_gate *g);
const char *lc_effect_name(enum lc_effect e);

#endif
