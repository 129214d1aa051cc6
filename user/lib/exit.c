// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>

#include "lib/exit.h"

int nvs_exit_for_errno(int err)
{
	switch (err) {
	case ENOENT:
		return NVS_EX_MISSING;
	case EPERM:
	case EACCES:
		return NVS_EX_PERM;
	default:
		return NVS_EX_FAIL;
	}
}

int nvs_exit_for_path(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return NVS_EX_PERM;
	case ENOENT: case ENOTDIR: case EISDIR: case EEXIST: case ENAMETOOLONG: case ELOOP: case EINVAL:
		return NVS_EX_USAGE;
	default:
		return NVS_EX_FAIL;
	}
}
