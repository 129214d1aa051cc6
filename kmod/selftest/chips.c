// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the register decoders, built with NVS_SELFTEST (make module
 * NVS_SELFTEST=1) and run at load. Each row is a raw register value the
 * hardware (or a fault) can produce, and what it must decode to; the
 * values follow the fixtures of tests/vm/tools/nvsim.c.
 */

struct nvs_decode_case {
	u8 dec;
	u32 raw;
	u32 vraw;
	bool ok;
	s32 mc;
};

static const struct nvs_decode_case nvs_decode_cases[] __initconst = {
	/* Blackwell die: low 16 bits in 1/256 °C, 0 and > 150 °C are not */
	/* ... and bit 30 set: the channel holds a sample */
	{ NVS_DEC_FIX8, 0x40005a37, 0, true, 90215 },
	{ NVS_DEC_FIX8, 0x40a14f80, 0, true, 79500 },	/* junk in 31:16 */
	{ NVS_DEC_FIX8, 0x40000001, 0, true, 4 },
	{ NVS_DEC_FIX8, 0x40000000 | 150 * 256, 0, true, 150000 },
	{ NVS_DEC_FIX8, 0x40000000 | (150 * 256 + 1), 0, false, 0 },
	{ NVS_DEC_FIX8, 0x40000000, 0, false, 0 },
	{ NVS_DEC_FIX8, 0x00005a37, 0, false, 0 },	/* no bit 30 */
	{ NVS_DEC_FIX8, 0x80a15a37, 0, false, 0 },
	{ NVS_DEC_FIX8, 0x00000000, 0, false, 0 },
	{ NVS_DEC_FIX8, 0xffffffff, 0, false, 0 },
	{ NVS_DEC_FIX8, 0xbadf1234, 0, false, 0 },
	/* memory module: MR code 23:16, word 0's validity bit 24 */
	{ NVS_DEC_MR, 0x00300000, 0x0f000000, true, 56000 },
	{ NVS_DEC_MR, 0x01301234, 0x0f0005a5, true, 56000 },	/* junk bits */
	{ NVS_DEC_MR, 0x00380000, 0x01000000, true, 72000 },	/* bit 24 only */
	{ NVS_DEC_MR, 0x00330000, 0x03000000, true, 62000 },
	{ NVS_DEC_MR, 0x003a0000, 0x0e000000, false, 0 },	/* not word 0's */
	{ NVS_DEC_MR, 0x003c0000, 0xbadf1234, false, 0 },	/* poisoned valid */
	{ NVS_DEC_MR, 0x003c0000, 0xffffffff, false, 0 },
	{ NVS_DEC_MR, 0x003c0000, 0x00000000, false, 0 },
	{ NVS_DEC_MR, 0x00140000, 0x0f000000, false, 0 },	/* code 20: 0 °C */
	{ NVS_DEC_MR, 0x00150000, 0x0f000000, true, 2000 },	/* code 21 */
	{ NVS_DEC_MR, 0x00500000, 0x0f000000, true, 120000 },	/* code 80 */
	{ NVS_DEC_MR, 0x005a0000, 0x0f000000, true, 120000 },	/* clamped */
	{ NVS_DEC_MR, 0x00ff0000, 0x0f000000, false, 0 },	/* code 0xff: no sample */
	{ NVS_DEC_MR, 0xbadf0030, 0x0f000000, false, 0 },	/* absent */
	{ NVS_DEC_MR, 0xffffffff, 0x0f000000, false, 0 },
	/* broadcast word: same code, no validity word */
	{ NVS_DEC_MR_BCAST, 0x005a0042, 0, true, 120000 },
	{ NVS_DEC_MR_BCAST, 0x00300000, 0, true, 56000 },
	{ NVS_DEC_MR_BCAST, 0x00000000, 0, false, 0 },
	{ NVS_DEC_MR_BCAST, 0xffffffff, 0, false, 0 },
	{ NVS_DEC_MR_BCAST, 0xbadf5040, 0, false, 0 },
	/* Ampere/Ada junction: bits 11:0 in 1/32 °C */
	{ NVS_DEC_ADA_MEM, 0x50000acd, 0, true, 86406 },
	{ NVS_DEC_ADA_MEM, 0x00000001, 0, true, 31 },
	{ NVS_DEC_ADA_MEM, 0x00000ffe, 0, true, 127938 },
	{ NVS_DEC_ADA_MEM, 0x00000fff, 0, false, 0 },
	{ NVS_DEC_ADA_MEM, 0x00000000, 0, false, 0 },
	{ NVS_DEC_ADA_MEM, 0xbadf0acd, 0, false, 0 },
	/* Ampere/Ada hotspot: bits 15:8 in whole °C, 0x7f and up invalid */
	{ NVS_DEC_ADA_HOTSPOT, 0x00004b12, 0, true, 75000 },
	{ NVS_DEC_ADA_HOTSPOT, 0x00007e00, 0, true, 126000 },
	{ NVS_DEC_ADA_HOTSPOT, 0x00007f00, 0, false, 0 },
	{ NVS_DEC_ADA_HOTSPOT, 0x0000ff00, 0, false, 0 },
	{ NVS_DEC_ADA_HOTSPOT, 0x000000ff, 0, false, 0 },
	{ NVS_DEC_ADA_HOTSPOT, 0xffffffff, 0, false, 0 },
};

