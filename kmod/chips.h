/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chip recipes: which registers of which BAR hold which temperature, and how
 * to decode them. A recipe is data; the sampler and hwmon only walk it.
 */
#ifndef _NVS_CHIPS_H
#define _NVS_CHIPS_H

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
	NVS_KIND_MODULE,	/* one memory module, may be absent */
	NVS_KIND_MODULE_MAX,	/* hottest module; register = fallback */
};

struct nvs_chip_sensor {
	const char *label;
	u32 off;		/* data register, BAR offset */
	u32 valid_off;		/* validity register (NVS_DEC_MR) */
	u8 decode;		/* enum nvs_decode */
	u8 kind;		/* enum nvs_kind */
};

struct nvs_chip_window {
	u32 off;
	u32 len;
};

struct nvs_chip {
	const char *name;		/* recipe name, also the sim= chip */
	const char *sim_name;		/* marketing name for sim= devices */
	const struct nvs_chip_sensor *sensors;
	unsigned int nsensors;
	const struct nvs_chip_window *windows;
	unsigned int nwindows;
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

/*
 * Pure decode: raw data register (and validity register for NVS_DEC_MR) to
 * milli-degrees. Returns false, leaving *mc alone, when the value is not a
 * temperature: all-ones, 0xBADFxxxx poison, validity bits off, or outside
 * the plausible range of the format.
 */
bool nvs_decode(enum nvs_decode dec, u32 raw, u32 vraw, s32 *mc);

/* 0xBADFxxxx: the memory partition does not exist on this board. */
static inline bool nvs_raw_poison(u32 raw)
{
	return (raw & 0xffff0000) == 0xbadf0000;
}

#endif /* _NVS_CHIPS_H */
