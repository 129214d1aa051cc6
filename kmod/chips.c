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
#define MEMMOD(p)	{ .label = "mem" #p, .off = NV_MEM(p), \
			  .valid_off = NV_MEM_VALID(p), \
			  .decode = NVS_DEC_MR, .kind = NVS_KIND_MODULE }
#define WIN(o, l)	{ .off = o, .len = l }
#define MEMWIN(p)	WIN(NV_MEM(p), NV_MEM_LEN)

/*
 * Blackwell (GB20x) die sensors: six consecutive words, CH0..CH3 then the
 * hardware maximum ("hotspot") and average. Low 16 bits in 1/256 °C.
 */
#define GB20X_CH(n)		(0xad0a90 + 4 * (n))
#define GB20X_HWMAX		0xad0aa0
#define GB20X_HWAVG		0xad0aa4
#define GB20X_DIE_LEN		0x18

/*
 * Per-module memory temperatures, Ampere (GA10x), Ada (AD10x) and
 * Blackwell (GB20x): one block per frame-buffer partition p at
 * 0x9024c0 + p * 0x4000. Word 0 of the block holds the DRAM's mode-register
 * temperature code in bits 23:16 (°C = 2 * min(code, 80) - 40); the word at
 * +0x10 holds one "sampled" bit per data word of the block in bits 31:24,
 * bit 24 for word 0. A partition the board does not have reads 0xBADFxxxx.
 *
 * What the public readers do, and what is implemented here:
 *   - PawnIO.Modules Nvidia.p (namazso, 2026): reads this block on chips
 *     0x17x (Ampere), 0x19x (Ada) and 0x1bx (Blackwell) from PMC_BOOT_0;
 *     data words at +0x0/+0x4/+0x8/+0xc (and four more at 0x901348 + p *
 *     0x4000), mask word at +0x10, bit 24 + k valid for data word k; skips
 *     0xBADFxxxx and all-ones in either word; °C = (code - 20) * 2.
 *   - LACT (the 2026 pull request adding NVIDIA memory modules, as
 *     summarised in landscape.md): same block and decode, status bits
 *     24-27 at +0x10, codes clamped at 0x50, a second code in bits 31:24
 *     for the back side of clamshell boards (strap 0x900200 bit 22).
 *   - gddr7-temp (sunnyyangyangyang, kernel hwmon module): Blackwell only,
 *     8 partitions read, all four bits 27:24 required; on Ampere/Ada it
 *     reads only the junction register 0xe2a8.
 *   - gpuwatch / gddr6 (olealgoritme): 0xe2a8 (0xee50 on RTX 3070) for
 *     GDDR6X, bits 11:0 / 32; GDDR7 modules with the nibble 27:24 = 0xf.
 *   - TB (see landscape.md): GB202, codes valid 21..80, strap 0x9a0200
 *     bit 22 selecting a clamshell layout.
 *   - TechPowerUp (GPU-Z) shows one "Memory Junction Temperature" per card
 *     and publishes no register layout.
 * Validity: this module requires word 0's own bit (bit 24), PawnIO's rule,
 * and not all four bits 27:24. Both agree whenever all four are set; where
 * a board sets fewer (fewer data words sampled in a partition), the
 * four-bit rule would hide a module whose word 0 was sampled, and a real
 * module must not be dropped. A validity word that is itself 0xBADFxxxx
 * or all-ones (whose bit 24 happens to be set) never validates, nor does a
 * code below 21 (2 °C: a zeroed register), so an absent or poisoned
 * partition never shows a number. Only word 0 is read (one data and one
 * validity read per module and memory pass, see sampler.c for the
 * budget): on boards where another word of the partition is hotter, memN
 * is a lower bound. tests/vm/t-review-modules.sh drives each rule with
 * the nvsim fixture "ada-g6x", one partition per case.
 */
#define NV_MEM(p)		(0x9024c0 + (p) * 0x4000)
#define NV_MEM_VALID(p)		(NV_MEM(p) + 0x10)
#define NV_MEM_LEN		0x14
#define GB202_MEM_BCAST		0x9a24c0

/*
 * Ampere/Ada: memory junction (bits 11:0, 1/32 °C; 0xee50 on RTX 3070
 * boards) and die hotspot (bits 15:8, whole °C).
 */
#define ADA_MEM			0xe2a8
#define GA104_MEM		0xee50
#define ADA_HOTSPOT		0x2046c

static const struct nvs_chip_sensor gb202_sensors[] = {
	DIE("hotspot", GB20X_HWMAX),
	DIE("average", GB20X_HWAVG),
	DIE("ch0", GB20X_CH(0)),
	DIE("ch1", GB20X_CH(1)),
	DIE("ch2", GB20X_CH(2)),
	DIE("ch3", GB20X_CH(3)),
	{ .label = "mem", .off = GB202_MEM_BCAST,
	  .decode = NVS_DEC_MR_BCAST, .kind = NVS_KIND_MODULE_MAX },
	MEMMOD(0), MEMMOD(1), MEMMOD(2), MEMMOD(3),
	MEMMOD(4), MEMMOD(5), MEMMOD(6), MEMMOD(7),
	MEMMOD(8), MEMMOD(9), MEMMOD(10), MEMMOD(11),
	MEMMOD(12), MEMMOD(13), MEMMOD(14), MEMMOD(15),
};

static const struct nvs_chip_window gb202_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3),
	MEMWIN(4), MEMWIN(5), MEMWIN(6), MEMWIN(7),
	MEMWIN(8), MEMWIN(9), MEMWIN(10), MEMWIN(11),
	MEMWIN(12), MEMWIN(13), MEMWIN(14), MEMWIN(15),
	WIN(GB202_MEM_BCAST, 4),
};