/* One DRAM chip from its partition's words (kmod/chips.c, "Per-chip"). */
struct nvs_module_case {
	u32 status;
	u32 w[4];
	u8 chip;
	bool back;
	u8 state;	/* enum nvs_module_state */
	s32 mc;
};

static const struct nvs_module_case nvs_module_cases[] __initconst = {
	/* chip 0: hottest of slots 0 and 2; chip 1: of slots 1 and 3 */
	{ 0x0f000000, { 0x00300000, 0x00320000, 0x00340000, 0x00310000 },
	  0, false, NVS_MODULE_OK, 64000 },
	{ 0x0f000000, { 0x00300000, 0x00320000, 0x00340000, 0x00310000 },
	  1, false, NVS_MODULE_OK, 60000 },
	/* slot 2 not sampled (bit 26 off): slot 0 alone */
	{ 0x0b000000, { 0x00300000, 0, 0x00400000, 0 },
	  0, false, NVS_MODULE_OK, 56000 },
	/* code 0xff and code 0 are no reading; the other slot is */
	{ 0x0f000000, { 0x00ff0000, 0x00000000, 0x00350000, 0x00360000 },
	  0, false, NVS_MODULE_OK, 66000 },
	{ 0x0f000000, { 0x00ff0000, 0x00000000, 0x00ff0000, 0x00000000 },
	  1, false, NVS_MODULE_INVALID, 0 },
	/* no status bit of the chip's slots: shown, no number */
	{ 0x0a000000, { 0x00300000, 0x00300000, 0x00300000, 0x00300000 },
	  0, false, NVS_MODULE_INVALID, 0 },
	/* poisoned or all-ones status word: the partition is not there */
	{ 0xbadf1f00, { 0x00300000, 0x00300000, 0x00300000, 0x00300000 },
	  0, false, NVS_MODULE_ABSENT, 0 },
	{ 0xffffffff, { 0x00300000, 0x00300000, 0x00300000, 0x00300000 },
	  1, false, NVS_MODULE_ABSENT, 0 },
	/* every sampled slot poisoned: absent; one poisoned: the other */
	{ 0x0f000000, { 0xbadf0001, 0x00300000, 0xbadf0003, 0x00300000 },
	  0, false, NVS_MODULE_ABSENT, 0 },
	{ 0x0f000000, { 0xbadf0001, 0x00300000, 0x00330000, 0x00300000 },
	  0, false, NVS_MODULE_OK, 62000 },
	/* back side: bits 31:24 of the same words, clamped at 0x50 */
	{ 0x0f000000, { 0x3a300000, 0x00300000, 0x5a330000, 0x00300000 },
	  0, true, NVS_MODULE_OK, 120000 },
	{ 0x0f000000, { 0x00300000, 0x00300000, 0x00330000, 0x00300000 },
	  0, true, NVS_MODULE_INVALID, 0 },
};

static bool __init nvs_selftest_modules(void)
{
	unsigned int i;
	bool pass = true;

	for (i = 0; i < ARRAY_SIZE(nvs_module_cases); i++) {
		const struct nvs_module_case *c = &nvs_module_cases[i];
		enum nvs_module_state st;
		s32 mc = 0;

		st = nvs_decode_module(c->status, c->w, 0xf, c->chip, c->back,
				       &mc);
		if (st != c->state || (st == NVS_MODULE_OK && mc != c->mc)) {
			pr_err("module self-test %u: status %#010x chip %u%s: got %d %d, want %d %d\n",
			       i + 1, c->status, c->chip, c->back ? "b" : "",
			       st, mc, c->state, c->mc);
			pass = false;
		}
	}
	return pass;
}

/*
 * Review finding 11: a recipe error (a chip row past the last partition, a
 * register outside every window) is silent at run time, where a read
 * outside the windows returns ~0 and looks like a dead GPU or an absent
 * chip. Every register the sampler can read for a recipe must lie inside
 * one of its windows.
 */
