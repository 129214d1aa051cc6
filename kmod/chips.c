// SPDX-License-Identifier: GPL-2.0
/*
 * Chip recipes and their decoders. Register facts come from public readers
 * (see landscape.md, "Register tables"); where they disagree the recipe
 * comment says which reading is implemented.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include "compat.h"
#include "nvs.h"
#include "chips.h"

#define DIE(l, o)	{ .label = l, .off = o, .decode = NVS_DEC_FIX8, \
			  .kind = NVS_KIND_DIE }
/* DRAM chip n: chip n % 2 of partition n / 2; "memNb" its back side */
#define MEMCHIP(n)	{ .label = "mem" #n, .off = NV_MEM((n) / 2), \
			  .valid_off = NV_MEM_VALID((n) / 2), \
			  .decode = NVS_DEC_MR, .kind = NVS_KIND_MODULE, \
			  .part = (n) / 2, .chip = (n) % 2 }
#define MEMBACK(n)	{ .label = "mem" #n "b", .off = NV_MEM((n) / 2), \
			  .valid_off = NV_MEM_VALID((n) / 2), \
			  .decode = NVS_DEC_MR, .kind = NVS_KIND_MODULE, \
			  .part = (n) / 2, .chip = (n) % 2, .back = true }
#define WIN(o, l)	{ .off = o, .len = l }
#define MEMWIN(p)	WIN(NV_MEM(p), NV_MEM_LEN)

/*
 * Blackwell (GB20x) die sensors: six consecutive words, CH0..CH3 then the
 * hardware maximum ("hotspot") and average. Low 16 bits in 1/256 °C, bit
 * 30 set when the word holds a sample (see nvs_decode()).
 */
#define FIX8_VALID		BIT(30)
#define GB20X_CH(n)		(0xad0a90 + 4 * (n))
#define GB20X_HWMAX		0xad0aa0
#define GB20X_HWAVG		0xad0aa4
#define GB20X_DIE_LEN		0x18

/*
 * Per-chip memory temperatures, Ampere (GA10x), Ada (AD10x) and Blackwell
 * (GB20x). None of this is NVIDIA documentation: it is the public readers'
 * reverse-engineering (landscape.md, "Field facts, 2026-12"), and the
 * GB203/GB205 layout and the per-slot pairing below are unconfirmed on a
 * real card until tests/device/run's raw partition dump settles them.
 *
 * One block per frame-buffer partition p at 0x9024c0 + p * 0x4000: four
 * data words at +0x0, +0x4, +0x8, +0xc and a status word at +0x10 whose
 * bits 24..27 say data word 0..3 holds a sample. A partition drives two
 * DRAM chips (one 64-bit partition, two 32-bit chips):
 *   - chip 0 is read from the slot pair +0x0 (status bit 24) / +0x8 (bit
 *     26), chip 1 from +0x4 (bit 25) / +0xc (bit 27); each chip's value is
 *     the hottest valid slot of its pair;
 *   - code in bits 23:16, °C = 2 * min(code, 0x50) - 40; on clamshell
 *     boards (strap 0x900200 bit 22) the back-side chip mirroring it
 *     reports its code in bits 31:24 of the same word;
 *   - a data word that is 0, all-ones or 0xBADFxxxx, or whose code is 0
 *     or 0xFF, is not a reading; neither is a code below 21 (2 °C), which
 *     only a zeroed register gives;
 *   - a status word that is itself all-ones or 0xBADFxxxx (whose bit 24
 *     happens to be set) means the partition is not on the board: both
 *     its chips are absent (no hwmon channel). A chip whose every sampled
 *     slot reads all-ones or 0xBADFxxxx is absent too; one without a
 *     sampled slot is shown, without a number.
 * The partition count follows the bus width, 64 bits a partition: GB202 8,
 * GB203 4, GB205 3, AD102 6, AD103 4, AD104 3, GA102 6. No read goes past
 * the last partition: gddr7-temp warns that reading past GB202's 8 can hit
 * reserved MMIO.
 *
 * Which public reader each rule follows, and where they differ (both
 * re-read for this comment; neither is NVIDIA documentation):
 *   - LACT's NvAPI per-module reader (lact-daemon nvidia/nvapi.rs
 *     read_vram_temps, "tested on Ampere, Ada and Blackwell"): the slot
 *     pairs +0x0/+0x8 (status bits 24/26) and +0x4/+0xc (bits 25/27),
 *     the status word at +0x10, the 0x50 clamp, the strap and the back
 *     side in bits 31:24 of the same word, and data 0 / ~0 / 0xBADFxxxx
 *     and codes 0 / 0xFF as non-readings. LACT takes the FIRST valid slot
 *     of a pair; the hottest is taken here, as PawnIO does for its pairs
 *     (an alarm must not miss the hotter of two readings of one chip);
 *     the two rules differ only when both slots of a pair hold a sample;
 *   - PawnIO.Modules Nvidia.p ("tested on RTX 5090") pairs otherwise:
 *     each data word with a second bank at 0x901348 + p * 0x4000 (status
 *     bits 28..31), the hottest of the two; on clamshell boards the
 *     +0x8/+0xc slots are chips of their own, bits 31:24 are never read,
 *     and only ~0 and 0xBADFxxxx are skipped. The second bank is not
 *     read here. On a clamshell GA102 the two models disagree; neither
 *     reader says it was tested on one, and the tests/device raw
 *     partition dump is what settles it;
 *   - TB reads the GB202 strap at 0x9a0200 instead, unreconciled;
 *   - the partition counts: gddr7-temp offsets.yaml (RTX 5090: 8, "verified
 *     on real hardware"; 5080/5070 Ti 4; 5070 3) and bus width / 64 for
 *     Ampere/Ada (LACT walks partitions 0..8 and skips what fails).
 * A memory pass reads a partition's status word once, then only the slots
 * of its shown chips whose status bit is set: at most 5 reads for the two
 * chips of a partition and their back sides (sampler.c, the budget).
 */
