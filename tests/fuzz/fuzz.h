/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef NVS_FUZZ_H
#define NVS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points: each target defines the first, some the second */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * The input as a file the reader opens by name: a memfd reused across runs,
 * named /proc/self/fd/N. A regular file to fstat(), mmap() and stdio, like
 * the admin's file; returns NULL (and the run is skipped) if it cannot be
 * written.
 */
const char *nvs_fuzz_path(const uint8_t *data, size_t size);

/* A private directory for the run, removed at exit (readers that rename). */
const char *nvs_fuzz_dir(void);

#endif
