// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * doctor's settings: one table of keys, shared by /etc/nvsidecar/doctor.conf
 * ("expect-gpus = 8") and the command line ("--expect-gpus 8"), so that a
 * setting is named and checked the same way in both.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check/doctor.h"
#include "lib/parse.h"
#include "libnvsidecar.h"

static const char *const keys[] = {
	"expect-gpus", "limit", "driver-version", "patched", "nvml", "lib", "gpu-ids", "textfile", "strict",
};

const struct nvs_doctor_opt nvs_doctor_run_opts[] = {
	{ "quick", false }, { "full", false }, { "brief", false }, { "json", false }, { "no-strict", false },
	{ "help", false }, { "config", true }, { "pci-dump", true },
};
const size_t nvs_doctor_run_nopts = sizeof(nvs_doctor_run_opts) / sizeof(nvs_doctor_run_opts[0]);

const char *nvs_doctor_opts_list(char *buf, size_t len, bool as_options)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; as_options && i < nvs_doctor_run_nopts && o < len; ++i)
		o += (size_t)snprintf(buf + o, len - o, "%s--%s%s", o ? " " : "", nvs_doctor_run_opts[i].name,
				      nvs_doctor_run_opts[i].value ? "=" : "");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && o < len; ++i)
		o += (size_t)snprintf(buf + o, len - o, "%s%s%s%s", !o ? "" : as_options ? " " : ", ",
				      as_options ? "--" : "", keys[i],
				      as_options && nvs_doctor_key_has_value(keys[i]) ? "=" : "");
	return buf;
}

bool nvs_doctor_key_has_value(const char *key)
{
	return strcmp(key, "strict") != 0;
}

bool nvs_doctor_key_known(const char *key)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); ++i)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static int set_path(char *dst, size_t len, const char *shown, const char *kind, const char *val, char *err,
		    size_t errlen)
{
	if (!*val || strlen(val) >= len) {
		snprintf(err, errlen, "Invalid %s: %s", shown, *val ? "path too long" : kind);
		return -EINVAL;
	}
	snprintf(dst, len, "%s", val);
	return 0;
}

