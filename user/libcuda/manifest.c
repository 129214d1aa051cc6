// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/io.h"
#include "libcuda/manifest.h"

#define MAGIC "nvsidecar-libcuda-manifest"

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; ++i)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

static int unhex(const char *s, uint8_t *b, size_t max)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > max || !n)
		return -1;
	for (size_t i = 0; i < n / 2; ++i) {
		unsigned int x;

		if (sscanf(s + 2 * i, "%2x", &x) != 1)
			return -1;
		b[i] = x;
	}
	return n / 2;
}

void lc_manifest_free(struct lc_manifest *m)
{
	free(m->sites);
	m->sites = NULL;
	m->nsites = 0;
}

int lc_manifest_read(const char *path, struct lc_manifest *m, char *err, size_t errlen)
{
	/* O_NONBLOCK and a type check: a FIFO must not hang `status'. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char line[8192];
	int lineno = 0, ret = 0;
	bool magic = false;
	struct stat st;
	FILE *f;

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return -errno;
	f = NULL;
	if (fstat(fd, &st) >= 0 && S_ISREG(st.st_mode))
		f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "`%s' is not a regular file", path);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		char *val, *nl = strchr(line, '\n');

		lineno++;
		if (nl)
			*nl = 0;
		val = strchr(line, '\t');
		if (!val)
			goto bad;
		*val++ = 0;
#define S(k) else if (!strcmp(line, #k)) snprintf(m->k, sizeof(m->k), "%s", val)
		if (!strcmp(line, MAGIC))
			magic = !strcmp(val, "1");
		S(tool_version); S(mode); S(source); S(source_sha256); S(driver_version);
		S(output); S(output_sha256); S(backup); S(created); S(name_version); S(version_mismatch);
		else if (!strcmp(line, "field"))
			m->field = strtoul(val, NULL, 0);
		else if (!strcmp(line, "mask"))
			m->mask = strtoul(val, NULL, 0);
		else if (!strcmp(line, "site")) {
			struct lc_msite s = { 0 };
			char *f2 = strchr(val, '\t'), *f3, *f4;
			int a, b;

			if (!f2)
				goto bad;
			f3 = strchr(f2 + 1, '\t');
			if (!f3)
				goto bad;
			*f2++ = 0;
			*f3++ = 0;
			f4 = strchr(f3, '\t');
			if (f4)
				*f4++ = 0;
			s.off = strtoull(val, NULL, 0);
			a = unhex(f2, s.old, sizeof(s.old));
			b = unhex(f3, s.new, sizeof(s.new));
			if (a < 0 || a != b)
				goto bad;
			s.len = a;
			snprintf(s.desc, sizeof(s.desc), "%s", f4 ? f4 : "");
			void *p = realloc(m->sites, (m->nsites + 1) * sizeof(s));

			if (!p) {
				ret = -ENOMEM;
				goto out;
			}
			m->sites = p;
			m->sites[m->nsites++] = s;
		}
#undef S
	}
	if (!magic || !m->source_sha256[0] || !m->output_sha256[0]) {
		lineno = 0;
		goto bad;
	}
	goto out;
bad:
	snprintf(err, errlen, "Malformed manifest `%s'%s (line %d); remove it and patch again", path,
		 lineno ? "" : ": missing header or hashes", lineno);
	lc_manifest_free(m);
	ret = -EINVAL;
out:
	fclose(f);
	return ret;
}

int lc_manifest_write(const char *path, const struct lc_manifest *m, char *err, size_t errlen)
{
	struct nvs_ofile o;
	FILE *f;
	int ret = nvs_ofile_open(&o, path, 0644, err, errlen);

	if (ret)
		return ret;
	f = o.f;
	fprintf(f, MAGIC "\t1\n");
	fprintf(f, "tool_version\t%s\nmode\t%s\ncreated\t%s\n", m->tool_version, m->mode, m->created);
	fprintf(f, "source\t%s\nsource_sha256\t%s\ndriver_version\t%s\n", m->source, m->source_sha256,
		m->driver_version);
	if (m->name_version[0])
		fprintf(f, "name_version\t%s\n", m->name_version);
	if (m->version_mismatch[0])
		fprintf(f, "version_mismatch\t%s\n", m->version_mismatch);
	fprintf(f, "output\t%s\noutput_sha256\t%s\n", m->output, m->output_sha256);
	if (m->backup[0])
		fprintf(f, "backup\t%s\n", m->backup);
	fprintf(f, "field\t0x%x\nmask\t0x%02x\n", m->field, m->mask);
	for (size_t i = 0; i < m->nsites; ++i) {
		char o[33], n[33];

		hex(o, m->sites[i].old, m->sites[i].len);
		hex(n, m->sites[i].new, m->sites[i].len);
		fprintf(f, "site\t0x%" PRIx64 "\t%s\t%s\t%s\n", m->sites[i].off, o, n, m->sites[i].desc);
	}
	ret = nvs_ofile_commit(&o, err, errlen);
	nvs_ofile_discard(&o);
	return ret;
}