#define NV_MEM(p)		(0x9024c0 + (p) * 0x4000)
#define NV_MEM_VALID(p)		(NV_MEM(p) + 0x10)
#define NV_MEM_LEN		0x14
#define NV_MEM_STRAP		0x900200
#define NV_MEM_STRAP_CLAMSHELL	BIT(22)

u32 nvs_mem_word(unsigned int part, unsigned int k)
{
	return NV_MEM(part) + 4 * k;
}

u32 nvs_mem_status(unsigned int part)
{
	return NV_MEM_VALID(part);
}

/*
 * Ampere/Ada: memory junction (bits 11:0, 1/32 °C; 0xee50 on RTX 3070
 * boards) and die hotspot (bits 15:8, whole °C).
 */
#define ADA_MEM			0xe2a8
#define GA104_MEM		0xee50
#define ADA_HOTSPOT		0x2046c

#define GB20X_DIE							\
	DIE("hotspot", GB20X_HWMAX),					\
	DIE("average", GB20X_HWAVG),					\
	DIE("ch0", GB20X_CH(0)),					\
	DIE("ch1", GB20X_CH(1)),					\
	DIE("ch2", GB20X_CH(2)),					\
	DIE("ch3", GB20X_CH(3))

/*
 * "mem" on GB20x: the hottest chip. Not the broadcast register 0x9a24c0
 * (gddr6 names it ..._DQ_IC0_SUBP0): it has no validity word of its own,
 * and a summary register is used only with one.
 */
#define GB20X_MEM_MAX	{ .label = "mem", .decode = NVS_DEC_MR,		\
			  .kind = NVS_KIND_MODULE_MAX }

/*
 * GB202: 8 partitions, 16 chips. No back-side rows: 6 die sensors, mem and
 * 32 chips would not fit NVS_MAX_SENSORS (32, uapi), and the one GB202
 * board listed (RTX 5090) has no back side.
 */
