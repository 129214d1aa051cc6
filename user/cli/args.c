// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <string.h>

#include "cli/args.h"
#include "cli/out.h"

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

int nvs_arg_invalid(const char *sub, const char *arg)
{
	const char *eq = strncmp(arg, "--", 2) ? NULL : strchr(arg, '=');

	if (eq && eq > arg + 2)
		return out_usage(sub, "Invalid argument: `%s': write the option and its value as two words, `%.*s %s' (an option without a value takes no `=')",
				 arg, (int)(eq - arg), arg, eq + 1);
	return out_usage(sub, "Invalid argument: `%s'", arg);
}
