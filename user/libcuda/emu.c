// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicorn/unicorn.h>

#include "libcuda/emu.h"

#define PAGE 4096ULL
#define MAX_PAGES 256

static const uint8_t start_values[LC_EMU_VALUES] = { 0x00, 0x20, 0x40, 0x60, 0xc0, 0xdf, 0xff, 0x9a };

/*
 * Data pages stay mapped for the whole window (mapping and unmapping flush
 * unicorn's translation cache); each run refills the ones it has.
 */
struct pages {
	uint64_t addr[MAX_PAGES];
	int n;
};

struct run {
	const struct lc_emu_win *w;
	unsigned int decisions;
	uint64_t seed;
	struct pages *pg;
	uint64_t target;	/* address of the capability byte, once known */
	bool at_store, exited, failed;
	uint8_t p;
	int mode;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Seeds 1, 2 and 4 read all-zero or all-one memory, so flags go both ways. */
static void fill(const struct run *r, uint64_t pg, uint8_t *buf)
{
	uint64_t s = mix(r->seed ^ pg) | 1;

	if (r->mode == 1 || r->mode == 2 || r->mode == 4) {
		memset(buf, r->mode == 2 ? 0xff : 0, PAGE);
		return;
	}
	/* xorshift: arbitrary enough, and cheap (pages are refilled every run) */
	for (size_t i = 0; i < PAGE; i += 8) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		memcpy(buf + i, &s, 8);
	}
}

static bool map_page(uc_engine *uc, struct run *r, uint64_t addr)
{
	uint8_t buf[PAGE];
	uint64_t pg = addr & ~(PAGE - 1);

	if (r->pg->n == MAX_PAGES || uc_mem_map(uc, pg, PAGE, UC_PROT_READ | UC_PROT_WRITE))
		return false;
	/* Memory is arbitrary but reproducible: the same sample sees the same bytes. */
	fill(r, pg, buf);
	uc_mem_write(uc, pg, buf, PAGE);
	r->pg->addr[r->pg->n++] = pg;
	return true;
}

static bool on_unmapped(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value,
			void *data)
{
	struct run *r = data;

	(void)value;
	if (type == UC_MEM_FETCH_UNMAPPED)
		return false;
	if (!map_page(uc, r, addr))
		return false;
	/* An access may straddle two pages. */
	if (((addr + size - 1) & ~(PAGE - 1)) != (addr & ~(PAGE - 1))) {
		uint8_t b;

		if (uc_mem_read(uc, addr + size - 1, &b, 1) && !map_page(uc, r, addr + size - 1))
			return false;
	}
	return true;
}

static uint64_t reg(uc_engine *uc, int id)
{
	uint64_t v = 0;

	if (id)
		uc_reg_read(uc, id, &v);
	return v;
}

static bool byte_at(uc_engine *uc, struct run *r, uint64_t addr, uint8_t *b)
{
	if (uc_mem_read(uc, addr, b, 1) == UC_ERR_OK)
		return true;
	return map_page(uc, r, addr) && uc_mem_read(uc, addr, b, 1) == UC_ERR_OK;
}

static void on_code(uc_engine *uc, uint64_t addr, uint32_t size, void *data)
{
	struct run *r = data;
	const struct lc_emu_win *w = r->w;

	(void)size;
	if (addr < w->start || addr >= w->end) {
		r->exited = true;
		uc_emu_stop(uc);
		return;
	}
	if (addr == w->store) {
		uint64_t a = reg(uc, w->base_reg) + reg(uc, w->index_reg) * (uint64_t)w->scale;

		r->target = a + w->field;
		r->at_store = true;
		if (!byte_at(uc, r, r->target, &r->p))
			r->failed = true;
		return;
	}
	for (int k = 0; k < w->njcc; ++k) {
		uint64_t next;

		if (w->jcc[k] != addr)
			continue;
		next = (r->decisions >> k) & 1 ? w->jcc_target[k] : addr + size;
		if (next < w->start || next >= w->end) {
			r->exited = true;
			uc_emu_stop(uc);
			return;
		}
		/* Forcing the branch: unicorn resumes at the new RIP. */
		uc_reg_write(uc, UC_X86_REG_RIP, &next);
		return;
	}
}

int lc_emu_reg(unsigned int r)
{
	switch (r) {
	case X86_REG_RAX: return UC_X86_REG_RAX;
	case X86_REG_RBX: return UC_X86_REG_RBX;
	case X86_REG_RCX: return UC_X86_REG_RCX;
	case X86_REG_RDX: return UC_X86_REG_RDX;
	case X86_REG_RSI: return UC_X86_REG_RSI;
	case X86_REG_RDI: return UC_X86_REG_RDI;
	case X86_REG_RBP: return UC_X86_REG_RBP;
	case X86_REG_RSP: return UC_X86_REG_RSP;
	case X86_REG_R8: return UC_X86_REG_R8;
	case X86_REG_R9: return UC_X86_REG_R9;
	case X86_REG_R10: return UC_X86_REG_R10;
	case X86_REG_R11: return UC_X86_REG_R11;
	case X86_REG_R12: return UC_X86_REG_R12;
	case X86_REG_R13: return UC_X86_REG_R13;
	case X86_REG_R14: return UC_X86_REG_R14;
	case X86_REG_R15: return UC_X86_REG_R15;
	}
	return 0;
}

static const int gprs[] = {
	UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI,
	UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8, UC_X86_REG_R9,
	UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14,
	UC_X86_REG_R15,
};

void lc_emu_free(struct lc_emu_out *o)
{
	free(o->reached);
	free(o->v);
	free(o->p);
	free(o->q);
	memset(o, 0, sizeof(*o));
}

struct lc_emu {
	uc_engine *uc;
};

