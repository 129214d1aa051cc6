// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The CSV recording format of `thermal --record' (cli/csv.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/csv.h"

/* RFC 4180: labels are ours, but quote anything a spreadsheet would split. */
static int csv_cell(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n"))
		return fputs(s, f) < 0 ? -1 : 0;
	if (fputc('"', f) == EOF)
		return -1;
	for (; *s; ++s) {
		if (*s == '"' && fputc('"', f) == EOF)
			return -1;
		if (fputc(*s, f) == EOF)
			return -1;
	}
	return fputc('"', f) == EOF ? -1 : 0;
}

int nvs_csv_header(FILE *f, const char *const *labels, size_t nlabels)
{
	if (fputs("gpu,seq,timestamp_ns", f) < 0)
		goto err;
	for (size_t i = 0; i < nlabels; ++i)
		if (fputc(',', f) == EOF || csv_cell(f, labels[i]))
			goto err;
	if (fputc('\n', f) == EOF)
		goto err;
	return 0;
err:
	return -(errno ? errno : EIO);
}

int nvs_csv_row(FILE *f, uint32_t gpu, const struct nvs_sample_entry *s,
		unsigned int nsensors, const int *col_of_sensor, size_t nlabels)
{
	const int32_t *cell[NVS_MAX_SENSORS + 1] = { 0 };
	char line[64 + NVS_MAX_SENSORS * 13], *p = line;
	size_t left = sizeof(line);
	int w;

	if (nlabels > NVS_MAX_SENSORS || nsensors > NVS_MAX_SENSORS) {
		errno = EINVAL;
		return -EINVAL;
	}
	for (unsigned int i = 0; i < nsensors; ++i)
		if (col_of_sensor[i] >= 0 && (size_t)col_of_sensor[i] < nlabels &&
		    (s->valid & (1U << i)))
			cell[col_of_sensor[i]] = &s->mc[i];
	w = snprintf(p, left, "%" PRIu32 ",%" PRIu64 ",%" PRIu64, gpu, s->seq, s->ts_ns);
	p += w;
	left -= w;
	for (size_t c = 0; c < nlabels; ++c) {
		w = cell[c] ? snprintf(p, left, ",%" PRId32, *cell[c]) : snprintf(p, left, ",");
		p += w;
		left -= w;
	}
	*p++ = '\n';
	if (fwrite(line, 1, p - line, f) != (size_t)(p - line))
		return -(errno ? errno : EIO);
	return 0;
}
