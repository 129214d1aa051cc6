// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvsim: writes GPU sensor registers into a simulated GPU's register file,
 * the BAR of an ivshmem-plain device (tests/vm/run-vm). It works on the BAR
 * as the guest sees it (sysfs resourceN of a PCI device, -b) or on any
 * file, e.g. the host's backing file gpuN.bar (-f).
 *
 * Register facts: ARCHITECTURE.md "Chip recipes". Temperatures given on
 * the command line are in °C and are encoded exactly as the hardware would
 * (1/256 °C for die channels, 2 °C codes for GDDR7, 1/32 °C and whole °C for
 * the Ada registers).
 *
 * The "counter" pattern (for lossless-recording tests): tick k = 0, 1, ...
 * happens at start + k / hz on CLOCK_MONOTONIC (absolute deadlines, so no
 * drift), and writes raw = base + (k mod 0x2000) into the register (default
 * ch0, base 0x2000 = 32 °C). One step is 1/256 °C, so a die reading in
 * milli-degrees gives k back: k = round(mc * 256 / 1000) - base. The start
 * time and the tick count are printed; --log FILE records "k ns raw" per
 * tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* GB202 (Blackwell) */
#define GB_CH(n)	(0xad0a90u + 4 * (n))
#define GB_HWMAX	0xad0aa0u
#define GB_HWAVG	0xad0aa4u
/*
 * Memory: one block per frame-buffer partition (8 on GB202), data words at
 * +0x0/+0x4/+0x8/+0xc, status word at +0x10 (bit 24 + k: word k sampled).
 * DRAM chip n is chip n % 2 of partition n / 2, read from slots n % 2 and
 * n % 2 + 2; the clamshell back side's code is bits 31:24 (strap 0x900200
 * bit 22). kmod/chips.c, "Per-chip memory temperatures", has the sources.
 */
#define GB_PART(p)	(0x9024c0u + (p) * 0x4000u)
#define GB_WORD(p, k)	(GB_PART(p) + 4u * (k))
#define GB_STATUS(p)	(GB_PART(p) + 0x10u)
#define GB_NPART	8
#define GB_NCHIP	(2 * GB_NPART)
#define GB_BCAST	0x9a24c0u
#define GDDR7_VALID	0x0f000000u
#define DIE_VALID	0x40000000u	/* GB20x die word holds a sample */
#define NV_STRAP	0x900200u
#define NV_STRAP_CLAMSHELL 0x00400000u
/*
 * NV_PMC_BOOT_0, BAR0 + 0: the chip id in bits 28:20 selects the recipe
 * (kmod/chips.c, "The chip from PMC_BOOT_0", has the sources). Every
 * fixture writes its chip's id << 20; the revision nibbles (7:0) and
 * bit 8 are left 0.
 */
#define NV_BOOT0	0x0u
#define BOOT0(id)	((uint32_t)(id) << 20)

static const struct {
	const char *name;
	uint32_t id;
} chip_ids[] = {
	{ "gb202", 0x1b2 }, { "gb203", 0x1b3 }, { "gb205", 0x1b5 },
	{ "gb206", 0x1b6 }, { "gb207", 0x1b7 },	/* no recipe */
	{ "ad102", 0x192 }, { "ad103", 0x193 }, { "ad104", 0x194 },
	{ "ad106", 0x196 }, { "ad107", 0x197 },
	{ "ga102", 0x172 }, { "ga104", 0x174 }, { "ga106", 0x176 },
};

/* Ampere/Ada */
#define ADA_MEM		0xe2a8u
#define GA104_MEM	0xee50u
#define ADA_HOTSPOT	0x2046cu

