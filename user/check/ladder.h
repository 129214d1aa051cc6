/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_LADDER_H
#define CHECK_LADDER_H

#include <stdbool.h>

/*
 * The acceptance ladder: four layers, each accepted on its own evidence, so
 * that "it enumerates" is never taken for "it is faster".
 *   1 driver and topology capability (CUDA loads, peers report access, no
 *     blocking topology finding)
 *   2 CUDA peer copies verified byte for byte
 *   3 NCCL's log confirms the P2P transport
 *   4 measured bandwidth against the link's theoretical figure
 * Used by `p2p' and `doctor'; nothing here prints.
 */
#define NVS_LADDER_LEVELS 4

enum nvs_ladder_state {
	NVS_LADDER_NOT_RUN,	/* no evidence given (e.g. no NCCL log) */
	NVS_LADDER_PASS,
	NVS_LADDER_WARN,	/* holds, with a caveat the detail names */
	NVS_LADDER_FAIL,
	NVS_LADDER_NA,		/* does not apply (one GPU) */
};

struct nvs_ladder {
	enum nvs_ladder_state state[NVS_LADDER_LEVELS];
	char detail[NVS_LADDER_LEVELS][320];
};

/* Default share of the theoretical link rate that level 4 asks for. */
#define NVS_LADDER_MIN_EFFICIENCY 0.60

void nvs_ladder_init(struct nvs_ladder *l);
void nvs_ladder_set(struct nvs_ladder *l, int level, enum nvs_ladder_state s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Level 4 from a measured unidirectional rate and the theoretical one (both
 * GB/s, decimal); theory <= 0 means the link is unknown.
 */
void nvs_ladder_bandwidth(struct nvs_ladder *l, double measured, double theory, double min_eff);
/* The highest level reached with every level below it passed (0..4). */
int nvs_ladder_reached(const struct nvs_ladder *l);
const char *nvs_ladder_state_str(enum nvs_ladder_state s);
const char *nvs_ladder_title(int level);

#endif
