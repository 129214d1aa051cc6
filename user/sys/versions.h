/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef SYS_VERSIONS_H
#define SYS_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The versions of the communication libraries a node runs, one reader
 * each, for the doctor's known-issues table. Each asks the library itself
 * (its version function, through dlopen) and falls back to the version in
 * the real file's name where the library's build puts one there. The
 * library is the one the dynamic loader picks, or the one in
 * NVS_VERSIONS_LIBDIR (tests). Each returns false (ver "") when the
 * library is not installed or says no version.
 */

/* NCCL: ncclGetVersion() of libnccl.so.2, else libnccl.so.2.X.Y's name. */
bool nvs_version_nccl(char *ver, size_t len);
/* UCX: ucp_get_version() of libucp.so.0 (its file name has only the libtool numbers). */
bool nvs_version_ucx(char *ver, size_t len);
/* libfabric: fi_version() of libfabric.so.1, major.minor (the API version it reports). */
bool nvs_version_libfabric(char *ver, size_t len);
/* rdma-core: from libibverbs.so.1.<abi>.<rdma-core version>, the name rdma-core's build gives it. */
bool nvs_version_rdma_core(char *ver, size_t len);

/* NCCL's version code (NCCL_VERSION_CODE) as text: 22705 -> "2.27.5", 2408 -> "2.4.8". */
bool nvs_version_nccl_code(int code, char *ver, size_t len);
/* "2.27.5" from ".../libnccl.so.2.27.5"; false for any other name. */
bool nvs_version_nccl_name(const char *path, char *ver, size_t len);
/* "44.0" from ".../libibverbs.so.1.14.44.0"; false for any other name. */
bool nvs_version_rdma_core_name(const char *path, char *ver, size_t len);

#endif