static const struct nvs_chip_sensor gb202_sensors[] = {
	GB20X_DIE, GB20X_MEM_MAX,
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3),
	MEMCHIP(4), MEMCHIP(5), MEMCHIP(6), MEMCHIP(7),
	MEMCHIP(8), MEMCHIP(9), MEMCHIP(10), MEMCHIP(11),
	MEMCHIP(12), MEMCHIP(13), MEMCHIP(14), MEMCHIP(15),
};

static const struct nvs_chip_window gb202_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3),
	MEMWIN(4), MEMWIN(5), MEMWIN(6), MEMWIN(7),
};

/*
 * GB203 (4 partitions) and GB205 (3): the die block as on GB202 (TB and
 * PawnIO read it at 0xad0a90 there; LACT #1114 read 0x45c with the driver
 * unbound, which this module never reads); the memory blocks as on GB202,
 * per gddr7-temp's partition counts.
 */

static const struct nvs_chip_sensor gb203_sensors[] = {
	GB20X_DIE, GB20X_MEM_MAX,
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3),
	MEMCHIP(4), MEMCHIP(5), MEMCHIP(6), MEMCHIP(7),
	MEMBACK(0), MEMBACK(1), MEMBACK(2), MEMBACK(3),
	MEMBACK(4), MEMBACK(5), MEMBACK(6), MEMBACK(7),
};

static const struct nvs_chip_window gb203_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3),
	WIN(NV_MEM_STRAP, 4),
};

static const struct nvs_chip_sensor gb205_sensors[] = {
	GB20X_DIE, GB20X_MEM_MAX,
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3), MEMCHIP(4), MEMCHIP(5),
	MEMBACK(0), MEMBACK(1), MEMBACK(2), MEMBACK(3), MEMBACK(4), MEMBACK(5),
};

static const struct nvs_chip_window gb205_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
	MEMWIN(0), MEMWIN(1), MEMWIN(2),
	WIN(NV_MEM_STRAP, 4),
};

#define ADA_HOT								\
	{ .label = "hotspot", .off = ADA_HOTSPOT,			\
	  .decode = NVS_DEC_ADA_HOTSPOT, .kind = NVS_KIND_DIE }
#define ADA_JUNCTION(mem)						\
	{ .label = "mem", .off = mem,					\
	  .decode = NVS_DEC_ADA_MEM, .kind = NVS_KIND_MEM }

/* Boards without readable memory modules (GDDR6): hotspot and junction. */
#define ADA_SENSORS(name, mem)						\
static const struct nvs_chip_sensor name##_sensors[] = {		\
	ADA_HOT, ADA_JUNCTION(mem),					\
};									\
static const struct nvs_chip_window name##_windows[] = {		\
	WIN(ADA_HOTSPOT, 4), WIN(mem, 4),				\
}

ADA_SENSORS(ada, ADA_MEM);
ADA_SENSORS(ga104, GA104_MEM);

/*
 * GeForce boards of these chips carry GDDR6X, whose DRAMs report their
 * temperature: two chips per 64-bit partition, 12 on the 384-bit GA102
 * and AD102 (6 partitions), 8 on AD103 (4), 6 on AD104 (3), and as many
 * again on the back of clamshell boards (RTX 3090: 24). Chips a board
 * does not carry (a 320-bit RTX 3080) read 0xBADFxxxx and are hidden.
 * "mem" stays the junction register.
 */
static const struct nvs_chip_sensor g6x12_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3), MEMCHIP(4), MEMCHIP(5),
	MEMCHIP(6), MEMCHIP(7), MEMCHIP(8), MEMCHIP(9), MEMCHIP(10), MEMCHIP(11),
	MEMBACK(0), MEMBACK(1), MEMBACK(2), MEMBACK(3), MEMBACK(4), MEMBACK(5),
	MEMBACK(6), MEMBACK(7), MEMBACK(8), MEMBACK(9), MEMBACK(10), MEMBACK(11),
};

static const struct nvs_chip_window g6x12_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3), MEMWIN(4), MEMWIN(5),
	WIN(NV_MEM_STRAP, 4),
};