static volatile uint32_t *regs;
static size_t regs_len;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("nvsim: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void wr(uint32_t off, uint32_t val)
{
	if (off % 4 || off + 4 > regs_len)
		die("offset 0x%x is outside the %zu-byte register file", off, regs_len);
	regs[off / 4] = val;
}

static uint32_t rd(uint32_t off)
{
	if (off % 4 || off + 4 > regs_len)
		die("offset 0x%x is outside the %zu-byte register file", off, regs_len);
	return regs[off / 4];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Encoders: °C to raw register values. */
static uint32_t die_raw(double c)
{
	long v = lround(c * 256.0);

	if (v < 0 || v > 0xffff)
		die("%.3f °C does not fit a die register", c);
	return DIE_VALID | (uint32_t)v;
}

static uint32_t gddr7_raw(double c)
{
	long code = lround((c + 40.0) / 2.0);

	if (code < 0 || code > 0xff)
		die("%.3f °C does not fit a GDDR7 code", c);
	return (uint32_t)code << 16;
}

struct reg_name {
	const char *name;
	uint32_t off;
	char kind;		/* d: die, m: GDDR7 module, a: Ada mem, h: Ada hotspot,
				   r: raw, b: boot0 (raw, or a chip name) */
};

static const struct reg_name reg_names[] = {
	{ "ch0", GB_CH(0), 'd' }, { "ch1", GB_CH(1), 'd' },
	{ "ch2", GB_CH(2), 'd' }, { "ch3", GB_CH(3), 'd' },
	{ "hotspot", GB_HWMAX, 'd' }, { "average", GB_HWAVG, 'd' },
	{ "mem", GB_BCAST, 'm' },
	{ "ada-mem", ADA_MEM, 'a' }, { "ga104-mem", GA104_MEM, 'a' },
	{ "ada-hotspot", ADA_HOTSPOT, 'h' },
	{ "strap", NV_STRAP, 'r' },
	{ "boot0", NV_BOOT0, 'b' },
};

/* Status bits of chip n's two slots. */
static uint32_t chip_bits(uint32_t n)
{
	return (1u << (24 + n % 2)) | (1u << (26 + n % 2));
}

/*
 * A register by name or offset: ch0, hotspot, ada-mem..., memN (chip N's
 * first slot word, +0x0 or +0x4 of partition N / 2), memN-valid (that
 * partition's status word), pP-wK (word K of partition P), pP-status.
 */
static uint32_t reg_lookup(const char *s, char *kind)
{
	char *end;
	unsigned long v;
	size_t i;

	for (i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++)
		if (!strcmp(s, reg_names[i].name)) {
			*kind = reg_names[i].kind;
			return reg_names[i].off;
		}
	if (!strncmp(s, "mem", 3) && s[3] >= '0' && s[3] <= '9') {
		v = strtoul(s + 3, &end, 10);
		if (v < GB_NCHIP && !*end) {
			*kind = 'm';
			return GB_WORD(v / 2, v % 2);
		}
		if (v < GB_NCHIP && !strcmp(end, "-valid")) {
			*kind = 'r';
			return GB_STATUS(v / 2);
		}
	}
	if (s[0] == 'p' && s[1] >= '0' && s[1] <= '9') {
		v = strtoul(s + 1, &end, 10);
		if (v < GB_NPART && !strcmp(end, "-status")) {
			*kind = 'r';
			return GB_STATUS(v);
		}
		if (v < GB_NPART && end[0] == '-' && end[1] == 'w' &&
		    end[2] >= '0' && end[2] <= '3' && !end[3]) {
			*kind = 'r';
			return GB_WORD(v, (uint32_t)(end[2] - '0'));
		}
	}
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || v > UINT32_MAX)
		die("unknown register `%s' (names: ch0..ch3 hotspot average mem mem0..mem15 mem0-valid p0-w0..p7-w3 p0-status strap ada-mem ga104-mem ada-hotspot boot0, or an offset)", s);
	*kind = 'r';
	return (uint32_t)v;
}

/* "set boot0 ad104": a chip name for its boot0 value, else a number. */
static uint32_t parse_boot0(const char *s);

static uint32_t parse_u32(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s || v > UINT32_MAX)
		die("not a 32-bit value: `%s'", s);
	return (uint32_t)v;
}

static uint32_t parse_boot0(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(chip_ids) / sizeof(chip_ids[0]); i++)
		if (!strcmp(s, chip_ids[i].name))
			return BOOT0(chip_ids[i].id);
	return parse_u32(s);
}

static double parse_c(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(v))
		die("not a temperature in °C: `%s'", s);
	return v;
}

/*
 * DRAM chip n reads c: its first slot holds the code (the back-side code in
 * bits 31:24 is kept), the status bit of that slot is set and the one of
 * the paired slot cleared, so that the hottest-slot rule shows exactly c.
 * A poisoned status word (absent partition) becomes a plain one.
 */
static void put_chip(uint32_t n, double c)
{
	uint32_t p = n / 2, k = n % 2, st = rd(GB_STATUS(p)), w = rd(GB_WORD(p, k));

	if (st == 0xffffffffu || (st & 0xffff0000u) == 0xbadf0000u)
		st = 0;
	if (w == 0xffffffffu || (w & 0xffff0000u) == 0xbadf0000u)
		w = 0;
	wr(GB_WORD(p, k), (w & 0xff000000u) | gddr7_raw(c));
	wr(GB_STATUS(p), (st | 1u << (24 + k)) & ~(1u << (26 + k)));
}

