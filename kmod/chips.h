/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chip recipes: which registers of which BAR hold which temperature, and how
 * to decode them. A recipe is data; the sampler and hwmon only walk it.
 */
#ifndef _NVS_CHIPS_H
#define _NVS_CHIPS_H

#include <linux/bits.h>
#include <linux/types.h>

/* How a raw register value becomes milli-degrees Celsius. */
enum nvs_decode {
	NVS_DEC_FIX8,		/* low 16 bits, 1/256 °C (Blackwell die) */
	NVS_DEC_MR,		/* GDDR6X/7 MR code in bits 23:16 + validity */
	NVS_DEC_MR_BCAST,	/* same code, no validity word */
	NVS_DEC_ADA_MEM,	/* bits 11:0, 1/32 °C (Ampere/Ada junction) */
	NVS_DEC_ADA_HOTSPOT,	/* bits 15:8, whole °C */
	__NVS_DEC_LAST
};

/*
 * When a sensor is read. Die sensors are read on every pass; memory sensors
 * change slowly and are read at most mem_hz times a second (sampler.c).
 */
enum nvs_kind {
	NVS_KIND_DIE,
	NVS_KIND_MEM,		/* one memory register */
	NVS_KIND_MODULE,	/* one DRAM chip (part, chip, back), may be absent */
	NVS_KIND_MODULE_MAX,	/* hottest module; register = fallback */
};

/* Memory partitions a recipe may name: GB202's 512-bit bus / 64. */
#define NVS_MAX_PARTS		8

struct nvs_chip_sensor {
	const char *label;
	u32 off;		/* data register, BAR offset */
	u32 valid_off;		/* validity register (NVS_DEC_MR) */
	u8 decode;		/* enum nvs_decode */
	u8 kind;		/* enum nvs_kind */
	u8 part;		/* NVS_KIND_MODULE: frame-buffer partition */
	u8 chip;		/* NVS_KIND_MODULE: DRAM chip 0 or 1 of it */
	bool back;		/* NVS_KIND_MODULE: clamshell back side */
};

struct nvs_chip_window {
	u32 off;
	u32 len;
};

struct nvs_chip {
	const char *name;		/* recipe name, also the sim= chip */
	const char *sim_name;		/* marketing name for sim= devices */
	/*
	 * NV_PMC_BOOT_0 bits 28:20 (chips.c, "The chip from PMC_BOOT_0").
	 * A professional variant ("ad102gl") has its GeForce chip's id: the
	 * PCI id picks the variant, the chip id only checks it.
	 */
	u16 chip_id;
	const struct nvs_chip_sensor *sensors;
	unsigned int nsensors;
	const struct nvs_chip_window *windows;
	unsigned int nwindows;
	unsigned int nparts;		/* memory partitions read, <= NVS_MAX_PARTS */
	u32 strap_off;			/* clamshell strap register, 0: none */
};

struct nvs_chip_id {
	u16 vendor;
	u16 device;
	const struct nvs_chip *chip;
	const char *name;		/* marketing name */
};

/* PCI ids handled without sim=, terminated by a zero vendor. */
extern const struct nvs_chip_id nvs_chip_ids[];

const struct nvs_chip *nvs_chip_by_name(const char *name);
const struct nvs_chip_id *nvs_chip_by_id(u16 vendor, u16 device);
const char *nvs_chip_id_name(u16 chip_id);

/*
 * NV_PMC_BOOT_0, BAR0 + 0. The chip id of a boot0 value, or
 * NVS_BOOT0_NONE when the value carries none (0, all-ones, 0xBADFxxxx:
 * zeroed on chips that report through NV_PMC_BOOT_42, or not answering),
 * or NVS_BOOT0_FUTURE when bit 8 says the architecture is beyond bits
 * 28:24 (no recipe can match it).
 */
#define NVS_PMC_BOOT_0		0x0
#define NVS_BOOT0_NONE		0xffff
#define NVS_BOOT0_FUTURE	0xfffe
u16 nvs_boot0_chip_id(u32 boot0);
u16 nvs_boot0_field(u32 boot0);		/* bits 28:20 as they are */
/* The default (GeForce) recipe of a chip id; NULL if there is none. */
const struct nvs_chip *nvs_chip_by_chip_id(u16 chip_id);

/*
 * Pure decode: raw data register (and validity register for NVS_DEC_MR) to
 * milli-degrees. Returns false, leaving *mc alone, when the value is not a
 * temperature: all-ones, 0xBADFxxxx poison, validity bits off, or outside
 * the plausible range of the format.
 */
bool nvs_decode(enum nvs_decode dec, u32 raw, u32 vraw, s32 *mc);

/* Word k (0..3) of partition p's memory block, and its status word. */
u32 nvs_mem_word(unsigned int part, unsigned int k);
u32 nvs_mem_status(unsigned int part);

/* The slots (data words) a DRAM chip is read from: chip and chip + 2. */
#define NVS_CHIP_SLOTS(chip)	(BIT(chip) | BIT((chip) + 2))

enum nvs_module_state {
	NVS_MODULE_OK,		/* *mc is the chip's temperature */
	NVS_MODULE_INVALID,	/* there, but no slot holds a reading */
	NVS_MODULE_ABSENT,	/* the partition or chip is not on the board */
	/*
	 * sampler.c only, never from nvs_decode_module(): the status word of
	 * a partition that answered before reads all-ones now.
	 */
	NVS_MODULE_DEAD,
};

/*
 * Pure decode of one DRAM chip from its partition's status word and the
 * data words in w[] whose bit is set in have (bit k: word k was read).
 * The caller reads only the words of the chip's slots whose status bit is
 * set; an unread word is never looked at.
 */
enum nvs_module_state nvs_decode_module(u32 status, const u32 w[4], u8 have,
					unsigned int chip, bool back, s32 *mc);

/* Whether the clamshell strap value says the board has back-side chips. */
bool nvs_strap_clamshell(u32 strap);

/* 0xBADFxxxx: the memory partition does not exist on this board. */
static inline bool nvs_raw_poison(u32 raw)
{
	return (raw & 0xffff0000) == 0xbadf0000;
}

#endif /* _NVS_CHIPS_H */
