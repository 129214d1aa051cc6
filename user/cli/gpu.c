// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gpu.h"
#include "cli/out.h"
#include "lib/busid.h"
#include "lib/exit.h"
#include "lib/parse.h"

bool nvs_gpu_spec_ok(const char *s)
{
	const char *p = s;

	if (!s || !*s)
		return false;
	if (!strncmp(p, "gpu", 3))
		p += 3;
	if (*p && strspn(p, "0123456789") == strlen(p) && strlen(p) <= 9)
		return true;
	return p == s && nvs_bdf_ok(s);
}

int nvs_cli_relist(struct nvs_cli *c)
{
	free(c->gpus);
	c->gpus = NULL;
	c->n = 0;
	c->sel = NULL;
	if (nvs_gpu_list(c->h, &c->gpus, &c->n) < 0)
		return out_fail(nvs_exit_for_errno(errno), "Unable to list GPUs: %s", nvs_last_error(c->h));
	return NVS_EX_OK;
}

static int select_gpu(struct nvs_cli *c, const char *want)
{
	char have[256] = "";
	size_t len = 0;
	uint32_t idx;

	if (!nvs_parse_gpu(want, c->gpus, c->n, &idx)) {
		for (size_t i = 0; i < c->n; ++i)
			if (c->gpus[i].index == idx)
				c->sel = &c->gpus[i];
		return NVS_EX_OK;
	}
	for (size_t i = 0; i < c->n && len < sizeof(have) - 16; ++i)
		len += snprintf(have + len, sizeof(have) - len, "%sgpu%u", i ? ", " : "", c->gpus[i].index);
	return out_fail(NVS_EX_MISSING, "No such GPU: `%s' (the module watches %s; see `%s status')", want,
			c->n ? have : "none", PROG_NAME);
}

int nvs_cli_select(struct nvs_cli *c, const char *want)
{
	int ret = nvs_cli_relist(c);

	if (ret || !want)
		return ret;
	return select_gpu(c, want);
}

int nvs_cli_open(struct nvs_cli *c, bool list, const char *want)
{
	memset(c, 0, sizeof(*c));
	if (nvs_open(&c->h) < 0)
		return out_fail(nvs_exit_for_errno(errno), "%s", nvs_last_error(NULL));
	if (!list && !want)
		return NVS_EX_OK;
	return nvs_cli_select(c, want);
}

void nvs_cli_close(struct nvs_cli *c)
{
	free(c->gpus);
	nvs_close(c->h);
	memset(c, 0, sizeof(*c));
}

int nvs_parse_gpu(const char *s, const struct nvs_gpu_info *gpus, size_t n,
		  uint32_t *index)
{
	uint32_t want;
	const char *p = s;

	if (!s || !*s)
		return -(errno = EINVAL);
	if (!strncmp(p, "gpu", 3))
		p += 3;
	if (!nvs_parse_u32(p, 0, UINT32_MAX, &want)) {
		for (size_t i = 0; i < n; ++i) {
			if (gpus[i].index == want) {
				*index = want;
				return 0;
			}
		}
		return -(errno = ENODEV);
	}
	for (size_t i = 0; i < n; ++i) {
		/* "01:00.0" names domain 0's "0000:01:00.0". */
		if (!strcasecmp(gpus[i].busid, s) ||
		    (!strncmp(gpus[i].busid, "0000:", 5) && !strcasecmp(gpus[i].busid + 5, s))) {
			*index = gpus[i].index;
			return 0;
		}
	}
	errno = strchr(s, ':') ? ENODEV : EINVAL;
	return -errno;
}