/* Writes temperature c into a named register, in that register's format. */
static void put_temp(uint32_t off, char kind, double c)
{
	long v;

	switch (kind) {
	case 'd':
		wr(off, die_raw(c));
		break;
	case 'm':
		if (off == GB_BCAST) {
			wr(off, gddr7_raw(c));
			break;
		}
		put_chip((off - GB_PART(0)) / 0x4000u * 2 + (off - GB_PART(0)) % 0x4000u / 4u, c);
		break;
	case 'a':
		v = lround(c * 32.0);
		if (v <= 0 || v >= 0xfff)
			die("%.3f °C does not fit the Ada memory register", c);
		wr(off, (uint32_t)v);
		break;
	case 'h':
		v = lround(c);
		if (v <= 0 || v > 0xff)
			die("%.3f °C does not fit the Ada hotspot register", c);
		wr(off, (uint32_t)v << 8);
		break;
	default:
		die("register 0x%x has no temperature format: use set", off);
	}
}

/*
 * Fixtures: exact raw values. tests/vm/t-thermal-*.sh checks the hwmon
 * values these imply; change both together.
 */
struct fixture_reg {
	uint32_t off;
	uint32_t val;
};

static const struct fixture_reg fix_gb202_die[] = {
	{ GB_CH(0), 0x40005a37 },	/* 90.21484375 °C, bit 30: sampled */
	{ GB_CH(1), 0x40a14f80 },	/* 79.5 °C, junk in 29:16 */
	{ GB_CH(2), 0x40004b1a },	/* 75.1015625 °C */
	{ GB_CH(3), 0x40004cf3 },	/* 76.94921875 °C */
	{ GB_HWMAX, 0x40005c40 },	/* 92.25 °C */
	{ GB_HWAVG, 0x40004f4d },	/* 79.30078125 °C */
};

/*
 * GB202 chips: chip n shows code 0x30 + n (56 + 2n °C) except n = 13, code
 * 0x5a, clamped to 80 (120 °C); chips 6 and 15 are absent (both their slots
 * read 0xBADFxxxx). For even n the paired slot (+0x8/+0xc) holds the code
 * and the first slot 3 codes less, for odd n the first slot holds it and
 * the paired one 1 less: the hottest slot wins either way. Bits 31:24 and
 * 15:0 carry junk that must be ignored (GB202 is read without back sides);
 * the status words carry junk in bits 23:0.
 */
static void gb202_chip(uint32_t n, uint32_t code)
{
	uint32_t p = n / 2, k = n % 2, lo = n & 1 ? code : code - 3,
		 hi = n & 1 ? code - 1 : code;

	wr(GB_WORD(p, k), (n & 1 ? 0x01000000u : 0) | lo << 16 | (0x1234u + n));
	wr(GB_WORD(p, k + 2), (n & 1 ? 0x01000000u : 0) | hi << 16 | (0x4321u + n));
}

static void fixture_gb202(void)
{
	size_t i;
	uint32_t n, p;

	for (i = 0; i < sizeof(fix_gb202_die) / sizeof(fix_gb202_die[0]); i++)
		wr(fix_gb202_die[i].off, fix_gb202_die[i].val);
	for (p = 0; p < GB_NPART; p++)
		wr(GB_STATUS(p), GDDR7_VALID | 0x5a5u);
	for (n = 0; n < GB_NCHIP; n++) {
		if (n == 6 || n == 15) {
			wr(GB_WORD(n / 2, n % 2), 0xbadf5040u + n);
			wr(GB_WORD(n / 2, n % 2 + 2), 0xbadf5040u + n);
			continue;
		}
		gb202_chip(n, n == 13 ? 0x5a : 0x30 + n);
	}
	wr(GB_BCAST, 0x005a0000u | 0x0042u);	/* hottest: 120 °C */
	wr(NV_STRAP, 0);
	wr(NV_BOOT0, BOOT0(0x1b2));		/* GB202 */
}

/*
 * "gb202-layout": every rule of the per-chip layout, one partition each
 * (t-thermal-layout.sh checks what these imply). Chip: value.
 *   p0  status 0x0f  mem0 = 64 (+0x8 hotter than +0x0), mem1 = 60 (+0x4)
 *   p1  status 0x05  mem2 = 72, mem3 shown without a number (no bit)
 *   p2  status 0x0f  mem4 = 76 (+0x0 poisoned, +0x8 read),
 *                    mem5 none (code 0xff at +0x4, data 0 at +0xc)
 *   p3  status 0xbadf1f00 (poisoned, bits 25 and 27 set): mem6, mem7 hidden
 *   p4  every word 0xBADFxxxx: mem8, mem9 hidden
 *   p5  mem10 = 120 (code 0x5a clamped), mem11 none (code 0, code 0x14)
 *   p6  mem12 = 50 (junk in 31:24 and 15:0), mem13 = 2 (code 0x15; +0xc
 *       all-ones)
 *   p7  status 0x0a  mem14 shown without a number, mem15 = 90 (+0xc)
 *   mem = 120 (the hottest chip; the broadcast register says 56)
 */
