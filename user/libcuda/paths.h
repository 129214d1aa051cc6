/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_PATHS_H
#define LIBCUDA_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcuda/elf.h"
#include "libcuda/gate.h"

/*
 * Proof that an initialiser runs and sets the bit, from its routine's own
 * control flow rather than from emulation samples:
 *
 * lc_paths_referenced: the routine's entry is called (call/jmp rel32) or its
 * address is loaded (lea rip-relative) and then stored to memory (a
 * function table) by the instructions that follow. 0, or -ENOENT with why.
 *
 * lc_paths_prove: every path from the entry to an exit (ret, a jump out of
 * the routine, falling off its end) is enumerated, up to LC_PATHS_MAX; a
 * path ending in a trap (ud2, hlt, int3) does not return and is not one.
 * st[] are the byte's stores inside the routine with their effect after
 * the plan. reached[i] is set when some path passes st[i]. The result is
 * 0 when every exit path has a store that sets the bit and no later store
 * that clears it or writes a computed value (PRESERVES keeps it), and at
 * least one exit path exists; otherwise -1 with the first failing path in
 * why. A loop, a register-indirect jump or more than LC_PATHS_MAX paths is
 * -1 too: the paths cannot be bounded. With judge false the effects are
 * not judged: only reached[] and the structural refusals.
 */
#define LC_PATHS_MAX 4096

struct lc_path_store {
	uint64_t addr;
	enum lc_effect now;
};

int lc_paths_referenced(const struct lc_elf *e, uint64_t entry, char *why, size_t len);
int lc_paths_prove(const struct lc_elf *e, uint64_t entry, const struct lc_path_store *st, size_t n, bool judge,
		   bool *reached, size_t *npaths, char *why, size_t len);

#endif
