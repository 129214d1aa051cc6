/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdbool.h>

/*
 * The options of one command line that may be given once. An option
 * given twice used to be last-wins without a word (`thermal --gpu 0
 * --gpu 1' watched gpu1): the second one is refused instead, exit 2.
 * Repeatable options (doctor's --limit) are simply never passed here.
 */
#define NVS_ARGS_MAX 32

struct nvs_args_seen {
	const char *opt[NVS_ARGS_MAX];
	unsigned int n;
};

/*
 * Notes opt (an argv string such as "--gpu") as given. The second time
 * it says "`--gpu' given twice" through out_usage() for subcommand sub
 * and returns true: the caller returns NVS_EX_USAGE.
 */
bool nvs_arg_twice(struct nvs_args_seen *s, const char *sub, const char *opt);

/* Whether opt was noted by nvs_arg_twice() (given on this command line). */
bool nvs_arg_given(const struct nvs_args_seen *s, const char *opt);

/*
 * An argument the subcommand does not take: "Invalid argument: `ARG'"
 * through out_usage(), the same words in every subcommand. `--opt=value'
 * is refused alike everywhere (an option's value is the next word, as
 * nvsidecar(8) writes them), with the two words to write instead.
 * Returns NVS_EX_USAGE.
 */
int nvs_arg_invalid(const char *sub, const char *arg);

/*
 * The index of the first word from argv[from] on that is not `--json', or
 * argc: the action of a subcommand with actions (`dmabuf --json probe',
 * `libcuda --json status', or what the dispatcher makes of
 * `nvsidecar --json libcuda status'). JSON mode is set already.
 */
int nvs_arg_action(int argc, const char *argv[], int from);

#endif