static bool __init nvs_recipe_reg_mapped(const struct nvs_chip *c, u32 off)
{
	unsigned int w;

	for (w = 0; w < c->nwindows; w++)
		if (off >= c->windows[w].off &&
		    (u64)off + 4 <= (u64)c->windows[w].off + c->windows[w].len)
			return true;
	return false;
}

/* Returns the number of inconsistencies found, each logged if log. */
static unsigned int __init nvs_recipe_check(const struct nvs_chip *c,
					    bool log)
{
	unsigned int i, p, k, bad = 0, modules = 0;

#define NVS_RECIPE_BAD(fmt, ...) do {					\
		if (log)						\
			pr_err("recipe self-test %s: " fmt "\n", c->name,	\
			       ##__VA_ARGS__);					\
		bad++;							\
	} while (0)

	if (c->nsensors > NVS_MAX_SENSORS)
		NVS_RECIPE_BAD("%u sensors, more than %u", c->nsensors,
			       NVS_MAX_SENSORS);
	if (c->nparts > NVS_MAX_PARTS)
		NVS_RECIPE_BAD("%u partitions, more than %u", c->nparts,
			       NVS_MAX_PARTS);
	if (c->nwindows > NVS_MAX_WINDOWS)
		NVS_RECIPE_BAD("%u windows, more than %u", c->nwindows,
			       NVS_MAX_WINDOWS);
	for (i = 0; i < c->nsensors; i++) {
		const struct nvs_chip_sensor *cs = &c->sensors[i];

		switch (cs->kind) {
		case NVS_KIND_DIE:
		case NVS_KIND_MEM:
			if (!nvs_recipe_reg_mapped(c, cs->off))
				NVS_RECIPE_BAD("%s at %#x outside every window",
					       cs->label, cs->off);
			break;
		case NVS_KIND_MODULE_MAX:
			if (cs->off && !nvs_recipe_reg_mapped(c, cs->off))
				NVS_RECIPE_BAD("%s at %#x outside every window",
					       cs->label, cs->off);
			break;
		case NVS_KIND_MODULE:
			modules++;
			if (cs->part >= c->nparts || cs->chip > 1)
				NVS_RECIPE_BAD("%s: partition %u chip %u of %u partitions",
					       cs->label, cs->part, cs->chip,
					       c->nparts);
			if (cs->back && !c->strap_off)
				NVS_RECIPE_BAD("%s: a back side without a strap",
					       cs->label);
			break;
		default:
			NVS_RECIPE_BAD("%s: kind %u", cs->label, cs->kind);
		}
	}
	if (!modules != !c->nparts)
		NVS_RECIPE_BAD("%u chip rows, %u partitions", modules,
			       c->nparts);
	for (p = 0; p < min_t(unsigned int, c->nparts, NVS_MAX_PARTS); p++) {
		if (!nvs_recipe_reg_mapped(c, nvs_mem_status(p)))
			NVS_RECIPE_BAD("partition %u status word unmapped", p);
		for (k = 0; k < 4; k++)
			if (!nvs_recipe_reg_mapped(c, nvs_mem_word(p, k)))
				NVS_RECIPE_BAD("partition %u word %u unmapped",
					       p, k);
	}
	if (c->strap_off && !nvs_recipe_reg_mapped(c, c->strap_off))
		NVS_RECIPE_BAD("strap at %#x unmapped", c->strap_off);
#undef NVS_RECIPE_BAD
	return bad;
}

/* A recipe with three errors: the checker must find exactly those. */
static const struct nvs_chip_sensor nvs_bad_sensors[] __initconst = {
	DIE("ch0", GB20X_CH(0)),
	MEMCHIP(2),		/* partition 1 of a 1-partition recipe */
	MEMBACK(0),		/* a back side without a strap */
};

static const struct nvs_chip_window nvs_bad_windows[] __initconst = {
	MEMWIN(0),		/* the die register is in no window */
};

static bool __init nvs_selftest_recipes(void)
{
	const struct nvs_chip bad = {
		.name = "(deliberately broken)",
		.sensors = nvs_bad_sensors,
		.nsensors = ARRAY_SIZE(nvs_bad_sensors),
		.windows = nvs_bad_windows,
		.nwindows = ARRAY_SIZE(nvs_bad_windows),
		.nparts = 1,
	};
	unsigned int i, n;
	bool pass = true;

	for (i = 0; i < ARRAY_SIZE(nvs_chips); i++)
		if (nvs_recipe_check(nvs_chips[i], true))
			pass = false;
	n = nvs_recipe_check(&bad, false);
	if (n != 3) {
		pr_err("recipe self-test: the broken recipe gave %u errors, want 3\n",
		       n);
		pass = false;
	}
	return pass;
}

