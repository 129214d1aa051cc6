// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * thermal-read: the "Thermal reads" benchmark (docs/benchmarks.md), run in
 * a guest by bench/thermal-guest.sh. For one simulated GPU it times, in
 * alternating rounds of the same run:
 *   hwmon   reading every sensor through nvsidecar's hwmon files (open,
 *           read, close each tempN_input, as libsensors does);
 *   devmem  a gpuwatch-style reader: /dev/mem opened once, then mmap, one
 *           32-bit load and munmap per register, for the same sensors
 *           (needs iomem=relaxed, as the real tools do);
 *   readl   one pass of plain loads over the registers the module's
 *           sampler reads, through a mapping kept open (the per-read cost
 *           of the BAR in this machine).
 * It also checks that devmem and hwmon agree on every value, so both really
 * read the same BAR. Built by tests/vm/vmlib.sh vm_tools.
 *
 * Usage: thermal-read -b BDF -H HWMON_DIR [-n ROUNDS] [-i PASSES_PER_ROUND]
 * Output: "key=value" lines.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define GB_CH0		0xad0a90u
/* chip n: slots n % 2 and n % 2 + 2 of partition n / 2 (kmod/chips.c) */
#define GB_SLOT(n)	(0x9024c0u + (n) / 2 * 0x4000u + (n) % 2 * 4u)
#define GB_STATUS(n)	(0x9024c0u + (n) / 2 * 0x4000u + 0x10u)
#define GB_BCAST	0x9a24c0u
#define MAXS		64

struct sensor {
	char label[64];
	char path[512];
	uint32_t off;
	int is_mem;		/* 2 °C code in 23:16; else 1/256 °C in 15:0 */
	int p;			/* DRAM chip number, -1: broadcast or die */
};

static struct sensor s[MAXS];
static int ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "thermal-read: %s `%s': %s\n", what, arg, strerror(errno));
	exit(1);
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static int label_off(struct sensor *x)
{
	static const char *const die_names[] = { "ch0", "ch1", "ch2", "ch3", "hotspot", "average" };
	int i;

	x->p = -1;
	for (i = 0; i < 6; i++)
		if (!strcmp(x->label, die_names[i])) {
			x->off = GB_CH0 + 4 * i;
			return 0;
		}
	x->is_mem = 1;
	if (!strcmp(x->label, "mem")) {
		x->off = GB_BCAST;
		return 0;
	}
	if (sscanf(x->label, "mem%d", &x->p) == 1 && x->p >= 0 && x->p < 16) {
		x->off = GB_SLOT(x->p);
		return 0;
	}
	return -1;
}

static void find_sensors(const char *dir)
{
	char path[512], buf[64];
	int n;

	for (n = 1; n < 100 && ns < MAXS; n++) {
		snprintf(path, sizeof(path), "%s/temp%d_label", dir, n);
		if (read_file(path, buf, sizeof(buf)))
			continue;
		buf[strcspn(buf, "\n")] = 0;
		snprintf(s[ns].label, sizeof(s[ns].label), "%s", buf);
		snprintf(s[ns].path, sizeof(s[ns].path), "%s/temp%d_input", dir, n);
		if (label_off(&s[ns])) {
			fprintf(stderr, "thermal-read: unknown label `%s'\n", buf);
			exit(1);
		}
		ns++;
	}
	if (!ns) {
		fprintf(stderr, "thermal-read: no sensors in `%s'\n", dir);
		exit(1);
	}
}

static long decode(const struct sensor *x, uint32_t raw)
{
	uint32_t code;

	if (!x->is_mem)
		return ((long)(raw & 0xffff) * 1000 + 128) / 256;
	code = (raw >> 16) & 0xff;
	if (code > 80)
		code = 80;
	return (2L * code - 40) * 1000;
}

static long hwmon_pass(long *vals)
{
	char buf[32];
	long sum = 0;
	int i;

	for (i = 0; i < ns; i++) {
		if (read_file(s[i].path, buf, sizeof(buf)))
			die("Unable to read", s[i].path);
		vals[i] = strtol(buf, NULL, 10);
		sum += vals[i];
	}
	return sum;
}

static long devmem_pass(int memfd, uint64_t bar, long *vals)
{
	long page = sysconf(_SC_PAGESIZE), sum = 0;
	uint64_t addr, base;
	void *m;
	int i;

	for (i = 0; i < ns; i++) {
		addr = bar + s[i].off;
		base = addr & ~(uint64_t)(page - 1);
		m = mmap(NULL, page, PROT_READ, MAP_SHARED, memfd, (off_t)base);
		if (m == MAP_FAILED)
			die("Unable to map /dev/mem at", "BAR2");
		vals[i] = decode(&s[i], *(volatile uint32_t *)((char *)m + (addr - base)));
		munmap(m, page);
		if (s[i].p >= 0) {
			/* the chip's paired slot, 8 bytes on: the hotter wins */
			long v2;

			addr += 8;
			base = addr & ~(uint64_t)(page - 1);
			m = mmap(NULL, page, PROT_READ, MAP_SHARED, memfd, (off_t)base);
			if (m == MAP_FAILED)
				die("Unable to map /dev/mem at", "BAR2");
			v2 = decode(&s[i], *(volatile uint32_t *)((char *)m + (addr - base)));
			munmap(m, page);
			if (v2 > vals[i])
				vals[i] = v2;
		}
		sum += vals[i];
	}
	return sum;
}