static const struct nvs_chip_sensor g6x8_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3),
	MEMCHIP(4), MEMCHIP(5), MEMCHIP(6), MEMCHIP(7),
	MEMBACK(0), MEMBACK(1), MEMBACK(2), MEMBACK(3),
	MEMBACK(4), MEMBACK(5), MEMBACK(6), MEMBACK(7),
};

static const struct nvs_chip_window g6x8_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3),
	WIN(NV_MEM_STRAP, 4),
};

static const struct nvs_chip_sensor g6x6_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMCHIP(0), MEMCHIP(1), MEMCHIP(2), MEMCHIP(3), MEMCHIP(4), MEMCHIP(5),
	MEMBACK(0), MEMBACK(1), MEMBACK(2), MEMBACK(3), MEMBACK(4), MEMBACK(5),
};

static const struct nvs_chip_window g6x6_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2),
	WIN(NV_MEM_STRAP, 4),
};

/*
 * The chip from PMC_BOOT_0 (issue 19). NV_PMC_BOOT_0 is the first register
 * of BAR0; its chip id, not the PCI device id, says which silicon answers,
 * so it selects the recipe and the PCI id table only names the product.
 * Sources (public, re-read for this comment; no code copied):
 *   - nouveau, drivers/gpu/drm/nouveau/nvkm/engine/device/base.c: boot0 is
 *     the read of 0x000000 and the chipset is (boot0 & 0x1ff00000) >> 20,
 *     i.e. bits 28:20;
 *   - nova-core, drivers/gpu/nova-core/regs.rs NV_PMC_BOOT_0: bits 28:24
 *     architecture_0, 23:20 implementation, 8:8 architecture_1 (the MSB of
 *     the architecture), 7:4 and 3:0 the major and minor revision; gpu.rs
 *     define_chipset: GA102 0x172, GA104 0x174, GA106 0x176, AD102 0x192,
 *     AD103 0x193, AD104 0x194, AD106 0x196, AD107 0x197, GB202 0x1b2,
 *     GB203 0x1b3, GB205 0x1b5 (and GB206 0x1b6, GB207 0x1b7, which have
 *     no recipe here).
 * Bits 31:29 are no part of the id in either driver (issue 19 said 31:20),
 * and the revision nibbles are ignored: a recipe holds for every stepping.
 * Bit 8 is 0 on every chip above; a boot0 with it set names an
 * architecture past 0x1f, which nouveau's mask would alias onto a known
 * chip, so it matches no recipe (NVS_BOOT0_FUTURE). nova-core also notes
 * that later chips report through NV_PMC_BOOT_42 and leave BOOT_0 zeroed:
 * 0 (like all-ones and 0xBADFxxxx) is "no chip id" (core.c, nvs_map()).
 */
#define BOOT0_CHIP_SHIFT	20
#define BOOT0_CHIP_MASK		0x1ff
#define BOOT0_ARCH_MSB		BIT(8)

#define ID_GA102	0x172
#define ID_GA104	0x174
#define ID_GA106	0x176
#define ID_AD102	0x192
#define ID_AD103	0x193
#define ID_AD104	0x194
#define ID_AD106	0x196
#define ID_AD107	0x197
#define ID_GB202	0x1b2
#define ID_GB203	0x1b3
#define ID_GB205	0x1b5

u16 nvs_boot0_field(u32 boot0)
{
	return (boot0 >> BOOT0_CHIP_SHIFT) & BOOT0_CHIP_MASK;
}

u16 nvs_boot0_chip_id(u32 boot0)
{
	if (!boot0 || boot0 == ~0U || nvs_raw_poison(boot0))
		return NVS_BOOT0_NONE;
	if (boot0 & BOOT0_ARCH_MSB)
		return NVS_BOOT0_FUTURE;
	return nvs_boot0_field(boot0);
}

#define RECIPE(var, n, sim, id, s, w, parts, strap)			\
static const struct nvs_chip var = {					\
	.name = n, .sim_name = sim, .chip_id = id,			\
	.sensors = s, .nsensors = ARRAY_SIZE(s),			\
	.windows = w, .nwindows = ARRAY_SIZE(w),			\
	.nparts = parts, .strap_off = strap,				\
}
/* no memory partitions read */
#define CHIP(var, n, sim, id, s, w)	RECIPE(var, n, sim, id, s, w, 0, 0)

