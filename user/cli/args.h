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
 * nvsidecar(8) writes them), and what to write instead depends on --opt:
 * an option that takes a value gets the two words, `--opt value'; one
 * that takes none (`--json=yes') gets `--json' alone; an option the
 * subcommand does not have gets that said, never a made-up `--foo bar'.
 * opts lists the subcommand's options, space separated, those that take
 * a value written with a trailing `=': "--dump --gpu= --size=" (--json
 * and --help are every subcommand's and need not be listed). Returns
 * NVS_EX_USAGE.
 */
int nvs_arg_invalid(const char *sub, const char *arg, const char *opts);

/*
 * `NAME=VALUE' refused with the two words to write instead, each quoted for
 * the shell (nvs_shell_word(): a value with blanks or quotes still pastes
 * as one word): out_usage(sub, fmt, arg, "NAME VALUE"), fmt taking two
 * %s. Returns NVS_EX_USAGE.
 */
int nvs_arg_two_words(const char *sub, const char *fmt, const char *arg);

/* What nvs_arg_refuse() knows of the option in `--opt=value'. */
enum nvs_arg_kind {
	NVS_ARG_UNKNOWN,	/* not an option of this subcommand */
	NVS_ARG_FLAG,		/* an option that takes no value */
	NVS_ARG_VALUE,		/* an option whose value is the next word */
};

/*
 * nvs_arg_invalid() for a subcommand whose options are not one fixed list
 * (doctor: doctor.conf's keys are options too): the caller says what the
 * part before `=' is.
 */
int nvs_arg_refuse(const char *sub, const char *arg, enum nvs_arg_kind kind);

/*
 * The index of the first word from argv[from] on that is not `--json', or
 * argc: the action of a subcommand with actions (`dmabuf --json probe',
 * `libcuda --json status', or what the dispatcher makes of
 * `nvsidecar --json libcuda status'). JSON mode is set already.
 */
int nvs_arg_action(int argc, const char *argv[], int from);

#endif
