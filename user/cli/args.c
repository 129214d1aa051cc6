// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/out.h"
#include "lib/text.h"

bool nvs_arg_twice(struct nvs_args_seen *s, const char *sub, const char *opt)
{
	if (nvs_arg_given(s, opt)) {
		out_usage(sub, "`%s' given twice: once is enough", opt);
		return true;
	}
	if (s->n < NVS_ARGS_MAX)
		s->opt[s->n++] = opt;
	return false;
}

bool nvs_arg_given(const struct nvs_args_seen *s, const char *opt)
{
	for (unsigned int i = 0; i < s->n; ++i)
		if (!strcmp(s->opt[i], opt))
			return true;
	return false;
}

int nvs_arg_action(int argc, const char *argv[], int from)
{
	while (from < argc && !strcmp(argv[from], "--json"))
		++from;
	return from;
}

/* Whether the space-separated list opts names option name (len bytes); *value: written `NAME=' there. */
static bool listed(const char *opts, const char *name, size_t len, bool *value)
{
	const char *w = opts;

	while (w && *w) {
		size_t n = strcspn(w, " ");

		if (n && n - (w[n - 1] == '=') == len && !strncmp(w, name, len)) {
			*value = w[n - 1] == '=';
			return true;
		}
		w += n;
		w += strspn(w, " ");
	}
	return false;
}

/*
 * arg as messages show it: control characters (a newline too) escaped,
 * as \n or \xNN, in a malloc'd copy; *escaped tells whether any was.
 * NULL when out of memory.
 */
static char *shown_arg(const char *arg, bool *escaped)
{
	size_t n = strlen(arg) * 4 + 8;
	char *buf = malloc(n);

	if (buf) {
		nvs_escape_text(arg, buf, n);
		*escaped = strcmp(buf, arg) != 0;
	}
	return buf;
}

int nvs_arg_two_words(const char *sub, const char *fmt, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t n = strlen(arg) * 4 + 8;
	char *name = malloc(n), *value = malloc(n), *words = malloc(2 * n);
	bool escaped = false;
	char *shown = shown_arg(arg, &escaped);
	int ret;

	if (!name || !value || !words || !shown || !eq || escaped) {
		/*
		 * A value with control characters is shown escaped, and the
		 * two words are not offered: pasted, the escaped text would
		 * be another value (admin review L6). The caller's opening
		 * words ("Invalid argument: ", "Unknown setting: ") stay.
		 */
		if (shown && eq && escaped)
			ret = out_usage(sub, "%.*s`%s': write the name and its value as two words; the value holds control characters (shown escaped here), so retype it rather than paste it",
					(int)strcspn(fmt, "`"), fmt, shown);
		else
			ret = out_usage(sub, "Invalid argument: `%s'", shown ? shown : "?");
		free(name);
		free(value);
		free(words);
		free(shown);
		return ret;
	}
	snprintf(words, 2 * n, "%.*s", (int)(eq - arg), arg);
	nvs_shell_word(name, n, words);
	nvs_shell_word(value, n, eq + 1);
	snprintf(words, 2 * n, "%s %s", name, value);
	ret = out_usage(sub, fmt, arg, words);
	free(name);
	free(value);
	free(words);
	free(shown);
	return ret;
}

int nvs_arg_refuse(const char *sub, const char *arg, enum nvs_arg_kind kind)
{
	const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
	int len = eq ? (int)(eq - arg) : 0, ret;
	bool escaped = false;
	char *shown;

	if (kind == NVS_ARG_VALUE && eq && eq != arg + 2)
		return nvs_arg_two_words(sub, "Invalid argument: `%s': write the option and its value as two words, `%s' (an option without a value takes no `=')",
					 arg);
	/* control characters in arg come out escaped, as in every message (admin review L6) */
	shown = shown_arg(arg, &escaped);
	if (!shown)
		return out_usage(sub, "Invalid argument");
	if (escaped) {
		char *e = strchr(shown, '=');

		eq = strncmp(shown, "--", 2) ? NULL : e;
		len = eq ? (int)(eq - shown) : 0;
	}
	arg = shown;
	/* "--conf" as "--conf=x": not an option of SUB (admin review L6) */
	if (!eq && !strncmp(arg, "--", 2) && arg[2])
		ret = out_usage(sub, "Invalid argument: `%s': `%s' is not an option of %s; its --help lists the options",
				arg, arg, sub ? sub : PROG_NAME);
	else if (!eq || eq == arg + 2)
		ret = out_usage(sub, "Invalid argument: `%s'", arg);
	else if (kind == NVS_ARG_FLAG)
		ret = out_usage(sub, "Invalid argument: `%s': `%.*s' takes no value: write `%.*s'",
				arg, len, arg, len, arg);
	else
		ret = out_usage(sub, "Invalid argument: `%s': `%.*s' is not an option of %s; its --help lists the options",
				arg, len, arg, sub ? sub : PROG_NAME);
	free(shown);
	return ret;
}

int nvs_arg_invalid(const char *sub, const char *arg, const char *opts)
{
	const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');
	enum nvs_arg_kind kind = NVS_ARG_UNKNOWN;
	bool value = false;

	/* every subcommand takes these two, as words of their own */
	if (eq && (listed(opts, arg, (size_t)(eq - arg), &value) ||
		   listed("--json --help", arg, (size_t)(eq - arg), &value)))
		kind = value ? NVS_ARG_VALUE : NVS_ARG_FLAG;
	return nvs_arg_refuse(sub, arg, kind);
}
