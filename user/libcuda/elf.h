/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef LIBCUDA_ELF_H
#define LIBCUDA_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A read-only view of an x86-64 ELF shared object, built from the program
 * headers and the dynamic segment only: section headers are optional (the
 * loader never reads them, and stripped copies lack them).
 */
#define LC_MAX_LOAD 16
/*
 * The largest file read: 256 MiB, over twice the largest libcuda known
 * (615.71.09, 112 MB). Anything larger is refused before it is mapped
 * (-EFBIG), so no input, a sparse giant included, costs more than that:
 * a patch hashes and copies the file twice, and at 512 MiB that alone
 * passed the 5 s budget on a busy 2-core machine.
 */
#define LC_MAX_LIB_SIZE (256ull << 20)
#define LC_MAX_LIB_SIZE_TEXT "256 MiB"

struct lc_seg {
	uint64_t vaddr, off, filesz, memsz;
	uint32_t flags;		/* PF_X, PF_W, PF_R */
};

struct lc_elf {
	const uint8_t *map;
	size_t size;
	struct lc_seg load[LC_MAX_LOAD];
	int nload;
	uint64_t symtab, strtab, strsz, gnuhash, hash, rela, relasz, jmprel, pltrelsz;
	uint64_t ehhdr, ehhdr_size;
	/* sorted function starts from .eh_frame_hdr (may be empty) */
	uint64_t *fstart;
	size_t nfstart;
};

/* Maps path; returns 0 or -errno with an admin-readable reason in err. */
int lc_elf_open(struct lc_elf *e, const char *path, char *err, size_t errlen);
void lc_elf_close(struct lc_elf *e);
/* File bytes backing [vaddr, vaddr+len) inside one PT_LOAD, or NULL. */
const uint8_t *lc_elf_ptr(const struct lc_elf *e, uint64_t vaddr, size_t len);
/* File offset of vaddr, or -1. */
int64_t lc_elf_off(const struct lc_elf *e, uint64_t vaddr);
bool lc_elf_exec(const struct lc_elf *e, uint64_t vaddr);
/* Exported, defined symbol value; 0 on success, -ENOENT otherwise. */
int lc_elf_sym(const struct lc_elf *e, const char *name, uint64_t *value);
/* What the loader writes into slot: an R_X86_64_RELATIVE addend. */
int lc_elf_relative(const struct lc_elf *e, uint64_t slot, uint64_t *value);
/* The GOT slot an imported function is called through; 0 or -ENOENT. */
int lc_elf_import_slot(const struct lc_elf *e, const char *name, uint64_t *slot);
/* The driver version embedded in the library; returns how many markers agree or not. */
int lc_elf_driver_version(const struct lc_elf *e, char *ver, size_t len, bool *conflict);
/* Start of the function containing vaddr (from unwind info), or 0. */
uint64_t lc_elf_func_start(const struct lc_elf *e, uint64_t vaddr);
/* Start of the next function after vaddr, or the end of its segment. */
uint64_t lc_elf_func_end(const struct lc_elf *e, uint64_t vaddr);

#endif