static void fixture_gb202_layout(void)
{
	static const uint32_t part[GB_NPART][5] = {
		{ 0x00300000u, 0x00320000u, 0x00340000u, 0x00310000u, 0x0f000000u },
		{ 0x00380000u, 0x00400000u, 0x00360000u, 0x00400000u, 0x05000000u },
		{ 0xbadf0004u, 0x00ff0000u, 0x003a0000u, 0x00000000u, 0x0f000000u },
		{ 0x00300000u, 0x00300000u, 0x00300000u, 0x00300000u, 0xbadf1f00u },
		{ 0xbadf0008u, 0xbadf0009u, 0xbadf000au, 0xbadf000bu, 0x0f000000u },
		{ 0x005a0000u, 0x00001234u, 0x00300000u, 0x00140000u, 0x0f000000u },
		{ 0xa52d1234u, 0x00150000u, 0x002c0000u, 0xffffffffu, 0x0f000000u },
		{ 0x00500000u, 0x00400000u, 0x00500000u, 0x00410000u, 0x0a000000u },
	};
	uint32_t p, k;

	fixture_gb202();
	for (p = 0; p < GB_NPART; p++) {
		for (k = 0; k < 4; k++)
			wr(GB_WORD(p, k), part[p][k]);
		wr(GB_STATUS(p), part[p][4]);
	}
	wr(GB_BCAST, 0x00300000u);
}

/*
 * Ada/Ampere: hotspot 75 °C, memory junction 86.40625 °C (0xacd / 32).
 * Every memory partition reads 0xBADFxxxx: a board without module sensors
 * (and no leftovers of another fixture in the same file).
 */
static void fixture_ada(void)
{
	uint32_t p, k;

	wr(ADA_HOTSPOT, 0x00004b00u | 0x12u);
	wr(ADA_MEM, 0x50000acdu);
	wr(GA104_MEM, 0x50000acdu);
	for (p = 0; p < GB_NPART; p++) {
		for (k = 0; k < 4; k++)
			wr(GB_WORD(p, k), 0xbadf5040u + p);
		wr(GB_STATUS(p), 0xbadf5040u);
	}
	wr(NV_STRAP, 0);
	wr(GB_BCAST, 0xbadf5040u);
	/* AD102: the ad102/ad102gl sims; others set boot0 to their chip */
	wr(NV_BOOT0, BOOT0(0x192));
}

/*
 * "ada-g6x": an AD102 GDDR6X board (6 partitions, 12 chips, no back side)
 * with one chip per validity edge case of kmod/chips.c ("Per-chip memory
 * temperatures"); t-review-modules.sh checks the values these imply. The
 * chips it poisons later (0, 1, 6, 9, 10, 11) are sampled in one slot
 * only, so poisoning that slot (set memN) takes the chip's number away.
 *   chip  slots (status bits)           expected
 *   0     +0x0 code 0x40                88 °C
 *   1     +0x4 code 0x38                72 °C
 *   2     none sampled                  ENODATA
 *   3     +0x4 code 0xff, +0xc code 20  ENODATA (0xff; below 21)
 *   4     +0x0 data 0, +0x8 code 0      ENODATA
 *   5     +0x4 code 20, +0xc code 0xff  ENODATA
 *   6     +0x0 code 0x5a                120 °C (clamped at code 80)
 *   7     +0x4 0xbadf0007, +0xc ~0      hidden (every slot dead)
 *   8     +0x0, +0x8 0xBADFxxxx         hidden
 *   9     +0x4 code 0x15                2 °C (lowest valid code)
 *   10    +0x0 0xa52d1234               50 °C (junk in 31:24, 15:0)
 *   11    +0x4 code 0x33                62 °C
 *   partitions 6, 7 absent (status 0xBADFxxxx; beyond AD102's 6)
 */
static void fixture_ada_g6x(void)
{
	static const uint32_t part[GB_NPART][5] = {
		{ 0x00400000u, 0x00380000u, 0x003e0000u, 0x00000000u, 0x030005a5u },
		{ 0x00300000u, 0x00ff0000u, 0x00300000u, 0x00140000u, 0x0a000000u },
		{ 0x00000000u, 0x00140000u, 0x00001234u, 0x00ff1234u, 0x0f000000u },
		{ 0x005a0000u, 0xbadf0007u, 0x00300000u, 0xffffffffu, 0x0b000000u },
		{ 0xbadf0008u, 0x00150000u, 0xbadf0108u, 0x00140000u, 0x07000000u },
		{ 0xa52d1234u, 0x00330000u, 0x00200000u, 0x00200000u, 0x030005a5u },
		{ 0xbadf0006u, 0xbadf0006u, 0xbadf0006u, 0xbadf0006u, 0xbadf5040u },
		{ 0xbadf0007u, 0xbadf0007u, 0xbadf0007u, 0xbadf0007u, 0xbadf5040u },
	};
	uint32_t p, k;

	fixture_ada();
	for (p = 0; p < GB_NPART; p++) {
		for (k = 0; k < 4; k++)
			wr(GB_WORD(p, k), part[p][k]);
		wr(GB_STATUS(p), part[p][4]);
	}
}

