// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the PCI bus id parser used for NVS_A_DMABUF_IMPORTER
 * (strict: pci_name() forms only), built with NVS_SELFTEST, run at load.
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
