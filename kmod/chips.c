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
#define MEMMOD(p)	{ .label = "mem" #p, .off = GB202_MEM(p), \
			  .valid_off = GB202_MEM(p) + 0x10, \
			  .decode = NVS_DEC_GDDR7, .kind = NVS_KIND_MODULE }
#define WIN(o, l)	{ .off = o, .len = l }

/*
 * Blackwell (GB20x) die sensors: six consecutive words, CH0..CH3 then the
 * hardware maximum ("hotspot") and average. Low 16 bits in 1/256 °C.
 */
#define GB20X_CH(n)		(0xad0a90 + 4 * (n))
#define GB20X_HWMAX		0xad0aa0
#define GB20X_HWAVG		0xad0aa4
#define GB20X_DIE_LEN		0x18

/*
 * GB202 GDDR7. This implements ARCHITECTURE.md's reading: 16 partitions
 * p, one data word each at 0x9024c0 + p * 0x4000 whose bits 23:16 are the
 * MR temperature code, valid when bits 27:24 of the word at +0x10 are all
 * set, absent when the data word is 0xBADFxxxx; the broadcast word at
 * 0x9a24c0 decodes the same way. Two other readings exist and are not
 * implemented: TB reads a strap (0x9a0200 bit 22) to choose between a
 * clamshell layout (8 partitions x 4 sub-registers) and a standard one (16 x
 * 2, the max of each pair); LACT reads partitions 0..8 with sub-register
 * slots {0x0,0x8},{0x4,0xc} and a second code in bits 31:24 for the back
 * side. All three agree on word 0 of each partition, which is what is read
 * here, so on a board where the other slots matter "mem" may miss the
 * hottest die but never reports a wrong one.
 */
#define GB202_MEM(p)		(0x9024c0 + (p) * 0x4000)
#define GB202_MEM_LEN		0x14
#define GB202_MEM_BCAST		0x9a24c0

/* Ampere/Ada: memory junction and die hotspot. */
#define ADA_MEM			0xe2a8
#define GA104_MEM		0xee50	/* RTX 3070 boards */
#define ADA_HOTSPOT		0x2046c

static const struct nvs_chip_sensor gb202_sensors[] = {
	DIE("hotspot", GB20X_HWMAX),
	DIE("average", GB20X_HWAVG),
	DIE("ch0", GB20X_CH(0)),
	DIE("ch1", GB20X_CH(1)),
	DIE("ch2", GB20X_CH(2)),
	DIE("ch3", GB20X_CH(3)),
	{ .label = "mem", .off = GB202_MEM_BCAST,
	  .decode = NVS_DEC_GDDR7_BCAST, .kind = NVS_KIND_MODULE_MAX },
	MEMMOD(0), MEMMOD(1), MEMMOD(2), MEMMOD(3),
	MEMMOD(4), MEMMOD(5), MEMMOD(6), MEMMOD(7),
	MEMMOD(8), MEMMOD(9), MEMMOD(10), MEMMOD(11),
	MEMMOD(12), MEMMOD(13), MEMMOD(14), MEMMOD(15),
};

static const struct nvs_chip_window gb202_windows[] = {
	WIN(GB20X_CH(0), GB20X_DIE_LEN),
	WIN(GB202_MEM(0), GB202_MEM_LEN), WIN(GB202_MEM(1), GB202_MEM_LEN),
	WIN(GB202_MEM(2), GB202_MEM_LEN), WIN(GB202_MEM(3), GB202_MEM_LEN),
	WIN(GB202_MEM(4), GB202_MEM_LEN), WIN(GB202_MEM(5), GB202_MEM_LEN),
	WIN(GB202_MEM(6), GB202_MEM_LEN), WIN(GB202_MEM(7), GB202_MEM_LEN),
	WIN(GB202_MEM(8), GB202_MEM_LEN), WIN(GB202_MEM(9), GB202_MEM_LEN),
	WIN(GB202_MEM(10), GB202_MEM_LEN), WIN(GB202_MEM(11), GB202_MEM_LEN),
	WIN(GB202_MEM(12), GB202_MEM_LEN), WIN(GB202_MEM(13), GB202_MEM_LEN),
	WIN(GB202_MEM(14), GB202_MEM_LEN), WIN(GB202_MEM(15), GB202_MEM_LEN),
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

#define ADA_SENSORS(name, mem)						\
static const struct nvs_chip_sensor name##_sensors[] = {		\
	{ .label = "hotspot", .off = ADA_HOTSPOT,			\
	  .decode = NVS_DEC_ADA_HOTSPOT, .kind = NVS_KIND_DIE },	\
	{ .label = "mem", .off = mem,					\
	  .decode = NVS_DEC_ADA_MEM, .kind = NVS_KIND_MEM },		\
};									\
static const struct nvs_chip_window name##_windows[] = {		\
	WIN(ADA_HOTSPOT, 4), WIN(mem, 4),				\
}