/*
 * "ga102-clam": a GA102 clamshell board (RTX 3090: strap 0x900200 bit 22,
 * 24 chips); back-side codes in bits 31:24. t-thermal-layout.sh checks:
 *   p0  mem0 = 64, mem0b = 84 (+0x8's back), mem1 = 62 (+0xc), mem1b = 60
 *   p1  status 0x05: mem2 = 72, mem2b = 88; mem3, mem3b no number
 *   p2  mem4 = 68, mem4b none (back codes 0xff and 0); mem5 = 76,
 *       mem5b = 120 (code 0x5a clamped)
 *   p3  status 0xBADFxxxx: mem6, mem7 and their back sides hidden
 *   p4  mem8 = 46, mem8b = 44; mem9 = 54, mem9b = 56 (+0xc poisoned)
 *   p5  every word 0xBADFxxxx: mem10, mem11 and back sides hidden
 * With the strap bit clear the same words show the front chips only.
 */
static void fixture_ga102_clam(void)
{
	static const uint32_t part[6][5] = {
		{ 0x3c300000u, 0x32310000u, 0x3e340000u, 0x00330000u, 0x0f000000u },
		{ 0x40380000u, 0x30300000u, 0x00300000u, 0x30300000u, 0x05000000u },
		{ 0xff360000u, 0x5a3a0000u, 0x00350000u, 0x00000000u, 0x0f000000u },
		{ 0x30300000u, 0x30300000u, 0x30300000u, 0x30300000u, 0xbadf5040u },
		{ 0x2a2b0000u, 0x302f0000u, 0x00000000u, 0xbadf0003u, 0x0f000000u },
		{ 0xbadf0010u, 0xbadf0011u, 0xbadf0012u, 0xbadf0013u, 0x0f000000u },
	};
	uint32_t p, k;

	fixture_ada();
	for (p = 0; p < 6; p++) {
		for (k = 0; k < 4; k++)
			wr(GB_WORD(p, k), part[p][k]);
		wr(GB_STATUS(p), part[p][4]);
	}
	wr(NV_STRAP, NV_STRAP_CLAMSHELL | 0x13u);	/* junk in other bits */
	wr(NV_BOOT0, BOOT0(0x172));			/* GA102 */
}

/* "gb202-full": the gb202 fixture with all 16 chips present (56 + 2n °C). */
static void fixture_gb202_full(void)
{
	fixture_gb202();
	gb202_chip(6, 0x30u + 6);
	gb202_chip(15, 0x30u + 15);
}

/* Every register any recipe reads. */
static void fill_all(uint32_t val, bool validity)
{
	uint32_t p;
	int i;

	for (i = 0; i < 4; i++)
		wr(GB_CH(i), val);
	wr(GB_HWMAX, val);
	wr(GB_HWAVG, val);
	for (p = 0; p < GB_NPART; p++) {
		for (i = 0; i < 4; i++)
			wr(GB_WORD(p, i), val);
		if (validity)
			wr(GB_STATUS(p), val);
	}
	wr(GB_BCAST, val);
	wr(NV_STRAP, val);
	wr(ADA_MEM, val);
	wr(GA104_MEM, val);
	wr(ADA_HOTSPOT, val);
}

static void dump(void)
{
	static const char *const die_names[] = { "ch0", "ch1", "ch2", "ch3", "hotspot", "average" };
	uint32_t raw, v, p;
	int i;

	for (i = 0; i < 6; i++) {
		raw = rd(GB_CH(0) + 4 * i);
		printf("%-8s 0x%06x 0x%08x %.8g\n", die_names[i], GB_CH(0) + 4 * i, raw,
		       (raw & 0xffff) / 256.0);
	}
	/* raw words: the layout is the kernel's to decode, not the dump's */
	for (p = 0; p < GB_NPART; p++) {
		v = rd(GB_STATUS(p));
		printf("p%-7u 0x%06x", p, GB_PART(p));
		for (i = 0; i < 4; i++) {
			raw = rd(GB_WORD(p, i));
			printf(" 0x%08x", raw);
		}
		printf(" status 0x%08x\n", v);
	}
	printf("%-8s 0x%06x 0x%08x\n", "strap", NV_STRAP, rd(NV_STRAP));
	raw = rd(GB_BCAST);
	printf("%-8s 0x%06x 0x%08x\n", "mem", GB_BCAST, raw);
	printf("%-8s 0x%06x 0x%08x\n", "ada-mem", ADA_MEM, rd(ADA_MEM));
	printf("%-8s 0x%06x 0x%08x\n", "ada-hot", ADA_HOTSPOT, rd(ADA_HOTSPOT));
}

