/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_EMU_H
#define LIBCUDA_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Runs one straight-line window of code that ends with a store to the
 * capability byte, many times: every combination of the window's
 * conditional branches (forced, so data cannot hide a path), several
 * initial values of the byte and several random register and memory
 * states. Samples are deterministic, so two runs over the original and
 * the rewritten bytes can be compared sample by sample.
 */
#define LC_EMU_MAX_JCC 6
#define LC_EMU_VALUES 8
#define LC_EMU_SEEDS 6

struct lc_emu_win {
	uint64_t start, store, end;	/* [start, end); store is the last insn */
	const uint8_t *code;		/* bytes for [code_base, code_base+code_len) */
	uint64_t code_base;
	size_t code_len;
	int base_reg, index_reg;	/* unicorn register ids; 0: none */
	int scale;
	int64_t disp;			/* of the store operand */
	uint64_t field;			/* capability byte offset from the base */
	bool base_stable;		/* base register unchanged in the window */
	int njcc;
	uint64_t jcc[LC_EMU_MAX_JCC], jcc_target[LC_EMU_MAX_JCC];
};

struct lc_emu_out {
	size_t n;			/* samples */
	bool *reached;			/* the store executed on this sample */
	uint8_t *v, *p, *q;		/* byte at start, just before, just after */
};

/* One emulator, reused for every window (starting one costs milliseconds). */
struct lc_emu;
struct lc_emu *lc_emu_new(char *err, size_t errlen);
void lc_emu_destroy(struct lc_emu *emu);
/* Returns 0, or -errno with a reason in err. out is allocated. */
int lc_emu_run(struct lc_emu *emu, const struct lc_emu_win *w, struct lc_emu_out *out, char *err,
	       size_t errlen);
void lc_emu_free(struct lc_emu_out *out);
/* Maps a capstone x86 register id to unicorn's (64-bit GPRs only), or 0. */
int lc_emu_reg(unsigned int cs_reg);

#endif
