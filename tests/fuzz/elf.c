// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * `nvsidecar libcuda status|patch FILE': the library is opened by path
 * (lc_elf_open: headers, segments, the dynamic table, .eh_frame_hdr), its
 * symbols and imports are looked up and the embedded driver version read.
 * Built again as the `gate' target (NVS_FUZZ_GATE), which also runs the gate
 * locator, store scan, emulator and planner on the parsed image
 * (lc_gate_analyse), as libcuda/report.c does: about 0.4 s a run under
 * ASan, so it gets its own target and the ELF reader keeps its speed.
 */
#include <stdbool.h>

#include "libcuda/elf.h"
#include "libcuda/gate.h"
#include "fuzz.h"

/* the exports and imports the engine looks for, and one that is absent */
static const char *const names[] = {
	"cuDeviceGetAttribute", "cuInit", "memset", "memcpy", "malloc", "nvs-fuzz-absent",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024], ver[64];
	const char *path = nvs_fuzz_path(data, size);
#ifdef NVS_FUZZ_GATE
	struct lc_gate g;
#endif
	struct lc_elf e;
	bool conflict;

	if (!path)
		return -1;
	if (lc_elf_open(&e, path, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
		uint64_t v, slot;

		if (!lc_elf_sym(&e, names[i], &v)) {
			lc_elf_exec(&e, v);
			lc_elf_ptr(&e, v, 16);
			lc_elf_off(&e, v);
			lc_elf_func_start(&e, v);
			lc_elf_func_end(&e, v);
		}
		if (!lc_elf_import_slot(&e, names[i], &slot))
			lc_elf_relative(&e, slot, &v);
	}
	lc_elf_driver_version(&e, ver, sizeof(ver), &conflict);
#ifdef NVS_FUZZ_GATE
	lc_gate_analyse(&e, &g);
	lc_gate_free(&g);
#endif
	lc_elf_close(&e);
	return 0;
}
