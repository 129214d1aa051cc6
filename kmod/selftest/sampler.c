// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the sample ring (overwrite and loss accounting, what
 * NVS_CMD_SAMPLES_GET reports) and of thresholds (alarm, crossings,
 * history), on a GPU structure that no device backs. Built with
 * NVS_SELFTEST and run at load, before the netlink family exists, so the
 * threshold events they cause go nowhere.
 */

#define NVS_ST_CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		pr_err("%s self-test, line %d: " fmt "\n", what,	\
		       __LINE__, ##__VA_ARGS__);			\
		pass = false;						\
	}								\
} while (0)

static struct nvs_gpu *__init nvs_selftest_gpu(void)
{
	struct nvs_gpu *gpu = kzalloc(sizeof(*gpu), GFP_KERNEL);

	if (!gpu)
		return NULL;
	gpu->ring = kvcalloc(NVS_RING_LEN, sizeof(*gpu->ring), GFP_KERNEL);
	if (!gpu->ring) {
		kfree(gpu);
		return NULL;
	}
	mutex_init(&gpu->lock);
	gpu->nsensors = 3;
	return gpu;
}

static void __init nvs_selftest_gpu_free(struct nvs_gpu *gpu)
{
	mutex_destroy(&gpu->lock);
	kvfree(gpu->ring);
	kfree(gpu);
}

/* push n samples: sensor 0 = 10 * seq, sensor 1 invalid, sensor 2 = -seq */
static void __init nvs_selftest_push(struct nvs_gpu *gpu, unsigned int n)
{
	while (n--) {
		u64 seq = gpu->seq + 1;

		gpu->sensor[0].valid = true;
		gpu->sensor[0].mc = 10 * seq;
		gpu->sensor[1].valid = false;
		gpu->sensor[2].valid = true;
		gpu->sensor[2].mc = -(s32)seq;
		nvs_ring_push(gpu, 1000 * seq);
	}
}

static bool __init nvs_selftest_entries(const struct nvs_sample *s,
					unsigned int n, u64 first)
{
	unsigned int i;

	for (i = 0; i < n; i++, s++)
		if (s->seq != first + i || s->ts_ns != 1000 * s->seq ||
		    s->valid != (BIT(0) | BIT(2)) || s->mc[0] != 10 * s->seq ||
		    s->mc[1] || s->mc[2] != -(s32)s->seq)
			return false;
	return true;
}

