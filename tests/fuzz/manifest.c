// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The manifest `libcuda patch' writes beside its output and `libcuda
 * status', `verify', `restore' and the doctor read back: read by path.
 * Whatever it accepts is written again and must read back the same, as a
 * re-patch rewrites it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcuda/manifest.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024], out[4200];
	const char *path = nvs_fuzz_path(data, size);
	struct lc_manifest m, again;

	if (!path)
		return -1;
	if (lc_manifest_read(path, &m, err, sizeof(err)))
		return 0;
	snprintf(out, sizeof(out), "%s/" LC_MANIFEST_NAME, nvs_fuzz_dir());
	if (!lc_manifest_write(out, &m, err, sizeof(err))) {
		if (lc_manifest_read(out, &again, err, sizeof(err))) {
			fprintf(stderr, "a manifest we accepted and wrote does not read back: %s\n", err);
			abort();
		}
		if (again.nsites != m.nsites || strcmp(again.source_sha256, m.source_sha256) ||
		    strcmp(again.output_sha256, m.output_sha256) || again.field != m.field ||
		    again.mask != m.mask) {
			fprintf(stderr, "a manifest we accepted and wrote reads back different\n");
			abort();
		}
		lc_manifest_free(&again);
	}
	lc_manifest_free(&m);
	return 0;
}
