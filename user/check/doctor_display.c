// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A GPU that drives a display, named with what it does to P2P: with a
 * monitor on one RTX 5090, peer-to-peer between 5090s fails on the
 * P2P-patched open driver (aikitoria/open-gpu-kernel-modules issue #11:
 * "When having a 5090 connected to a monitor/screen, P2P fails between
 * 5090s"; one report there: llama.cpp's output mangled with P2P on). Read from DRM in
 * sysfs, under the doctor's root: /sys/class/drm/card<N>-<connector>/status
 * is "connected" and /sys/class/drm/card<N>/device links to the GPU.
 * nvidia-drm shows connectors only with modeset=1, so "none found" on an
 * NVIDIA card without them is said as such.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/doctor.h"

#define add(...) nvs_check_add(__VA_ARGS__)
#define fix(...) nvs_check_fix(__VA_ARGS__)

#define MAX_CARDS 32

struct card {
	int n;			/* cardN */
	char bdf[32];
	bool nvidia;
	char shown[128];	/* connected connectors: "DP-1, HDMI-A-1" */
};

static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* cards[] from /sys/class/drm/card<N>/device: the PCI device and its vendor. */
static size_t list_cards(const struct nvs_doctor_opts *o, struct card *cards)
{
	char pat[4096], link[PATH_MAX], path[4096 + 16], vendor[16];
	size_t n = 0;
	glob_t g;

	nvs_doctor_path(o, "/sys/class/drm/card[0-9]*", pat, sizeof(pat));
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc && n < MAX_CARDS; ++i) {
		const char *name = strrchr(g.gl_pathv[i], '/') + 1, *b;
		char *end;
		long num = strtol(name + 4, &end, 10);
		ssize_t l;

		if (*end)	/* card0-DP-1: a connector, not a card */
			continue;
		snprintf(path, sizeof(path), "%s/device", g.gl_pathv[i]);
		l = readlink(path, link, sizeof(link) - 1);
		if (l < 0)
			continue;
		link[l] = 0;
		b = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		cards[n].n = (int)num;
		snprintf(cards[n].bdf, sizeof(cards[n].bdf), "%.*s", (int)sizeof(cards[n].bdf) - 1, b);
		snprintf(path, sizeof(path), "%s/device/vendor", g.gl_pathv[i]);
		cards[n].nvidia = read_line(path, vendor, sizeof(vendor)) && !strcmp(vendor, "0x10de");
		cards[n].shown[0] = 0;
		n++;
	}
	globfree(&g);
	return n;
}

static void find_connected(const struct nvs_doctor_opts *o, struct card *cards, size_t n)
{
	char pat[4096], path[4096 + 16], st[32];
	glob_t g;

	nvs_doctor_path(o, "/sys/class/drm/card[0-9]*-*", pat, sizeof(pat));
	if (glob(pat, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; ++i) {
		const char *name = strrchr(g.gl_pathv[i], '/') + 1;
		char *end;
		long num = strtol(name + 4, &end, 10);

		snprintf(path, sizeof(path), "%s/status", g.gl_pathv[i]);
		if (*end != '-' || !read_line(path, st, sizeof(st)) || strcmp(st, "connected"))
			continue;
		for (size_t k = 0; k < n; ++k) {
			struct card *c = &cards[k];
			size_t used = strlen(c->shown);

			if (c->n == num)
				snprintf(c->shown + used, sizeof(c->shown) - used, "%s%s", used ? ", " : "", end + 1);
		}
	}
	globfree(&g);
}

void nvs_doctor_display(struct nvs_checks *c, const struct nvs_doctor_opts *o)
{
	struct card cards[MAX_CARDS];
	size_t n = list_cards(o, cards), nv = 0, shown = 0;
	char name[96];

	for (size_t i = 0; i < n; ++i)
		nv += cards[i].nvidia;
	if (!nv) {
		add(c, CK_SKIP, "topology", "display",
		    "no NVIDIA GPU in /sys/class/drm (nvidia-drm not loaded, or no GPU)");
		return;
	}
	find_connected(o, cards, n);
	for (size_t i = 0; i < n; ++i) {
		if (!cards[i].nvidia || !cards[i].shown[0])
			continue;
		shown++;
		snprintf(name, sizeof(name), "display@%s", cards[i].bdf);
		if (nv < 2) {
			add(c, CK_OK, "topology", name,
			    "GPU %s drives a display (%s); with no second NVIDIA GPU there is no peer-to-peer to break",
			    cards[i].bdf, cards[i].shown);
			continue;
		}
		add(c, CK_WARN, "topology", name,
		    "GPU %s drives a display (%s connected): peer-to-peer between RTX 5090s fails while one of them drives a monitor (aikitoria/open-gpu-kernel-modules #11)",
		    cards[i].bdf, cards[i].shown);
		fix(c, "Move the monitor to the integrated GPU or to a card left out of peer-to-peer, or keep GPU %s out of P2P ranks (CUDA_VISIBLE_DEVICES); then check with `nvsidecar p2p', which verifies every byte",
		    cards[i].bdf);
	}
	if (!shown)
		add(c, CK_OK, "topology", "display",
		    "no display connected to the %zu NVIDIA GPU(s) in /sys/class/drm (connectors show only with nvidia-drm modeset=1)",
		    nv);
}
