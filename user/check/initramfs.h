/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHECK_INITRAMFS_H
#define CHECK_INITRAMFS_H

#include <stddef.h>

/*
 * Reads an initramfs image the way the kernel unpacks it: newc cpio
 * archives, one after the other, each plain or compressed (gzip, zstd, xz,
 * lzma, lz4, bzip2, lzop), with zero padding between them. A compressed
 * archive is piped through the matching decompressor program; nothing is
 * written to disk.
 *
 * Finds the first member whose base name is one of names (NULL-ended),
 * e.g. "nvsidecar.ko", "nvsidecar.ko.xz". Returns 1 with its path in
 * member and its content in *data (malloc'd, *size bytes; members over 64
 * MiB are refused), 0 when no member matches, or -errno with err.
 */
int nvs_initramfs_find(const char *image, const char *const names[], char *member, size_t mlen,
		       void **data, size_t *size, char *err, size_t errlen);

/*
 * in (a module file's bytes) decompressed when it starts with a known
 * compression magic (modules are often .ko.xz or .ko.zst; initramfs-tools
 * stores them decompressed). Returns 0 with a malloc'd *out, or -errno.
 */
int nvs_unpack(const void *in, size_t n, void **out, size_t *outn, char *err, size_t errlen);
/* version= and srcversion= of a module's .modinfo ("" when absent). */
void nvs_modinfo(const void *ko, size_t n, char *version, size_t vlen, char *srcversion, size_t slen);

#endif
