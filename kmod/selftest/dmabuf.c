// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the PCI bus id parser used for NVS_A_DMABUF_IMPORTER
 * (strict: pci_name() forms only) and of the walk's run merging, built
 * with NVS_SELFTEST, run at load.
 */

struct nvs_busid_case {
	const char *id;
	int ret;
	u32 domain, bus, devfn;
};

static const struct nvs_busid_case nvs_busid_cases[] __initconst = {
	{ "0000:01:00.0", 0, 0, 0x01, PCI_DEVFN(0, 0) },
	{ "01:00.0", 0, 0, 0x01, PCI_DEVFN(0, 0) },
	{ "0000:ff:1f.7", 0, 0, 0xff, PCI_DEVFN(0x1f, 7) },
	{ "0000:0A:0b.3", 0, 0, 0x0a, PCI_DEVFN(0x0b, 3) },
	{ "10000:e1:00.1", 0, 0x10000, 0xe1, PCI_DEVFN(0, 1) },	/* VMD */
	{ "fffffff:00:00.0", 0, 0x0fffffff, 0, 0 },	/* 7 digits: the most */
	{ "ffffffff:00:00.0", -EINVAL },	/* 8: over NVS_BUSID_LEN (N21) */
	{ "0000:00:20.0", -EINVAL },	/* device 0x20 */
	{ "00:1f.8", -EINVAL },		/* function 8 */
	{ " 0000:00:01.0", -EINVAL },
	{ "0000:00:01.0x", -EINVAL },
	{ "0000:00:01.0 ", -EINVAL },
	{ "+0000:00:01.0", -EINVAL },
	{ "000:00:01.0", -EINVAL },	/* 3-digit domain */
	{ "0:00:00.0", -EINVAL },
	{ "1:00.0", -EINVAL },		/* 1-digit bus */
	{ "0000:0:01.0", -EINVAL },
	{ "0000:01:00", -EINVAL },
	{ "0000:01:00.", -EINVAL },
	{ "123456789:00:00.0", -EINVAL },	/* 9-digit domain */
	{ "0000:001:00.0", -EINVAL },
	{ "0x00:01:00.0", -EINVAL },
	{ "serial8250", -EINVAL },
	{ "", -EINVAL },
};

bool __init nvs_selftest_busid(void)
{
	unsigned int i;
	bool pass = true;

	for (i = 0; i < ARRAY_SIZE(nvs_busid_cases); i++) {
		const struct nvs_busid_case *c = &nvs_busid_cases[i];
		u32 domain = ~0U, bus = ~0U, devfn = ~0U;
		int ret = nvs_parse_busid(c->id, &domain, &bus, &devfn);

		if (ret != c->ret ||
		    (!ret && (domain != c->domain || bus != c->bus ||
			      devfn != c->devfn))) {
			pr_err("bus id self-test %u `%s': got %d %x:%02x:%02x, want %d %x:%02x:%02x\n",
			       i + 1, c->id, ret, domain, bus, devfn, c->ret,
			       c->domain, c->bus, c->devfn);
			pass = false;
		}
	}
	if (pass)
		pr_info("bus id self-tests (%zu cases): pass\n",
			ARRAY_SIZE(nvs_busid_cases));
	return pass;
}

/*
 * Run merging in the dma-buf walk (review K5): contiguous chunks merge into
 * one run, but never across an edge of BAR1's CPU or bus window, so BAR1
 * bytes next to another range still count as BAR1. The window lies at 64
 * TiB, where no System RAM is: what is outside it classifies as "other".
 */
#define NVS_ST_W	(1ULL << 46)
#define NVS_ST_WB	(1ULL << 45)	/* a bus address unlike the CPU one */
#define NVS_ST_WL	0x10000000ULL

struct nvs_walk_case {
	u64 start, bus, len;		/* the window */
	struct { u64 phys, len; } add[3];
	u64 tail;			/* the last run, before its flush */
	u64 bar1, other;
};

static const struct nvs_walk_case nvs_walk_cases[] __initconst = {
	/* contiguous inside: one run */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W, 0x1000 }, { NVS_ST_W + 0x1000, 0x1000 } },
	  0x2000, 0x2000, 0 },
	/* one chunk across the end */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W + NVS_ST_WL - 0x2000, 0x4000 } },
	  0x2000, 0x2000, 0x2000 },
	/* the last BAR1 page, then the next physical page */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W + NVS_ST_WL - 0x1000, 0x1000 },
	    { NVS_ST_W + NVS_ST_WL, 0x1000 } },
	  0x1000, 0x1000, 0x1000 },
	/* across the start, then on inside: still one BAR1 run */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W - 0x1000, 0x3000 }, { NVS_ST_W + 0x2000, 0x1000 } },
	  0x3000, 0x3000, 0x1000 },
	/* over the whole window and both sides */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W - 0x1000, NVS_ST_WL + 0x2000 } },
	  0x1000, NVS_ST_WL, 0x2000 },
	/* the bus window's end (P2PDMA bus addresses, a host bridge offset) */
	{ NVS_ST_W, NVS_ST_WB, NVS_ST_WL,
	  { { NVS_ST_WB + NVS_ST_WL - 0x1000, 0x2000 } },
	  0x1000, 0x1000, 0x1000 },
	/* not contiguous: two runs */
	{ NVS_ST_W, NVS_ST_W, NVS_ST_WL,
	  { { NVS_ST_W, 0x1000 }, { NVS_ST_W + 0x3000, 0x1000 } },
	  0x1000, 0x2000, 0 },
	/* no window (no GPU named): nothing to cut at */
	{ 0, 0, 0,
	  { { NVS_ST_W - 0x1000, 0x2000 }, { NVS_ST_W + 0x1000, 0x1000 } },
	  0x3000, 0, 0x3000 },
};

bool __init nvs_selftest_walk(void)
{
	unsigned int i, j;
	bool pass = true;

	for (i = 0; i < ARRAY_SIZE(nvs_walk_cases); i++) {
		const struct nvs_walk_case *c = &nvs_walk_cases[i];
		const struct nvs_bar_window w = {
			.start = c->start, .bus = c->bus, .len = c->len,
		};
		struct nvs_walk wk = { .w = &w };
		u64 tail;

		for (j = 0; j < ARRAY_SIZE(c->add) && c->add[j].len; j++)
			nvs_walk_add(&wk, c->add[j].phys, c->add[j].len);
		tail = wk.run_len;
		nvs_walk_flush(&wk);
		if (tail != c->tail || wk.bytes[NVS_RANGE_BAR1] != c->bar1 ||
		    wk.bytes[NVS_RANGE_OTHER] != c->other ||
		    wk.bytes[NVS_RANGE_RAM]) {
			pr_err("walk self-test %u: got run %#llx bar1 %#llx other %#llx ram %#llx, want run %#llx bar1 %#llx other %#llx\n",
			       i + 1, tail, wk.bytes[NVS_RANGE_BAR1],
			       wk.bytes[NVS_RANGE_OTHER], wk.bytes[NVS_RANGE_RAM],
			       c->tail, c->bar1, c->other);
			pass = false;
		}
	}
	if (pass)
		pr_info("walk self-tests (%zu cases): pass\n",
			ARRAY_SIZE(nvs_walk_cases));
	return pass;
}
