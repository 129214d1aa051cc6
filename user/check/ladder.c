// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check/ladder.h"

static const char *const titles[NVS_LADDER_LEVELS] = {
	"driver and topology capability",
	"CUDA peer copies verified",
	"NCCL transport confirmed",
	"bandwidth against the link",
};

void nvs_ladder_init(struct nvs_ladder *l)
{
	memset(l, 0, sizeof(*l));
	for (int i = 0; i < NVS_LADDER_LEVELS; ++i)
		snprintf(l->detail[i], sizeof(l->detail[i]), "not run");
}

void nvs_ladder_set(struct nvs_ladder *l, int level, enum nvs_ladder_state s, const char *fmt, ...)
{
	va_list ap;

	if (level < 1 || level > NVS_LADDER_LEVELS)
		return;
	l->state[level - 1] = s;
	va_start(ap, fmt);
	vsnprintf(l->detail[level - 1], sizeof(l->detail[0]), fmt, ap);
	va_end(ap);
}

void nvs_ladder_bandwidth(struct nvs_ladder *l, double measured, double theory, double min_eff)
{
	double eff;

	if (theory <= 0) {
		nvs_ladder_set(l, 4, NVS_LADDER_NOT_RUN,
			       "%.1f GB/s measured, but the link is unknown (no PCI data for the GPUs' bus ids)",
			       measured);
		return;
	}
	eff = measured / theory;
	nvs_ladder_set(l, 4, eff >= min_eff ? NVS_LADDER_PASS : NVS_LADDER_FAIL,
		       "slowest pair %.1f GB/s of %.1f GB/s theoretical per direction (%.0f%%, need %.0f%%)",
		       measured, theory, eff * 100, min_eff * 100);
}

int nvs_ladder_reached(const struct nvs_ladder *l)
{
	int n = 0;

	for (int i = 0; i < NVS_LADDER_LEVELS; ++i) {
		if (l->state[i] != NVS_LADDER_PASS && l->state[i] != NVS_LADDER_WARN)
			break;
		n = i + 1;
	}
	return n;
}

const char *nvs_ladder_state_str(enum nvs_ladder_state s)
{
	static const char *const names[] = {
		[NVS_LADDER_NOT_RUN] = "not run", [NVS_LADDER_PASS] = "pass", [NVS_LADDER_WARN] = "warn",
		[NVS_LADDER_FAIL] = "fail", [NVS_LADDER_NA] = "n/a",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "not run";
}

const char *nvs_ladder_title(int level)
{
	return level >= 1 && level <= NVS_LADDER_LEVELS ? titles[level - 1] : "";
}