RECIPE(chip_gb202, "gb202", "GeForce RTX 5090", ID_GB202, gb202_sensors,
	gb202_windows, 8, 0);
RECIPE(chip_gb203, "gb203", "GeForce RTX 5080", ID_GB203, gb203_sensors,
	gb203_windows, 4, NV_MEM_STRAP);
RECIPE(chip_gb205, "gb205", "GeForce RTX 5070", ID_GB205, gb205_sensors,
	gb205_windows, 3, NV_MEM_STRAP);
/* GeForce (GDDR6X, per-chip rows) and professional (GDDR6) variants */
RECIPE(chip_ad102, "ad102", "GeForce RTX 4090", ID_AD102, g6x12_sensors,
	g6x12_windows, 6, NV_MEM_STRAP);
CHIP(chip_ad102gl, "ad102gl", "RTX 6000 Ada Generation", ID_AD102,
	ada_sensors, ada_windows);
RECIPE(chip_ad103, "ad103", "GeForce RTX 4080", ID_AD103, g6x8_sensors,
	g6x8_windows, 4, NV_MEM_STRAP);
RECIPE(chip_ad104, "ad104", "GeForce RTX 4070", ID_AD104, g6x6_sensors,
	g6x6_windows, 3, NV_MEM_STRAP);
CHIP(chip_ad104gl, "ad104gl", "L4", ID_AD104, ada_sensors, ada_windows);
CHIP(chip_ad106, "ad106", "GeForce RTX 4070 Laptop", ID_AD106, ada_sensors,
	ada_windows);
CHIP(chip_ad107, "ad107", "GeForce RTX 4060 Laptop", ID_AD107, ada_sensors,
	ada_windows);
RECIPE(chip_ga102, "ga102", "GeForce RTX 3090", ID_GA102, g6x12_sensors,
	g6x12_windows, 6, NV_MEM_STRAP);
CHIP(chip_ga102gl, "ga102gl", "RTX A5000", ID_GA102, ada_sensors,
	ada_windows);
CHIP(chip_ga106, "ga106", "RTX A2000", ID_GA106, ada_sensors, ada_windows);
/* GA104 as the RTX 3070 has the junction register elsewhere; A4000 does not */
CHIP(chip_ga104, "ga104", "GeForce RTX 3070", ID_GA104, ga104_sensors,
	ga104_windows);
CHIP(chip_ga104gl, "ga104gl", "RTX A4000", ID_GA104, ada_sensors,
	ada_windows);

/*
 * The GeForce recipe of each chip comes before its "gl" variant, and
 * nvs_chip_by_chip_id() returns the last match: a device only PMC_BOOT_0
 * names (not in the id table) gets the conservative recipe, die and
 * summary registers only, where the chip has one. A GDDR6 professional
 * board (RTX A6000 10de:2230, L40, A40 are not listed) must not be read
 * with the GDDR6X per-chip rows and strap of its GeForce twin (review of
 * item 3, M1).
 */
static const struct nvs_chip *const nvs_chips[] = {
	&chip_gb202, &chip_gb203, &chip_gb205,
	&chip_ad102, &chip_ad102gl, &chip_ad103, &chip_ad104, &chip_ad104gl,
	&chip_ad106, &chip_ad107,
	&chip_ga102, &chip_ga102gl, &chip_ga104, &chip_ga104gl, &chip_ga106,
};

#define NV(dev, c, n)	{ .vendor = PCI_VENDOR_ID_NVIDIA, .device = dev, \
			  .chip = &c, .name = n }

/*
 * The GB203/GB205 ids follow the issue: 2c02 RTX 5080, 2c05 RTX 5070 Ti,
 * 2f04 RTX 5070. TB's list labels them differently (2b82 5080, 2c05 5070 Ti,
 * 2c02 5070); only the names would differ, as both chips share a recipe.
 * A row's chip is checked against PMC_BOOT_0 at attach (core.c); a device
 * id not listed here is handled by its PMC_BOOT_0 chip id alone.
 */
