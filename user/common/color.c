// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/color.h"

bool want_color(void)
{
	const char *m = getenv("NVSIDECAR_COLOR");

	if (m && !strcmp(m, "always"))
		return true;
	if ((m && !strcmp(m, "never")) || (getenv("NO_COLOR") && *getenv("NO_COLOR")))
		return false;
	return isatty(STDOUT_FILENO);
}