struct lc_emu *lc_emu_new(char *err, size_t errlen)
{
	struct lc_emu *emu = calloc(1, sizeof(*emu));
	uc_err ue;

	if (!emu) {
		snprintf(err, errlen, "Out of memory");
		return NULL;
	}
	ue = uc_open(UC_ARCH_X86, UC_MODE_64, &emu->uc);
	if (ue) {
		snprintf(err, errlen, "Unable to start the emulator: %s", uc_strerror(ue));
		free(emu);
		return NULL;
	}
	return emu;
}

void lc_emu_destroy(struct lc_emu *emu)
{
	if (!emu)
		return;
	uc_close(emu->uc);
	free(emu);
}

int lc_emu_run(struct lc_emu *emu, const struct lc_emu_win *w, struct lc_emu_out *o, char *err,
	       size_t errlen)
{
	uc_engine *uc = emu->uc;
	uc_hook hc, hm;
	uint64_t cbase = w->code_base & ~(PAGE - 1);
	uint64_t clen = ((w->code_base + w->code_len + PAGE - 1) & ~(PAGE - 1)) - cbase;
	size_t idx = 0;
	int ret = -ENOMEM;
	uc_err ue;

	memset(o, 0, sizeof(*o));
	if (w->njcc > LC_EMU_MAX_JCC) {
		snprintf(err, errlen, "too many branches in the window (%d)", w->njcc);
		return -E2BIG;
	}
	o->n = ((size_t)1 << w->njcc) * LC_EMU_VALUES * LC_EMU_SEEDS;
	o->reached = calloc(o->n, sizeof(bool));
	o->v = calloc(o->n, 1);
	o->p = calloc(o->n, 1);
	o->q = calloc(o->n, 1);
	if (!o->reached || !o->v || !o->p || !o->q)
		goto fail;
	uint8_t *img = calloc(1, clen);

	if (!img)
		goto fail;
	memcpy(img + (w->code_base - cbase), w->code, w->code_len);
	ue = uc_mem_map(uc, cbase, clen, UC_PROT_READ | UC_PROT_EXEC);
	if (!ue)
		ue = uc_mem_write(uc, cbase, img, clen);
	free(img);
	/* The same addresses held other bytes for the previous window. */
	if (!ue)
		uc_ctl_remove_cache(uc, cbase, cbase + clen);
	if (ue) {
		snprintf(err, errlen, "Unable to map code at 0x%llx: %s", (unsigned long long)cbase,
			 uc_strerror(ue));
		ret = -EIO;
		goto fail;
	}

	struct pages pages = { .n = 0 };
	uint8_t pbuf[PAGE];

	for (unsigned int d = 0; d < (1u << w->njcc); ++d) {
		for (int vi = 0; vi < LC_EMU_VALUES; ++vi) {
			for (int s = 0; s < LC_EMU_SEEDS; ++s, ++idx) {
				/* Registers and memory depend on the seed only, so pages are reused. */
				struct run r = { .w = w, .decisions = d, .mode = s, .seed = mix(s + 1), .pg = &pages };
				uint64_t x = r.seed, rip = w->start, fl;

				for (int i = 0; i < pages.n; ++i) {
					fill(&r, pages.addr[i], pbuf);
					uc_mem_write(uc, pages.addr[i], pbuf, PAGE);
				}

				/*
				 * Registers hold canonical user addresses far from the code
				 * (seeds 0-2), or small values (3: zero, 4: zero with zeroed
				 * memory, 5: one) so that conditions on them go both ways.
				 */
				for (size_t g = 0; g < sizeof(gprs) / sizeof(gprs[0]); ++g) {
					x = mix(x);
					uint64_t val = 0x500000000000ULL + (x & 0x0fffffffffffULL);

					if (s >= 3 && gprs[g] != w->base_reg && gprs[g] != UC_X86_REG_RSP &&
					    gprs[g] != UC_X86_REG_RBP)
						val = s == 5;
					if (gprs[g] == UC_X86_REG_RSP)
						val &= ~0xfULL;
					uc_reg_write(uc, gprs[g], &val);
				}
				fl = 0x2 | (mix(x) & 0x8d5);
				uc_reg_write(uc, UC_X86_REG_EFLAGS, &fl);
				uc_reg_write(uc, UC_X86_REG_RIP, &rip);
				uc_hook_add(uc, &hc, UC_HOOK_CODE, on_code, &r, w->start, w->end);
				uc_hook_add(uc, &hm, UC_HOOK_MEM_UNMAPPED, on_unmapped, &r, 1, 0);
				o->v[idx] = start_values[vi];
				if (w->base_stable) {
					uint64_t t = reg(uc, w->base_reg) + reg(uc, w->index_reg) * (uint64_t)w->scale +
						     w->field;

					if (map_page(uc, &r, t))
						uc_mem_write(uc, t, &o->v[idx], 1);
				}
				ue = uc_emu_start(uc, w->start, w->end, 0, 256);
				rip = reg(uc, UC_X86_REG_RIP);
				if (!ue && !r.exited && !r.failed && r.at_store && rip == w->end &&
				    byte_at(uc, &r, r.target, &o->q[idx])) {
					o->reached[idx] = true;
					o->p[idx] = r.p;
					if (!w->base_stable)
						o->v[idx] = r.p;
				}
				uc_hook_del(uc, hc);
				uc_hook_del(uc, hm);
			}
		}
	}
	for (int i = 0; i < pages.n; ++i)
		uc_mem_unmap(uc, pages.addr[i], PAGE);
	uc_mem_unmap(uc, cbase, clen);
	return 0;
fail:
	lc_emu_free(o);
	if (ret == -ENOMEM && !err[0])
		snprintf(err, errlen, "Out of memory");
	return ret;
}
