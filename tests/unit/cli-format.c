// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Drives the output formatters of `thermal', `status' and `events' with
 * fixed GPUs and events, so that tests/host/40-cli.sh can check the JSON
 * with a real parser and compare --dump with its documented columns,
 * without a kernel module. Built three times (-DFMT_THERMAL, -DFMT_STATUS,
 * -DFMT_EVENTS); the argument picks the format: json, dump, table, human.
 */
#if defined(FMT_THERMAL)
#include "../../user/cmd/thermal.c"
#elif defined(FMT_STATUS)
#include "../../user/cmd/status.c"
#elif defined(FMT_EVENTS)
#include "../../user/cmd/events.c"
#else
#error "define FMT_THERMAL, FMT_STATUS or FMT_EVENTS"
#endif

static __attribute__((unused)) void fake_gpus(struct nvs_gpu_info *g)
{
	static const char *const labels[] = { "hotspot", "average", "ch0", "mem0" };

	memset(g, 0, 2 * sizeof(*g));
	g[0].index = 0;
	snprintf(g[0].busid, sizeof(g[0].busid), "0000:03:00.0");
	g[0].vendor = 0x10de;
	g[0].device = 0x2b85;
	snprintf(g[0].chip, sizeof(g[0].chip), "gb202");
	snprintf(g[0].name, sizeof(g[0].name), "GeForce RTX 5090");
	g[0].sample_hz = 50;
	g[0].seq = 1234;
	g[0].flags = NVS_GPU_F_SIMULATED;
	g[0].nsensors = 4;
	for (unsigned int i = 0; i < 4; ++i) {
		struct nvs_sensor_info *s = &g[0].sensors[i];

		s->id = i;
		snprintf(s->label, sizeof(s->label), "%s", labels[i]);
		s->valid = i != 3;
		s->mc = 60000 + (int32_t)i * 1001;
		s->has_peak = s->has_low = i != 3;
		s->peak = i == 0 ? s->mc : 90000;
		s->low = -5250;
	}
	g[0].sensors[0].has_max = true;
	g[0].sensors[0].max = 55000;
	g[0].sensors[0].alarm = true;
	g[1] = g[0];
	g[1].index = 1;
	snprintf(g[1].busid, sizeof(g[1].busid), "0000:04:00.0");
	g[1].status = NVS_STATUS_NO_DRIVER;
	/* Everything a string can hold must come out as valid JSON. */
	snprintf(g[1].reason, sizeof(g[1].reason), "driver \"nvidia\"\tunbound\n\\ \x01");
	g[1].nsensors = 0;
}

#ifdef FMT_EVENTS
static void fake_events(void)
{
	struct nvs_event_info ev = { .type = NVS_EVENT_THRESHOLD_CROSSED, .ts_ns = 12345678901234ULL,
				     .has_gpu = true, .gpu = 0, .busid = "0000:03:00.0",
				     .has_sensor = true };

	ev.sensor.id = 0;
	snprintf(ev.sensor.label, sizeof(ev.sensor.label), "hotspot");
	ev.sensor.valid = true;
	ev.sensor.mc = 96250;
	ev.sensor.has_max = true;
	ev.sensor.max = 95000;
	ev.sensor.alarm = true;
	show_event(&ev);
	ev.type = NVS_EVENT_THRESHOLD_CLEARED;
	ev.sensor.mc = 94000;
	ev.sensor.alarm = false;
	show_event(&ev);
	memset(&ev, 0, sizeof(ev));
	ev.type = NVS_EVENT_STATUS_CHANGED;
	ev.has_gpu = true;
	ev.gpu = 1;
	ev.has_status = true;
	ev.status = NVS_STATUS_NO_DRIVER;
	snprintf(ev.reason, sizeof(ev.reason), "quote \" backslash \\");
	show_event(&ev);
	memset(&ev, 0, sizeof(ev));
	ev.type = 99;	/* from a newer module */
	show_event(&ev);
}
#endif

int main(int argc, char **argv)
{
	struct nvs_gpu_info g[2];
	const char *m = argc > 1 ? argv[1] : "";

	fake_gpus(g);
	setenv("NO_COLOR", "1", 1);
	out_set_json(!strcmp(m, "json"));
#if defined(FMT_THERMAL)
	if (!strcmp(m, "dump")) {
		show(g, 2, false, "\n", ROW_DUMP);
	} else if (!strcmp(m, "json") || !strcmp(m, "table")) {
		out_begin(true);
		show(g, 2, true, "\n", row_mode(false));
	} else {
		return 2;
	}
#elif defined(FMT_STATUS)
	if (strcmp(m, "json") && strcmp(m, "human"))
		return 2;
	out_begin(true);
	show("0.1.0", 1, g, 2);
#else
	if (!strcmp(m, "json") || !strcmp(m, "human"))
		fake_events();
	else
		return 2;
#endif
	/* out_finish() closes the result document, as main() does */
	return out_finish(out_end() ? 1 : 0);
}