struct opts {
	double hz, seconds, ms, value, from, to;
	uint32_t base;
	const char *reg, *log;
	bool have_value;
};

static void parse_opts(int argc, char *argv[], struct opts *o)
{
	static const struct option lo[] = {
		{ "hz", required_argument, NULL, 'z' },
		{ "seconds", required_argument, NULL, 's' },
		{ "ms", required_argument, NULL, 'm' },
		{ "value", required_argument, NULL, 'v' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "base", required_argument, NULL, 'b' },
		{ "reg", required_argument, NULL, 'r' },
		{ "log", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'z': o->hz = parse_c(optarg); break;
		case 's': o->seconds = parse_c(optarg); break;
		case 'm': o->ms = parse_c(optarg); break;
		case 'v': o->value = parse_c(optarg); o->have_value = true; break;
		case 'f': o->from = parse_c(optarg); break;
		case 't': o->to = parse_c(optarg); break;
		case 'b': o->base = parse_u32(optarg); break;
		case 'r': o->reg = optarg; break;
		case 'l': o->log = optarg; break;
		default: exit(2);
		}
	}
	if (optind != argc)
		die("unexpected argument `%s'", argv[optind]);
	if (o->hz <= 0 || o->hz > 10000)
		die("--hz must be in (0, 10000]");
	if (o->seconds < 0 || o->ms < 0)
		die("durations must not be negative");
}

static void cmd_spike(struct opts *o)
{
	char kind;
	uint32_t off = reg_lookup(o->reg, &kind), old = rd(off), old_max = rd(GB_HWMAX);
	uint64_t t0;

	if (!o->have_value)
		die("spike needs --value CELSIUS");
	t0 = now_ns();
	put_temp(off, kind, o->value);
	/* the hardware maximum follows a die spike, as on the real chip */
	if (kind == 'd' && off != GB_HWMAX)
		put_temp(GB_HWMAX, 'd', o->value);
	sleep_until(t0 + (uint64_t)(o->ms * 1e6));
	wr(off, old);
	if (kind == 'd' && off != GB_HWMAX)
		wr(GB_HWMAX, old_max);
	printf("spike %s %.4g °C from %llu to %llu ns\n", o->reg, o->value,
	       (unsigned long long)t0, (unsigned long long)now_ns());
}

static void cmd_ramp(struct opts *o)
{
	char kind;
	uint32_t off = reg_lookup(o->reg, &kind);
	uint64_t t0 = now_ns(), period = (uint64_t)(1e9 / o->hz), k, n;

	n = (uint64_t)(o->seconds * o->hz);
	for (k = 0; k <= n; k++) {
		sleep_until(t0 + k * period);
		put_temp(off, kind, o->from + (o->to - o->from) * (n ? (double)k / n : 1.0));
	}
	printf("ramp %s %.4g..%.4g °C, %llu steps\n", o->reg, o->from, o->to,
	       (unsigned long long)n + 1);
}

static void cmd_counter(struct opts *o)
{
	char kind;
	uint32_t off = reg_lookup(o->reg, &kind), raw = 0;
	uint64_t t0, period = (uint64_t)(1e9 / o->hz), k, n, t;
	FILE *log = NULL;

	if (kind != 'd')
		die("counter needs a die register (ch0..ch3, hotspot, average)");
	if (o->base + 0x2000u > 0xffff)
		die("--base leaves no room for the counter");
	if (o->log && !(log = fopen(o->log, "w")))
		die("Unable to open `%s': %s", o->log, strerror(errno));
	n = (uint64_t)(o->seconds * o->hz);
	t0 = now_ns() + 1000000;
	printf("counter %s off 0x%x base 0x%x hz %g ticks %llu start_ns %llu\n", o->reg, off,
	       o->base, o->hz, (unsigned long long)n, (unsigned long long)t0);
	fflush(stdout);
	for (k = 0; k < n; k++) {
		sleep_until(t0 + k * period);
		raw = o->base + (uint32_t)(k % 0x2000);
		/* the log keeps the count; a die register also says "sampled" */
		wr(off, kind == 'd' ? DIE_VALID | raw : raw);
		if (log) {
			t = now_ns();
			fprintf(log, "%llu %llu %u\n", (unsigned long long)k,
				(unsigned long long)t, raw);
		}
	}
	if (log && fclose(log))
		die("Unable to write `%s': %s", o->log, strerror(errno));
	printf("counter done ticks %llu last_raw 0x%x end_ns %llu\n", (unsigned long long)n, raw,
	       (unsigned long long)now_ns());
}