const struct nvs_chip_id nvs_chip_ids[] = {
	NV(0x2b85, chip_gb202, "GeForce RTX 5090"),
	NV(0x2c02, chip_gb203, "GeForce RTX 5080"),
	NV(0x2c05, chip_gb203, "GeForce RTX 5070 Ti"),
	NV(0x2f04, chip_gb205, "GeForce RTX 5070"),
	NV(0x2684, chip_ad102, "GeForce RTX 4090"),
	NV(0x2685, chip_ad102, "GeForce RTX 4090 D"),
	NV(0x26b1, chip_ad102gl, "RTX 6000 Ada Generation"),
	NV(0x26b9, chip_ad102gl, "L40S"),
	NV(0x2702, chip_ad103, "GeForce RTX 4080 SUPER"),
	NV(0x2704, chip_ad103, "GeForce RTX 4080"),
	NV(0x2705, chip_ad103, "GeForce RTX 4070 Ti SUPER"),
	NV(0x2782, chip_ad104, "GeForce RTX 4070 Ti"),
	NV(0x2783, chip_ad104, "GeForce RTX 4070 SUPER"),
	NV(0x2786, chip_ad104, "GeForce RTX 4070"),
	NV(0x27b8, chip_ad104gl, "L4"),
	NV(0x2860, chip_ad106, "GeForce RTX 4070 Max-Q / Mobile"),
	NV(0x28e0, chip_ad107, "GeForce RTX 4060 Max-Q / Mobile"),
	NV(0x2203, chip_ga102, "GeForce RTX 3090 Ti"),
	NV(0x2204, chip_ga102, "GeForce RTX 3090"),
	NV(0x2206, chip_ga102, "GeForce RTX 3080"),
	NV(0x2208, chip_ga102, "GeForce RTX 3080 Ti"),
	NV(0x2216, chip_ga102, "GeForce RTX 3080 LHR"),
	NV(0x2231, chip_ga102gl, "RTX A5000"),
	NV(0x2232, chip_ga102gl, "RTX A4500"),
	NV(0x2236, chip_ga102gl, "A10"),
	NV(0x2484, chip_ga104, "GeForce RTX 3070"),
	NV(0x2488, chip_ga104, "GeForce RTX 3070 LHR"),
	NV(0x24b0, chip_ga104gl, "RTX A4000"),
	NV(0x2531, chip_ga106, "RTX A2000"),
	NV(0x2571, chip_ga106, "RTX A2000 12GB"),
	{ }
};

const struct nvs_chip *nvs_chip_by_name(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nvs_chips); i++)
		if (!strcmp(nvs_chips[i]->name, name))
			return nvs_chips[i];
	return NULL;
}

const struct nvs_chip *nvs_chip_by_chip_id(u16 chip_id)
{
	const struct nvs_chip *found = NULL;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nvs_chips); i++)
		if (nvs_chips[i]->chip_id == chip_id)
			found = nvs_chips[i];
	return found;
}

/* The chip's own name (its GeForce recipe's, not a "gl" variant's). */
const char *nvs_chip_id_name(u16 chip_id)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nvs_chips); i++)
		if (nvs_chips[i]->chip_id == chip_id)
			return nvs_chips[i]->name;
	return "unknown";
}

const struct nvs_chip_id *nvs_chip_by_id(u16 vendor, u16 device)
{
	const struct nvs_chip_id *id;

	for (id = nvs_chip_ids; id->vendor; id++)
		if (id->vendor == vendor && id->device == device)
			return id;
	return NULL;
}

/* GDDR mode-register code: 2 °C steps from -40 °C; above 80 reads as 80. */
#define MR_CODE_MIN		21	/* 2 °C: below is a zeroed register */
#define MR_CODE_MAX		80
#define MR_CODE_NONE		0xff	/* no sample: PawnIO and LACT skip it */
#define MR_SAMPLED(k)		BIT(24 + (k))	/* status bit of word k */

