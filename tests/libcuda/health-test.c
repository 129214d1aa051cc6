// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * health-test [LIB|DIR] [STATE]: calls lc_health_check() the way the doctor
 * does and prints one tab-separated line:
 *   return  state  verdict  driver_version  mismatch  manifests  stale  reason
 * Built by tests/host/50-libcuda.sh against the engine's objects.
 */
#include <stdio.h>

#include "libcuda/health.h"

int main(int argc, char **argv)
{
	struct lc_health h;
	int ret = lc_health_check(argc > 1 && argv[1][0] ? argv[1] : NULL, argc > 2 ? argv[2] : NULL, &h);

	printf("%d\t%s\t%s\t%s\t%d\t%zu\t%zu\t%s\n", ret, lc_health_name(h.state), h.verdict, h.driver_version,
	       h.version_mismatch, h.manifests, h.stale, h.reason);
	return 0;
}
