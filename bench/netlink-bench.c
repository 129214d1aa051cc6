// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * netlink-bench: how long one snapshot of every sensor of every GPU takes
 * through one generic netlink GPU_GET dump (decoded down to each sensor's
 * value, as an exporter would) and through the hwmon sysfs files of the
 * same GPUs (open, read, close each tempN_input, as `sensors' and
 * node_exporter do; and pread on files kept open, hwmon's best case),
 * alternating in the same run. Built by tests/vm/vmlib.sh vm_tools.
 *
 * Usage: netlink-bench [-n ITERATIONS]
 * Prints one "key=value" line per method and a ratio line.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tests/vm/tools/nlraw.h"

#define MAX_FILES 1024

static char *files[MAX_FILES];
static int fds[MAX_FILES];
static int nfiles;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every tempN_input of every hwmon chip named nvsidecar. */
static int find_hwmon(unsigned int *chips)
{
	DIR *d = opendir("/sys/class/hwmon"), *h;
	struct dirent *e, *f;
	char path[512], name[64];

	*chips = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *nf;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/name", e->d_name);
		nf = fopen(path, "r");
		if (!nf)
			continue;
		if (!fgets(name, sizeof(name), nf) || strcmp(name, "nvsidecar\n")) {
			fclose(nf);
			continue;
		}
		fclose(nf);
		++*chips;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s", e->d_name);
		h = opendir(path);
		if (!h)
			continue;
		while ((f = readdir(h)) && nfiles < MAX_FILES) {
			size_t l = strlen(f->d_name);

			if (strncmp(f->d_name, "temp", 4) || l < 7 || strcmp(f->d_name + l - 6, "_input"))
				continue;
			if (asprintf(&files[nfiles], "%s/%s", path, f->d_name) < 0)
				return -1;
			fds[nfiles] = open(files[nfiles], O_RDONLY | O_CLOEXEC);
			nfiles++;
		}
		closedir(h);
	}
	closedir(d);
	return 0;
}

struct hw_snap {
	unsigned int sensors;
	int64_t sum_mc;
};

static void hwmon_snapshot(bool keep_open, struct hw_snap *s)
{
	char buf[32];

	s->sensors = 0;
	s->sum_mc = 0;
	for (int i = 0; i < nfiles; ++i) {
		ssize_t r;
		int fd;

		if (keep_open) {
			r = pread(fds[i], buf, sizeof(buf) - 1, 0);
		} else {
			fd = open(files[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			r = read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
		if (r <= 0)
			continue;	/* -ENODATA: sensor not valid */
		buf[r] = '\0';
		s->sensors++;
		s->sum_mc += strtol(buf, NULL, 10);
	}
}

static void report(const char *name, uint64_t *t, int n, unsigned int sensors)
{
	qsort(t, n, sizeof(*t), cmp_u64);
	printf("%s median_us=%.1f p99_us=%.1f min_us=%.1f sensors=%u\n", name, t[n / 2] / 1e3,
	       t[(int)(n * 0.99)] / 1e3, t[0] / 1e3, sensors);
}

int main(int argc, char *argv[])
{
	static struct nlraw nl;
	struct nlraw_snapshot ns = { 0 };
	struct hw_snap hs = { 0 }, hk = { 0 };
	uint64_t *tn, *th, *tk, t;
	unsigned int chips;
	int n = 500, c, ret;

	while ((c = getopt(argc, argv, "n:h")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		default:
			fprintf(c == 'h' ? stdout : stderr, "Usage: netlink-bench [-n ITERATIONS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (n < 10)
		n = 10;
	ret = nlraw_open(&nl);
	if (!ret)
		ret = nlraw_resolve(&nl);
	if (ret) {
		fprintf(stderr, "netlink-bench: no nvsidecar family: %s\n", strerror(-ret));
		return 1;
	}
	if (find_hwmon(&chips) || !nfiles) {
		fprintf(stderr, "netlink-bench: no nvsidecar hwmon files\n");
		return 1;
	}
	tn = calloc(n, sizeof(*tn));
	th = calloc(n, sizeof(*th));
	tk = calloc(n, sizeof(*tk));
	if (!tn || !th || !tk)
		return 1;
	/* Warm up, then alternate so that both see the same machine state. */
	for (int i = 0; i < 10; ++i) {
		nlraw_snapshot(&nl, &ns);
		hwmon_snapshot(false, &hs);
	}
	for (int i = 0; i < n; ++i) {
		t = now_ns();
		ret = nlraw_snapshot(&nl, &ns);
		tn[i] = now_ns() - t;
		if (ret) {
			fprintf(stderr, "netlink-bench: GPU_GET failed: %s\n", strerror(-ret));
			return 1;
		}
		t = now_ns();
		hwmon_snapshot(false, &hs);
		th[i] = now_ns() - t;
		t = now_ns();
		hwmon_snapshot(true, &hk);
		tk[i] = now_ns() - t;
	}
	printf("gpus=%u hwmon_chips=%u hwmon_files=%d iterations=%d\n", ns.gpus, chips, nfiles, n);
	report("netlink-dump", tn, n, ns.sensors);
	report("hwmon-open-read", th, n, hs.sensors);
	report("hwmon-pread", tk, n, hk.sensors);
	printf("ratio hwmon-open-read/netlink=%.2f hwmon-pread/netlink=%.2f\n",
	       (double)th[n / 2] / (double)tn[n / 2], (double)tk[n / 2] / (double)tn[n / 2]);
	if (ns.sensors != hs.sensors)
		printf("note: netlink saw %u valid sensors, hwmon %u\n", ns.sensors, hs.sensors);
	return 0;
}