static bool decode_code(u32 code, s32 *mc)
{
	if (code < MR_CODE_MIN || code == MR_CODE_NONE)
		return false;
	code = min_t(u32, code, MR_CODE_MAX);
	*mc = (2 * (s32)code - 40) * 1000;
	return true;
}

static bool decode_mr_code(u32 raw, s32 *mc)
{
	return decode_code((raw >> 16) & 0xff, mc);
}

static bool mr_word_dead(u32 raw)
{
	return raw == ~0U || nvs_raw_poison(raw);
}

/* See "Per-chip memory temperatures" above for each rule and its source. */
enum nvs_module_state nvs_decode_module(u32 status, const u32 w[4], u8 have,
					unsigned int chip, bool back, s32 *mc)
{
	unsigned long slots = NVS_CHIP_SLOTS(chip & 1);
	bool sampled = false, dead = true, any = false;
	unsigned int k;
	s32 t, best = 0;

	if (mr_word_dead(status))
		return NVS_MODULE_ABSENT;
	for_each_set_bit(k, &slots, 4) {
		u32 raw = w[k];

		if (!(status & MR_SAMPLED(k)) || !(have & BIT(k)))
			continue;
		sampled = true;
		if (mr_word_dead(raw))
			continue;
		dead = false;
		if (!raw ||
		    !decode_code(back ? raw >> 24 : (raw >> 16) & 0xff, &t))
			continue;
		if (!any || t > best)
			best = t;
		any = true;
	}
	if (any) {
		*mc = best;
		return NVS_MODULE_OK;
	}
	return sampled && dead ? NVS_MODULE_ABSENT : NVS_MODULE_INVALID;
}

bool nvs_strap_clamshell(u32 strap)
{
	return !mr_word_dead(strap) && (strap & NV_MEM_STRAP_CLAMSHELL);
}

bool nvs_decode(enum nvs_decode dec, u32 raw, u32 vraw, s32 *mc)
{
	u32 v;

	if (raw == ~0U || nvs_raw_poison(raw))
		return false;

	switch (dec) {
	case NVS_DEC_FIX8:
		/*
		 * Bit 30 says the channel holds a sample (PawnIO.Modules
		 * Nvidia.p, pull requests #78 and #83; gddr7-temp): without
		 * it the low bits are stale or a power-on value. 0 is an idle
		 * register, above 150 °C no silicon survives.
		 */
		if (!(raw & FIX8_VALID))
			return false;
		v = raw & 0xffff;
		if (!v || v > 150 * 256)
			return false;
		*mc = DIV_ROUND_CLOSEST(v * 1000, 256);
		return true;
	case NVS_DEC_MR:
		if (vraw == ~0U || nvs_raw_poison(vraw) ||
		    !(vraw & MR_SAMPLED(0)))
			return false;
		return decode_mr_code(raw, mc);
	case NVS_DEC_MR_BCAST:
		return decode_mr_code(raw, mc);
	case NVS_DEC_ADA_MEM:
		v = raw & 0xfff;
		if (!v || v == 0xfff)
			return false;
		*mc = DIV_ROUND_CLOSEST(v * 1000, 32);
		return true;
	case NVS_DEC_ADA_HOTSPOT:
		v = (raw >> 8) & 0xff;
		if (!v || v >= 0x7f)
			return false;
		*mc = v * 1000;
		return true;
	default:
		return false;
	}
}

const char *nvs_chip_name(const struct nvs_gpu *gpu)
{
	return gpu->chip->name;
}

const char *nvs_sensor_label(const struct nvs_gpu *gpu, unsigned int i)
{
	if (i >= gpu->nsensors)
		return NULL;
	return gpu->chip->sensors[i].label;
}

int nvs_sensor_find(const struct nvs_gpu *gpu, const char *label)
{
	unsigned int i;

	for (i = 0; i < gpu->nsensors; i++)
		if (!strcmp(gpu->chip->sensors[i].label, label))
			return i;
	return -ENOENT;
}

#ifdef NVS_SELFTEST
#include "selftest/chips.c"
#endif