/*
 * A changing load for the demo: the die heats and cools on a 12 s cycle,
 * with 50 ms pulses on ch0 every 2 s (the kind NVML averages away), the
 * hardware max and average follow the channels, and the memory heats
 * slowly behind the die.
 */
static void cmd_load(struct opts *o)
{
	uint64_t t0 = now_ns(), period = (uint64_t)(1e9 / o->hz), k, n;
	double t, load, ch[4], mx, sum, pulse;
	int i;
	uint32_t p;

	n = o->seconds > 0 ? (uint64_t)(o->seconds * o->hz) : UINT64_MAX;
	for (k = 0; k < n; k++) {
		sleep_until(t0 + k * period);
		t = (double)k / o->hz;
		load = 0.5 - 0.5 * cos(2 * M_PI * t / 12.0);
		pulse = fmod(t, 2.0) < 0.05 ? 14.0 : 0.0;
		mx = 0;
		sum = 0;
		for (i = 0; i < 4; i++) {
			ch[i] = 45.0 + 50.0 * load + 2.5 * sin(t * 3.1 + i) + (i == 0 ? 6.0 * load + pulse : 0);
			if (ch[i] > mx)
				mx = ch[i];
			sum += ch[i];
			put_temp(GB_CH(i), 'd', ch[i]);
		}
		put_temp(GB_HWMAX, 'd', mx + 1.25);
		put_temp(GB_HWAVG, 'd', sum / 4);
		for (p = 0; p < GB_NCHIP; p++)
			put_chip(p, 50.0 + 30.0 * load + (p % 4) * 2.0);
		put_temp(GB_BCAST, 'm', 50.0 + 30.0 * load + 6.0);
	}
}

static void usage(FILE *f)
{
	fputs("Usage: nvsim [-B BAR] {-b BDF | -f FILE}... COMMAND [ARGS]\n"
	      "  -b BDF     the guest's /sys/bus/pci/devices/BDF/resourceBAR (-B, default 2)\n"
	      "  -f FILE    a register file, e.g. the host's gpuN.bar\n"
	      "  (-b and -f repeat: one-shot commands then apply to every file)\n"
	      "Commands:\n"
	      "  fixture NAME           exact known raw values (see the source for the tables):\n"
	      "                         gb202, gb202-full (all 16 chips), gb202-layout,\n"
	      "                         ada, ada-g6x, ga102-clam\n"
	      "  set REG VALUE          write a raw 32-bit value (boot0: or a chip\n"
	      "                         name, gb202 ad104 ga102 ..., for its id << 20)\n"
	      "  get REG                print a raw value\n"
	      "  temp REG CELSIUS       write a temperature in REG's format (GDDR7: with validity)\n"
	      "  ramp [--reg ch0] --from C --to C --seconds S [--hz 50]\n"
	      "  spike [--reg ch0] --value C [--ms 60]     (raises hotspot too)\n"
	      "  counter [--reg ch0] [--hz 50] [--seconds 30] [--base 0x2000] [--log FILE]\n"
	      "  load [--seconds S] [--hz 20]              changing load for the demo (0: forever)\n"
	      "  allones | poison       every sensor register reads 0xffffffff / 0xbadf1234\n"
	      "  validity-off [N]       clear the status bits of chip N's slots (default: all)\n"
	      "  zero                   clear every sensor register\n"
	      "  dump                   the GB202 die values and the raw partition words\n"
	      "REG: ch0..ch3 hotspot average mem mem0..mem15 (chip N's first slot)\n"
	      "     mem0-valid..mem15-valid (its partition's status) p0-w0..p7-w3\n"
	      "     p0-status..p7-status strap ada-mem ga104-mem ada-hotspot,\n"
	      "     boot0 (NV_PMC_BOOT_0, offset 0), or an offset\n"
	      "Exit status: 0 done, 1 error, 2 usage.\n", f);
}

static int run(const char *file, bool is_dev, int argc, char *argv[]);

#define MAX_TARGETS 16