/* The sampler's registers: die block, each present chip's two slots and
 * its partition's status word (the module reads that once for both chips),
 * the broadcast word. */
static uint32_t readl_pass(volatile uint32_t *r, int *nreads)
{
	uint32_t acc = 0;
	int i;

	*nreads = 0;
	for (i = 0; i < ns; i++) {
		acc ^= r[s[i].off / 4];
		(*nreads)++;
		if (s[i].p >= 0) {
			acc ^= r[(s[i].off + 8) / 4];
			acc ^= r[GB_STATUS(s[i].p) / 4];
			*nreads += 2;
		}
	}
	return acc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char *argv[])
{
	const char *bdf = NULL, *hw = NULL;
	int rounds = 15, passes = 20, c, r, i, k, memfd, resfd, nreads = 0;
	char path[256], line[256];
	unsigned long long start, end, flags;
	long hv[MAXS], dv[MAXS];
	uint64_t *th, *td, *tr, t0;
	volatile uint32_t *regs;
	uint32_t acc = 0;
	FILE *f;

	while ((c = getopt(argc, argv, "b:H:n:i:")) != -1) {
		switch (c) {
		case 'b': bdf = optarg; break;
		case 'H': hw = optarg; break;
		case 'n': rounds = atoi(optarg); break;
		case 'i': passes = atoi(optarg); break;
		default:
			fprintf(stderr, "Usage: thermal-read -b BDF -H HWMON_DIR [-n ROUNDS] [-i PASSES]\n");
			return 2;
		}
	}
	if (!bdf || !hw || rounds < 1 || passes < 1 || strchr(bdf, '/')) {
		fprintf(stderr, "Usage: thermal-read -b BDF -H HWMON_DIR [-n ROUNDS] [-i PASSES]\n");
		return 2;
	}
	find_sensors(hw);

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	f = fopen(path, "r");
	if (!f)
		die("Unable to open", path);
	for (i = 0; i <= 2 && fgets(line, sizeof(line), f); i++)
		;
	fclose(f);
	if (i != 3 || sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3 || !start) {
		fprintf(stderr, "thermal-read: no BAR2 in `%s'\n", path);
		return 1;
	}
	memfd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (memfd < 0)
		die("Unable to open", "/dev/mem");
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource2", bdf);
	resfd = open(path, O_RDONLY);
	if (resfd < 0)
		die("Unable to open", path);
	regs = mmap(NULL, end - start + 1, PROT_READ, MAP_SHARED, resfd, 0);
	if (regs == MAP_FAILED)
		die("Unable to map", path);

	/* Same BAR, same values: otherwise the comparison means nothing. */
	hwmon_pass(hv);
	devmem_pass(memfd, start, dv);
	for (i = 0; i < ns; i++)
		if (hv[i] != dv[i]) {
			fprintf(stderr, "thermal-read: %s: hwmon %ld, /dev/mem %ld\n",
				s[i].label, hv[i], dv[i]);
			return 1;
		}

	th = calloc(rounds, sizeof(*th));
	td = calloc(rounds, sizeof(*td));
	tr = calloc(rounds, sizeof(*tr));
	if (!th || !td || !tr)
		return 1;
	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		for (k = 0; k < passes; k++)
			hwmon_pass(hv);
		th[r] = (now_ns() - t0) / passes;
		t0 = now_ns();
		for (k = 0; k < passes; k++)
			devmem_pass(memfd, start, dv);
		td[r] = (now_ns() - t0) / passes;
		t0 = now_ns();
		for (k = 0; k < passes * 10; k++)
			acc ^= readl_pass(regs, &nreads);
		tr[r] = (now_ns() - t0) / (passes * 10);
	}
	qsort(th, rounds, sizeof(*th), cmp_u64);
	qsort(td, rounds, sizeof(*td), cmp_u64);
	qsort(tr, rounds, sizeof(*tr), cmp_u64);
	printf("sensors=%d\n", ns);
	printf("rounds=%d passes_per_round=%d\n", rounds, passes);
	printf("hwmon_pass_us_median=%.1f\n", th[rounds / 2] / 1e3);
	printf("devmem_pass_us_median=%.1f\n", td[rounds / 2] / 1e3);
	printf("ratio_devmem_over_hwmon=%.2f\n", (double)td[rounds / 2] / th[rounds / 2]);
	printf("readl_pass_reads=%d\n", nreads);
	printf("readl_pass_ns_median=%llu\n", (unsigned long long)tr[rounds / 2]);
	printf("readl_ns_per_read=%.1f\n", (double)tr[rounds / 2] / nreads);
	printf("checksum=%u\n", acc & 1);
	return 0;
}