int nvs_doctor_set(struct nvs_doctor_opts *o, const char *key, const char *val, const char *shown, char *err,
		   size_t errlen)
{
	if (!nvs_doctor_key_known(key)) {
		/*
		 * Options that choose one run (what to judge, how to show it)
		 * are not settings of the node: --pci-dump judges another
		 * machine's dump, which a file every health check reads must
		 * never make it do (admin review: the man page said it could).
		 */
		char list[512];

		nvs_doctor_opts_list(list, sizeof(list), false);
		for (size_t i = 0; i < nvs_doctor_run_nopts; ++i)
			if (!strcmp(key, nvs_doctor_run_opts[i].name)) {
				snprintf(err, errlen, "`%s' is not a doctor.conf key: it chooses one run; pass `--%s' on the command line (doctor.conf keys: %s)",
					 key, key, list);
				return -ENOENT;
			}
		snprintf(err, errlen, "Unknown setting `%s' (doctor.conf keys are the long options: %s)", key, list);
		return -ENOENT;
	}
	if (!val)
		val = "";
	if (!strcmp(key, "expect-gpus")) {
		uint32_t n;

		if (nvs_parse_u32(val, 0, 64, &n)) {
			snprintf(err, errlen, "Invalid %s `%s': a number of GPUs, 0 to 64", shown, val);
			return -EINVAL;
		}
		o->expect_gpus = (int)n;
	} else if (!strcmp(key, "limit")) {
		const char *colon = strrchr(val, ':');
		struct nvs_doctor_limit l = { 0 };
		size_t i;

		if (!colon || colon == val || (size_t)(colon - val) >= sizeof(l.sensor) ||
		    nvs_parse_celsius(colon + 1, -40000, 200000, &l.mc)) {
			snprintf(err, errlen, "Invalid %s `%s': SENSOR:CELSIUS, e.g. hotspot:100 or mem*:95.5 (-40 to 200 °C)",
				 shown, val);
			return -EINVAL;
		}
		snprintf(l.sensor, sizeof(l.sensor), "%.*s", (int)(colon - val), val);
		/* one limit per sensor name: a later one replaces it */
		for (i = 0; i < o->nlimits && strcmp(o->limits[i].sensor, l.sensor); ++i)
			;
		if (i == o->nlimits) {
			if (o->nlimits == NVS_DOCTOR_MAX_LIMITS) {
				snprintf(err, errlen, "Too many limits (at most %d)", NVS_DOCTOR_MAX_LIMITS);
				return -EINVAL;
			}
			o->nlimits++;
		} else {
			/* keep the order "last given wins" for overlapping globs */
			memmove(&o->limits[i], &o->limits[i + 1], (o->nlimits - i - 1) * sizeof(l));
			i = o->nlimits - 1;
		}
		o->limits[i] = l;
	} else if (!strcmp(key, "driver-version")) {
		if (!*val || strlen(val) >= sizeof(o->driver_version) || strspn(val, "0123456789.") != strlen(val) ||
		    !strchr(val, '.')) {
			snprintf(err, errlen, "Invalid %s `%s': the NVIDIA driver's, e.g. 575.64.03", shown, val);
			return -EINVAL;
		}
		snprintf(o->driver_version, sizeof(o->driver_version), "%s", val);
	} else if (!strcmp(key, "patched")) {
		return set_path(o->patched, sizeof(o->patched), shown, "empty directory name", val, err, errlen);
	} else if (!strcmp(key, "nvml")) {
		return set_path(o->nvml, sizeof(o->nvml), shown, "empty file name", val, err, errlen);
	} else if (!strcmp(key, "lib")) {
		return set_path(o->lib, sizeof(o->lib), shown, "empty file name", val, err, errlen);
	} else if (!strcmp(key, "textfile")) {
		return set_path(o->textfile, sizeof(o->textfile), shown, "empty file or directory name", val, err, errlen);
	} else if (!strcmp(key, "gpu-ids")) {
		int n = nvs_pci_parse_ids(val, o->ids, sizeof(o->ids) / sizeof(o->ids[0]));

		if (n < 0) {
			snprintf(err, errlen, "Invalid %s (expected VID:DID[,VID:DID...]): `%s'", shown, val);
			return -EINVAL;
		}
		o->nids = (size_t)n;
	} else if (!strcmp(key, "strict")) {
		if (!*val || !strcmp(val, "yes") || !strcmp(val, "true") || !strcmp(val, "1")) {
			o->strict = true;
		} else if (!strcmp(val, "no") || !strcmp(val, "false") || !strcmp(val, "0")) {
			o->strict = false;
		} else {
			snprintf(err, errlen, "Invalid %s `%s': yes or no", shown, val);
			return -EINVAL;
		}
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/*
 * A doctor.conf is a few lines of text: anything larger, or with a NUL
 * byte, is another file given by mistake, and saying so beats "line too
 * long" on a binary.
 */
#define CONF_MAX (64 * 1024)

/* The same setting twice in one file: "limit" once per sensor. */
static bool seen_before(char (*seen)[64], unsigned int *lines, size_t *nseen, const char *k, const char *v,
			unsigned int no, unsigned int *first, char *id)
{
	if (!strcmp(k, "limit"))
		snprintf(id, 64, "`limit' for %.*s", (int)strcspn(v, ":"), v);
	else
		snprintf(id, 64, "`%s'", k);
	for (size_t i = 0; i < *nseen; ++i)
		if (!strcmp(seen[i], id)) {
			*first = lines[i];
			return true;
		}
	if (*nseen < 64) {
		snprintf(seen[*nseen], 64, "%s", id);
		lines[(*nseen)++] = no;
	}
	return false;
}

static int parse_conf(struct nvs_doctor_opts *o, const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	char seen[64][64], id[64], e[512], *p = buf, *end = buf + len;
	unsigned int lines[64], no = 0, first;
	size_t nseen = 0;

	/* a UTF-8 byte order mark, which some editors write first */
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		p += 3;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *k, *v, *eq;

		if (nl)
			*nl = 0;
		else
			*end = 0;
		no++;
		k = p;
		p = nl ? nl + 1 : end;
		if (strlen(k) > 4096) {
			snprintf(err, errlen, "%s:%u: line too long (over 4096 bytes)", path, no);
			return -EINVAL;
		}
		k[strcspn(k, "#")] = 0;
		k = trim(k);
		if (!*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			/* a run's option as a word ("no-strict"): the same words as "no-strict = 1" (admin review L6) */
			for (size_t i = 0; i < nvs_doctor_run_nopts; ++i)
				if (!strcmp(k, nvs_doctor_run_opts[i].name) ||
				    (k[0] == '-' && k[1] == '-' && !strcmp(k + 2, nvs_doctor_run_opts[i].name))) {
					nvs_doctor_set(o, nvs_doctor_run_opts[i].name, NULL, k, e, sizeof(e));
					snprintf(err, errlen, "%s:%u: %s", path, no, e);
					return -EINVAL;
				}
			snprintf(err, errlen, "%s:%u: expected `key = value', got `%.200s'", path, no, k);
			return -EINVAL;
		}
		*eq = 0;
		v = trim(eq + 1);
		k = trim(k);
		if (nvs_doctor_set(o, k, v, k, e, sizeof(e))) {
			snprintf(err, errlen, "%s:%u: %s", path, no, e);
			return -EINVAL;
		}
		/*
		 * Every health check reads this file from its own working
		 * directory: a relative textfile would be written wherever
		 * that is, or fail after every check ran (admin review L7).
		 */
		if (!strcmp(k, "textfile") && v[0] != '/' && strcmp(v, "-")) {
			snprintf(err, errlen, "%s:%u: textfile `%.200s' is a relative path, which each run would take from its own working directory; use an absolute path (a file, or node_exporter's textfile directory)",
				 path, no, v);
			return -EINVAL;
		}
		/*
		 * Last-wins would let a forgotten line at the end override the
		 * one the admin edits; which one was meant is theirs to say.
		 */
		if (seen_before(seen, lines, &nseen, k, v, no, &first, id)) {
			snprintf(err, errlen, "%s:%u: %s is already set on line %u; keep one of the two lines", path,
				 no, id, first);
			return -EINVAL;
		}
	}
	return 0;
}

int nvs_doctor_conf_load(struct nvs_doctor_opts *o, const char *path, char *err, size_t errlen)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd, ret;

	/*
	 * O_NONBLOCK: open() of a FIFO without a writer would block for ever;
	 * so opened, fstat() tells it apart. A directory is not a
	 * configuration either.
	 */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "Unable to read %s: %s%s", path, strerror(errno),
			 errno == EACCES ? " (run as root, or make it readable)" : "");
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "Unable to read %s: not a regular file (pass the doctor.conf file itself)", path);
		close(fd);
		return -EINVAL;
	}
	buf = malloc(CONF_MAX + 2);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, CONF_MAX + 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			snprintf(err, errlen, "Unable to read %s: %s", path, strerror(errno));
			goto out;
		}
		if (!r || (len += (size_t)r) > CONF_MAX)
			break;
	}
	if (len > CONF_MAX) {
		snprintf(err, errlen, "%s is over %d KiB: not a doctor.conf (a few `key = value' lines)", path,
			 CONF_MAX / 1024);
		ret = -EINVAL;
	} else if (memchr(buf, 0, len)) {
		const char *z = memchr(buf, 0, len);
		unsigned int no = 1;

		for (const char *c = buf; c < z; ++c)
			no += *c == '\n';
		snprintf(err, errlen, "%s:%u: a NUL byte: not a text file (a doctor.conf holds `key = value' lines)",
			 path, no);
		ret = -EINVAL;
	} else {
		ret = parse_conf(o, path, buf, len, err, errlen);
	}
out:
	free(buf);
	close(fd);
	return ret;
}