int main(int argc, char *argv[])
{
	const char *targets[MAX_TARGETS];
	bool is_dev[MAX_TARGETS];
	char paths[MAX_TARGETS][256];
	int bar = 2, c, n = 0, i, j, rc = 0;

	while ((c = getopt(argc, argv, "+b:f:B:h")) != -1) {
		switch (c) {
		case 'b':
		case 'f':
			if (n == MAX_TARGETS)
				die("at most %d register files", MAX_TARGETS);
			is_dev[n] = c == 'b';
			targets[n++] = optarg;
			break;
		case 'B': bar = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc || !n) {
		usage(stderr);
		return 2;
	}
	if (bar < 0 || bar > 5)
		die("bad BAR number %d", bar);
	for (i = 0; i < n; i++) {
		if (!is_dev[i])
			continue;
		if (strchr(targets[i], '/'))
			die("bad PCI address `%s'", targets[i]);
		snprintf(paths[i], sizeof(paths[i]), "/sys/bus/pci/devices/%s/resource%d",
			 targets[i], bar);
		targets[i] = paths[i];
	}
	/* Timed commands run on the first file only. */
	if (n > 1)
		for (j = 0; j < 5; j++)
			if (!strcmp(argv[optind], (const char *[]){ "spike", "ramp", "counter", "load", "get" }[j]))
				die("%s works on one register file at a time", argv[optind]);
	for (i = 0; i < n; i++)
		rc |= run(targets[i], is_dev[i], argc - optind, argv + optind);
	return rc;
}

static int run(const char *file, bool is_dev, int argc, char *argv[])
{
	const char *cmd = argv[0];
	char kind;
	int fd;
	struct stat st;
	void *map;
	struct opts o = { .hz = 50, .seconds = 30, .ms = 60, .from = 40, .to = 100,
			  .base = 0x2000, .reg = "ch0" };

	fd = open(file, O_RDWR);
	if (fd < 0)
		die("Unable to open `%s': %s", file, strerror(errno));
	if (fstat(fd, &st) || st.st_size < 0x1000000)
		die("`%s' is not a 16 MiB register file", file);
	regs_len = st.st_size;
	map = mmap(NULL, regs_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("Unable to map `%s': %s", file, strerror(errno));
	close(fd);
	regs = map;

	if (!strcmp(cmd, "fixture")) {
		if (argc != 2)
			die("fixture needs a name: gb202, gb202-full, gb202-layout, ada, ada-g6x or ga102-clam");
		if (!strcmp(argv[1], "gb202"))
			fixture_gb202();
		else if (!strcmp(argv[1], "gb202-full"))
			fixture_gb202_full();
		else if (!strcmp(argv[1], "ada"))
			fixture_ada();
		else if (!strcmp(argv[1], "gb202-layout"))
			fixture_gb202_layout();
		else if (!strcmp(argv[1], "ada-g6x"))
			fixture_ada_g6x();
		else if (!strcmp(argv[1], "ga102-clam"))
			fixture_ga102_clam();
		else
			die("unknown fixture `%s' (gb202, gb202-full, gb202-layout, ada, ada-g6x, ga102-clam)", argv[1]);
	} else if (!strcmp(cmd, "set")) {
		if (argc != 3)
			die("set needs REG VALUE");
		uint32_t off = reg_lookup(argv[1], &kind);

		wr(off, kind == 'b' ? parse_boot0(argv[2]) : parse_u32(argv[2]));
	} else if (!strcmp(cmd, "get")) {
		if (argc != 2)
			die("get needs REG");
		printf("0x%08x\n", rd(reg_lookup(argv[1], &kind)));
	} else if (!strcmp(cmd, "temp")) {
		if (argc != 3)
			die("temp needs REG CELSIUS");
		uint32_t off = reg_lookup(argv[1], &kind);
		put_temp(off, kind, parse_c(argv[2]));
	} else if (!strcmp(cmd, "spike")) {
		parse_opts(argc, argv, &o);
		cmd_spike(&o);
	} else if (!strcmp(cmd, "ramp")) {
		parse_opts(argc, argv, &o);
		cmd_ramp(&o);
	} else if (!strcmp(cmd, "counter")) {
		parse_opts(argc, argv, &o);
		cmd_counter(&o);
	} else if (!strcmp(cmd, "load")) {
		o.hz = 20;
		o.seconds = 0;
		parse_opts(argc, argv, &o);
		cmd_load(&o);
	} else if (!strcmp(cmd, "allones")) {
		fill_all(0xffffffffu, true);
	} else if (!strcmp(cmd, "poison")) {
		fill_all(0xbadf1234u, true);
	} else if (!strcmp(cmd, "zero")) {
		fill_all(0, true);
	} else if (!strcmp(cmd, "validity-off")) {
		uint32_t n, first = 0, last = GB_NCHIP - 1;

		if (argc == 2) {
			first = last = parse_u32(argv[1]);
			if (first >= GB_NCHIP)
				die("chip %u does not exist (0..15)", first);
		} else if (argc > 2) {
			die("validity-off takes at most one chip number");
		}
		for (n = first; n <= last; n++)
			wr(GB_STATUS(n / 2), rd(GB_STATUS(n / 2)) & ~chip_bits(n));
	} else if (!strcmp(cmd, "dump")) {
		dump();
	} else {
		fprintf(stderr, "nvsim: unknown command `%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	/* a file (the host's backing file) must reach QEMU's mapping now */
	if (!is_dev && msync(map, regs_len, MS_SYNC))
		die("Unable to sync `%s': %s", file, strerror(errno));
	munmap(map, regs_len);
	return 0;
}