bool __init nvs_selftest_ring(void)
{
	const char *what = "ring";
	struct nvs_sample *out;
	struct nvs_gpu *gpu;
	u64 lost, next;
	unsigned int n;
	bool pass = true;

	gpu = nvs_selftest_gpu();
	out = kvcalloc(NVS_RING_LEN, sizeof(*out), GFP_KERNEL);
	if (!gpu || !out) {
		pr_err("ring self-test: out of memory\n");
		kvfree(out);
		if (gpu)
			nvs_selftest_gpu_free(gpu);
		return false;
	}
	mutex_lock(&gpu->lock);

	/* empty: nothing, nothing lost, resume at 1 */
	n = nvs_ring_read(gpu, 0, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == 0 && lost == 0 && next == 1, "empty: n %u lost %llu next %llu", n, lost, next);

	nvs_selftest_push(gpu, 10);
	n = nvs_ring_read(gpu, 0, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == 10 && lost == 0 && next == 11 && nvs_selftest_entries(out, n, 1),
		     "10 pushed, since 0: n %u lost %llu next %llu", n, lost, next);
	n = nvs_ring_read(gpu, 5, out, 3, &lost, &next);
	NVS_ST_CHECK(n == 3 && lost == 0 && next == 8 && nvs_selftest_entries(out, n, 5),
		     "since 5, max 3: n %u lost %llu next %llu", n, lost, next);
	n = nvs_ring_read(gpu, 11, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == 0 && lost == 0 && next == 11, "caught up: n %u next %llu", n, next);
	/* a reader asking for the future resumes at the end */
	n = nvs_ring_read(gpu, 1000, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == 0 && lost == 0 && next == 11, "future: n %u next %llu", n, next);

	/* overwrite: 1124 pushed, the oldest kept is 101 */
	nvs_selftest_push(gpu, NVS_RING_LEN + 100 - 10);
	n = nvs_ring_read(gpu, 1, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == NVS_RING_LEN && lost == 100 && next == NVS_RING_LEN + 101 &&
		     nvs_selftest_entries(out, n, 101),
		     "wrapped, since 1: n %u lost %llu next %llu first %llu", n, lost, next, out[0].seq);
	n = nvs_ring_read(gpu, 0, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(n == NVS_RING_LEN && lost == 0 && out[0].seq == 101,
		     "wrapped, since 0 (oldest kept): n %u lost %llu", n, lost);
	n = nvs_ring_read(gpu, 101, out, 1, &lost, &next);
	NVS_ST_CHECK(n == 1 && lost == 0 && next == 102 && nvs_selftest_entries(out, 1, 101),
		     "oldest exactly: n %u lost %llu next %llu", n, lost, next);
	n = nvs_ring_read(gpu, 100, out, 1, &lost, &next);
	NVS_ST_CHECK(n == 1 && lost == 1 && out[0].seq == 101,
		     "one lost: n %u lost %llu", n, lost);

	/* several laps behind: everything between is counted lost */
	nvs_selftest_push(gpu, 3 * NVS_RING_LEN + 7);
	n = nvs_ring_read(gpu, 1124, out, NVS_RING_LEN, &lost, &next);
	NVS_ST_CHECK(gpu->seq == 4 * NVS_RING_LEN + 107 &&
		     lost == gpu->seq - NVS_RING_LEN + 1 - 1124 &&
		     n == NVS_RING_LEN && next == gpu->seq + 1 &&
		     nvs_selftest_entries(out, n, gpu->seq - NVS_RING_LEN + 1),
		     "laps behind: seq %llu n %u lost %llu next %llu", gpu->seq, n, lost, next);
	NVS_ST_CHECK(gpu->samples == gpu->seq, "samples %llu != seq %llu", gpu->samples, gpu->seq);

	mutex_unlock(&gpu->lock);
	kvfree(out);
	nvs_selftest_gpu_free(gpu);
	if (pass)
		pr_info("ring self-tests: pass\n");
	return pass;
}

bool __init nvs_selftest_threshold(void)
{
	const char *what = "threshold";
	struct nvs_sensor *s;
	struct nvs_gpu *gpu;
	bool pass = true;

	gpu = nvs_selftest_gpu();
	if (!gpu) {
		pr_err("threshold self-test: out of memory\n");
		return false;
	}
	s = &gpu->sensor[0];
	mutex_lock(&gpu->lock);

	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, 80000) == 0 && s->has_max, "set");
	nvs_update(gpu, 0, true, 79000);
	NVS_ST_CHECK(!s->alarm && s->crossings == 0, "below");
	nvs_update(gpu, 0, true, 81000);
	NVS_ST_CHECK(s->alarm && s->crossings == 1 && gpu->crossings == 1, "crossed");
	nvs_update(gpu, 0, true, 82000);
	NVS_ST_CHECK(s->alarm && s->crossings == 1, "staying above counts once");
	nvs_update(gpu, 0, true, 80000);
	NVS_ST_CHECK(!s->alarm && s->crossings == 1, "equal to the threshold is not above");
	nvs_update(gpu, 0, true, 80001);
	NVS_ST_CHECK(s->alarm && s->crossings == 2, "crossed again");
	/* readings stop while above: no reading, no crossing, no history */
	nvs_update(gpu, 0, false, 150000);
	NVS_ST_CHECK(!s->valid && s->crossings == 2 && s->highest == 82000 && s->mc == 80001,
		     "invalid reading changed state (crossings %llu highest %d)", s->crossings, s->highest);
	nvs_update(gpu, 0, true, 85000);
	NVS_ST_CHECK(s->alarm && s->crossings == 2, "back above after a gap is the same excursion");
	/* re-writing the threshold while above does not count a crossing */
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, 80000) == 0, "rewrite");
	nvs_update(gpu, 0, true, 85000);
	NVS_ST_CHECK(s->alarm && s->crossings == 2, "rewrite counted");
	/* clearing drops the alarm; nothing alarms without a threshold */
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, true, 0) == 0 && !s->has_max && !s->alarm, "clear");
	nvs_update(gpu, 0, true, 90000);
	NVS_ST_CHECK(!s->alarm && s->crossings == 2, "alarm without a threshold");
	/* a threshold set below the current reading alarms on the next one */
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, 70000) == 0, "set low");
	nvs_update(gpu, 0, true, 90000);
	NVS_ST_CHECK(s->alarm && s->crossings == 3 && gpu->crossings == 3, "set below");
	/* another sensor is independent */
	nvs_update(gpu, 1, true, 100000);
	NVS_ST_CHECK(!gpu->sensor[1].alarm && gpu->sensor[1].crossings == 0, "sensor 1");
	/* range and index checks */
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, NVS_THRESH_MIN_MC - 1) == -ERANGE, "below range");
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, NVS_THRESH_MAX_MC + 1) == -ERANGE, "above range");
	NVS_ST_CHECK(nvs_set_threshold(gpu, 0, false, NVS_THRESH_MIN_MC) == 0, "range min");
	NVS_ST_CHECK(nvs_set_threshold(gpu, -1, false, 0) == -EINVAL, "sensor -1");
	NVS_ST_CHECK(nvs_set_threshold(gpu, 3, false, 0) == -EINVAL, "sensor 3 of 3");
	/* history: highest/lowest since the reset, restarting at the current */
	NVS_ST_CHECK(s->highest == 90000 && s->lowest == 79000, "history %d..%d", s->lowest, s->highest);
	nvs_reset_history(gpu, 0);
	NVS_ST_CHECK(s->has_hist && s->highest == 90000 && s->lowest == 90000, "reset");
	nvs_update(gpu, 0, true, 60000);
	NVS_ST_CHECK(s->highest == 90000 && s->lowest == 60000, "after reset %d..%d", s->lowest, s->highest);
	gpu->sensor[2].valid = false;
	nvs_reset_history(gpu, -1);
	NVS_ST_CHECK(!gpu->sensor[2].has_hist && s->lowest == 60000, "reset of an invalid sensor");

	mutex_unlock(&gpu->lock);
	nvs_selftest_gpu_free(gpu);
	if (pass)
		pr_info("threshold self-tests: pass\n");
	return pass;
}