ADA_SENSORS(ada, ADA_MEM);
ADA_SENSORS(ga104, GA104_MEM);

#define CHIP(var, n, sim, s, w)						\
static const struct nvs_chip var = {					\
	.name = n, .sim_name = sim,					\
	.sensors = s, .nsensors = ARRAY_SIZE(s),			\
	.windows = w, .nwindows = ARRAY_SIZE(w),			\
}

CHIP(chip_gb202, "gb202", "GeForce RTX 5090", gb202_sensors, gb202_windows);
CHIP(chip_gb203, "gb203", "GeForce RTX 5080", gb20x_sensors, gb20x_windows);
CHIP(chip_gb205, "gb205", "GeForce RTX 5070", gb20x_sensors, gb20x_windows);
CHIP(chip_ad102, "ad102", "GeForce RTX 4090", ada_sensors, ada_windows);
CHIP(chip_ad103, "ad103", "GeForce RTX 4080", ada_sensors, ada_windows);
CHIP(chip_ad104, "ad104", "GeForce RTX 4070", ada_sensors, ada_windows);
CHIP(chip_ad106, "ad106", "GeForce RTX 4070 Laptop", ada_sensors, ada_windows);
CHIP(chip_ad107, "ad107", "GeForce RTX 4060 Laptop", ada_sensors, ada_windows);
CHIP(chip_ga102, "ga102", "GeForce RTX 3090", ada_sensors, ada_windows);
CHIP(chip_ga106, "ga106", "RTX A2000", ada_sensors, ada_windows);
/* GA104 as the RTX 3070 has the junction register elsewhere; A4000 does not */
CHIP(chip_ga104, "ga104", "GeForce RTX 3070", ga104_sensors, ga104_windows);
CHIP(chip_ga104gl, "ga104gl", "RTX A4000", ada_sensors, ada_windows);

static const struct nvs_chip *const nvs_chips[] = {
	&chip_gb202, &chip_gb203, &chip_gb205,
	&chip_ad102, &chip_ad103, &chip_ad104, &chip_ad106, &chip_ad107,
	&chip_ga102, &chip_ga104, &chip_ga104gl, &chip_ga106,
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
	NV(0x26b1, chip_ad102, "RTX 6000 Ada Generation"),
	NV(0x26b9, chip_ad102, "L40S"),
	NV(0x2702, chip_ad103, "GeForce RTX 4080 SUPER"),
	NV(0x2704, chip_ad103, "GeForce RTX 4080"),
	NV(0x2705, chip_ad103, "GeForce RTX 4070 Ti SUPER"),
	NV(0x2782, chip_ad104, "GeForce RTX 4070 Ti"),
	NV(0x2783, chip_ad104, "GeForce RTX 4070 SUPER"),
	NV(0x2786, chip_ad104, "GeForce RTX 4070"),
	NV(0x27b8, chip_ad104, "L4"),
	NV(0x2860, chip_ad106, "GeForce RTX 4070 Max-Q / Mobile"),
	NV(0x28e0, chip_ad107, "GeForce RTX 4060 Max-Q / Mobile"),
	NV(0x2203, chip_ga102, "GeForce RTX 3090 Ti"),
	NV(0x2204, chip_ga102, "GeForce RTX 3090"),
	NV(0x2206, chip_ga102, "GeForce RTX 3080"),
	NV(0x2208, chip_ga102, "GeForce RTX 3080 Ti"),
	NV(0x2216, chip_ga102, "GeForce RTX 3080 LHR"),
	NV(0x2231, chip_ga102, "RTX A5000"),
	NV(0x2232, chip_ga102, "RTX A4500"),
	NV(0x2236, chip_ga102, "A10"),
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

/* GDDR MR4-style code: 2 °C steps from -40 °C; codes above 80 read as 80. */
#define GDDR7_CODE_MIN		21	/* 2 °C: below is a zeroed register */
#define GDDR7_CODE_MAX		80
#define GDDR7_VALID		GENMASK(27, 24)

static bool decode_gddr7_code(u32 raw, s32 *mc)
{
	u32 code = (raw >> 16) & 0xff;

	if (code < GDDR7_CODE_MIN)
		return false;
	code = min_t(u32, code, GDDR7_CODE_MAX);
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
	case NVS_DEC_GDDR7:
		if (vraw == ~0U || (vraw & GDDR7_VALID) != GDDR7_VALID)
			return false;
		return decode_gddr7_code(raw, mc);
	case NVS_DEC_GDDR7_BCAST:
		return decode_gddr7_code(raw, mc);
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
	}
	return false;
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