/* GB203/GB205: the die block is confirmed there; the memory layout is not. */
static const struct nvs_chip_sensor gb20x_sensors[] = {
	DIE("hotspot", GB20X_HWMAX),
	DIE("average", GB20X_HWAVG),
	DIE("ch0", GB20X_CH(0)),
	DIE("ch1", GB20X_CH(1)),
	DIE("ch2", GB20X_CH(2)),
	DIE("ch3", GB20X_CH(3)),
};

static const struct nvs_chip_window gb20x_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
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
 * temperature: one module per 32-bit partition of the full chip, 12 on
 * the 384-bit GA102 and AD102, 8 on AD103 (256-bit), 6 on AD104
 * (192-bit). Partitions a board has fused off (e.g. a 320-bit RTX 3080)
 * read 0xBADFxxxx and are hidden. "mem" stays the junction register.
 */
static const struct nvs_chip_sensor g6x12_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMMOD(0), MEMMOD(1), MEMMOD(2), MEMMOD(3), MEMMOD(4), MEMMOD(5),
	MEMMOD(6), MEMMOD(7), MEMMOD(8), MEMMOD(9), MEMMOD(10), MEMMOD(11),
};

static const struct nvs_chip_window g6x12_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3), MEMWIN(4), MEMWIN(5),
	MEMWIN(6), MEMWIN(7), MEMWIN(8), MEMWIN(9), MEMWIN(10), MEMWIN(11),
};

static const struct nvs_chip_sensor g6x8_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMMOD(0), MEMMOD(1), MEMMOD(2), MEMMOD(3),
	MEMMOD(4), MEMMOD(5), MEMMOD(6), MEMMOD(7),
};

static const struct nvs_chip_window g6x8_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3),
	MEMWIN(4), MEMWIN(5), MEMWIN(6), MEMWIN(7),
};

static const struct nvs_chip_sensor g6x6_sensors[] = {
	ADA_HOT, ADA_JUNCTION(ADA_MEM),
	MEMMOD(0), MEMMOD(1), MEMMOD(2), MEMMOD(3), MEMMOD(4), MEMMOD(5),
};

static const struct nvs_chip_window g6x6_windows[] = {
	WIN(ADA_HOTSPOT, 4), WIN(ADA_MEM, 4),
	MEMWIN(0), MEMWIN(1), MEMWIN(2), MEMWIN(3), MEMWIN(4), MEMWIN(5),
};

#define CHIP(var, n, sim, s, w)						\
static const struct nvs_chip var = {					\
	.name = n, .sim_name = sim,					\
	.sensors = s, .nsensors = ARRAY_SIZE(s),			\
	.windows = w, .nwindows = ARRAY_SIZE(w),			\
}

CHIP(chip_gb202, "gb202", "GeForce RTX 5090", gb202_sensors, gb202_windows);
CHIP(chip_gb203, "gb203", "GeForce RTX 5080", gb20x_sensors, gb20x_windows);
CHIP(chip_gb205, "gb205", "GeForce RTX 5070", gb20x_sensors, gb20x_windows);
/* GeForce (GDDR6X, per-module rows) and professional (GDDR6) variants */
CHIP(chip_ad102, "ad102", "GeForce RTX 4090", g6x12_sensors, g6x12_windows);
CHIP(chip_ad102gl, "ad102gl", "RTX 6000 Ada Generation", ada_sensors, ada_windows);
CHIP(chip_ad103, "ad103", "GeForce RTX 4080", g6x8_sensors, g6x8_windows);
CHIP(chip_ad104, "ad104", "GeForce RTX 4070", g6x6_sensors, g6x6_windows);
CHIP(chip_ad104gl, "ad104gl", "L4", ada_sensors, ada_windows);
CHIP(chip_ad106, "ad106", "GeForce RTX 4070 Laptop", ada_sensors, ada_windows);
CHIP(chip_ad107, "ad107", "GeForce RTX 4060 Laptop", ada_sensors, ada_windows);
CHIP(chip_ga102, "ga102", "GeForce RTX 3090", g6x12_sensors, g6x12_windows);
CHIP(chip_ga102gl, "ga102gl", "RTX A5000", ada_sensors, ada_windows);
CHIP(chip_ga106, "ga106", "RTX A2000", ada_sensors, ada_windows);
/* GA104 as the RTX 3070 has the junction register elsewhere; A4000 does not */
CHIP(chip_ga104, "ga104", "GeForce RTX 3070", ga104_sensors, ga104_windows);
CHIP(chip_ga104gl, "ga104gl", "RTX A4000", ada_sensors, ada_windows);

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
#define MR_WORD0_SAMPLED	BIT(24)	/* see "Per-module memory" above */

static bool decode_mr_code(u32 raw, s32 *mc)
{
	u32 code = (raw >> 16) & 0xff;

	if (code < MR_CODE_MIN)
		return false;
	code = min_t(u32, code, MR_CODE_MAX);
	*mc = (2 * (s32)code - 40) * 1000;
	return true;
}

bool nvs_decode(enum nvs_decode dec, u32 raw, u32 vraw, s32 *mc)
{
	u32 v;

	if (raw == ~0U || nvs_raw_poison(raw))
		return false;

	switch (dec) {
	case NVS_DEC_FIX8:
		/* 0 is an idle register, above 150 °C no silicon survives */
		v = raw & 0xffff;
		if (!v || v > 150 * 256)
			return false;
		*mc = DIV_ROUND_CLOSEST(v * 1000, 256);
		return true;
	case NVS_DEC_MR:
		if (vraw == ~0U || nvs_raw_poison(vraw) ||
		    !(vraw & MR_WORD0_SAMPLED))
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