/*
 * PMC_BOOT_0 to the default recipe: bits 28:20 only (revision and bits
 * 31:29 ignored), "gl" variants never the default, no id in 0 / ~0 /
 * 0xBADFxxxx, and a set bit 8 (a later architecture) matching nothing.
 */
struct nvs_boot0_case {
	u32 boot0;
	const char *chip;		/* NULL: no recipe */
};

static const struct nvs_boot0_case nvs_boot0_cases[] __initconst = {
	{ 0x1b200000, "gb202" }, { 0x1b2000a1, "gb202" },
	{ 0xfb200000, "gb202" },	/* 31:29 are no part of the id */
	{ 0x1b300000, "gb203" }, { 0x1b500000, "gb205" },
	/* where a chip has a "gl" recipe, an unlisted device gets it (M1) */
	{ 0x19200000, "ad102gl" }, { 0x19300000, "ad103" },
	{ 0x19400000, "ad104gl" }, { 0x19600000, "ad106" },
	{ 0x19700000, "ad107" }, { 0x17200000, "ga102gl" },
	{ 0x17400000, "ga104gl" }, { 0x17600000, "ga106" },
	{ 0x1b600000, NULL },		/* GB206: no recipe */
	{ 0x1b200100, NULL },		/* architecture_1 set */
	{ 0x00000000, NULL }, { 0xffffffff, NULL }, { 0xbadf1100, NULL },
};

static bool __init nvs_selftest_boot0(void)
{
	const struct nvs_chip *chip;
	unsigned int i;
	bool pass = true;
	u16 id;

	for (i = 0; i < ARRAY_SIZE(nvs_boot0_cases); i++) {
		id = nvs_boot0_chip_id(nvs_boot0_cases[i].boot0);
		chip = id == NVS_BOOT0_NONE || id == NVS_BOOT0_FUTURE ? NULL :
		       nvs_chip_by_chip_id(id);
		if (!chip != !nvs_boot0_cases[i].chip ||
		    (chip && strcmp(chip->name, nvs_boot0_cases[i].chip))) {
			pr_err("boot0 self-test %#010x: got %s, want %s\n",
			       nvs_boot0_cases[i].boot0,
			       chip ? chip->name : "none",
			       nvs_boot0_cases[i].chip ?: "none");
			pass = false;
		}
	}
	/* every recipe has a chip id, and its chip has a default recipe */
	for (i = 0; i < ARRAY_SIZE(nvs_chips); i++) {
		if (!nvs_chip_by_chip_id(nvs_chips[i]->chip_id) ||
		    !nvs_chips[i]->chip_id) {
			pr_err("boot0 self-test: recipe %s has no chip id\n",
			       nvs_chips[i]->name);
			pass = false;
		}
	}
	return pass;
}

bool __init nvs_selftest_decode(void)
{
	unsigned int i, formats = 0;
	bool pass = true;
	s32 mc;

	for (i = 0; i < ARRAY_SIZE(nvs_decode_cases); i++) {
		const struct nvs_decode_case *c = &nvs_decode_cases[i];
		bool ok;

		mc = S32_MIN;
		ok = nvs_decode(c->dec, c->raw, c->vraw, &mc);
		formats |= BIT(c->dec);
		if (ok != c->ok || (ok && mc != c->mc) || (!ok && mc != S32_MIN)) {
			pr_err("decode self-test %u: format %u raw %#010x valid %#010x: got %s %d, want %s %d\n",
			       i + 1, c->dec, c->raw, c->vraw,
			       ok ? "ok" : "invalid", mc,
			       c->ok ? "ok" : "invalid", c->mc);
			pass = false;
		}
	}
	/* every format of enum nvs_decode has rows */
	if (formats != GENMASK(__NVS_DEC_LAST - 1, 0)) {
		pr_err("decode self-test: formats %#lx without rows\n",
		       GENMASK(__NVS_DEC_LAST - 1, 0) & ~(unsigned long)formats);
		pass = false;
	}
	if (!nvs_selftest_modules())
		pass = false;
	if (!nvs_selftest_recipes())
		pass = false;
	if (!nvs_selftest_boot0())
		pass = false;
	if (pass)
		pr_info("decode self-tests (%zu cases): pass\n",
			ARRAY_SIZE(nvs_decode_cases) +
			ARRAY_SIZE(nvs_module_cases) + ARRAY_SIZE(nvs_chips) + 1 +
			ARRAY_SIZE(nvs_boot0_cases));
	return pass;
}
