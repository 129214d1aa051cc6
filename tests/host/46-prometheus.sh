#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# What nvsidecar ships for the engines clusters run, checked with their own
# tools: docs/prometheus/nvsidecar.rules.yml with `promtool check rules' and
# its unit tests (`promtool test rules'), the Grafana dashboard as JSON
# with a query in every panel, tests/prometheus/promql_names.py failing on a
# scrape that lacks a metric, the new systemd units with `systemd-analyze
# verify', and scripts/slurm (bash -n, --help, bad arguments). The real
# node_exporter scrape and the real Slurm daemons are in the VM lanes
# (tests/vm/t-prometheus.sh, t-slurm.sh).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
prom=$top/docs/prometheus
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v promtool >/dev/null; then
	t_skip prometheus-rules "promtool is not installed (scripts/deps.sh installs the prometheus package)"
else
	out=$(promtool check rules "$prom/nvsidecar.rules.yml" 2>&1)
	[[ $? == 0 ]] && grep -q 'SUCCESS: 10 rules found' <<<"$out" && t_pass prometheus-check-rules ||
		t_fail prometheus-check-rules "$(tr '\n' ' ' <<<"$out")"
	out=$(cd "$prom" && promtool test rules nvsidecar.rules.test.yml 2>&1)
	rc=$?
	echo "$out" >"$NVS_BUILD/promtool-test-rules.txt"
	[[ $rc == 0 ]] && grep -q SUCCESS <<<"$out" && t_pass prometheus-test-rules ||
		t_fail prometheus-test-rules "$(head -n 12 <<<"$out" | tr -s '\n ' ' ')"
	# the tests can fail: the same tests against a rule file with the hotspot at 105 °C
	cp "$prom"/nvsidecar.rules*.yml "$work/"
	sed -i 's/{label="hotspot"} >= 100$/{label="hotspot"} >= 105/' "$work/nvsidecar.rules.yml"
	(cd "$work" && promtool test rules nvsidecar.rules.test.yml >/dev/null 2>&1)
	[[ $? != 0 ]] && t_pass prometheus-test-rules-bite || t_fail prometheus-test-rules-bite "a 105 °C threshold passed the 100 °C tests"
fi

# Every alert links to its own heading in docs/prometheus/README.md (the
# anchor a Markdown renderer gives "## NvsidecarX" is "#nvsidecarx");
# 81-install-paths checks the link once installed.
if ! "$py" -c 'import yaml' 2>/dev/null; then
	t_skip prometheus-runbooks "python3-yaml is not installed (scripts/deps.sh)"
else
	got=$("$py" - "$prom/nvsidecar.rules.yml" "$prom/README.md" <<'EOF'
import re, sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
heads = {h.strip().lower() for h in re.findall(r"^## (.*)$", open(sys.argv[2]).read(), re.M)}
bad = []
for r in rules:
    url = r.get("annotations", {}).get("runbook_url", "")
    if url != "@RUNBOOK_URL@#" + r["alert"].lower() or r["alert"].lower() not in heads:
        bad.append(r["alert"] + "=" + url)
print(len(rules), bad)
EOF
	)
	[[ $got == "7 []" ]] && t_pass prometheus-runbooks || t_fail prometheus-runbooks "$got"
fi

if ! "$py" -c 'import yaml' 2>/dev/null; then
	t_skip prometheus-dashboard "python3-yaml is not installed (scripts/deps.sh)"
else
	got=$("$py" - "$prom/nvsidecar-dashboard.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
panels = [p for p in d["panels"] if p["type"] != "row"]
empty = [p["title"] for p in panels if not any(t.get("expr") for t in p.get("targets", []))]
ids = [p["id"] for p in d["panels"]]
print(len(panels), empty, len(ids) == len(set(ids)), d["uid"])
EOF
	)
	[[ $got == "10 [] True nvsidecar-gpu-nodes" ]] && t_pass prometheus-dashboard-json || t_fail prometheus-dashboard-json "$got"
	# T3-04: the node list comes from the doctor's metrics, so a node whose
	# module failed to load (no nvsidecar hwmon chip) is still listed with
	# its verdict, and "All" matches every node, listed or not
	got=$("$py" -c '
import json, sys
v = [x for x in json.load(open(sys.argv[1]))["templating"]["list"] if x["name"] == "instance"][0]
print(v["query"]["query"], v.get("allValue"))' "$prom/nvsidecar-dashboard.json" 2>&1)
	[[ $got == "label_values(nvsidecar_doctor_last_run_timestamp_seconds, instance) .*" ]] &&
		t_pass prometheus-dashboard-nodes || t_fail prometheus-dashboard-nodes "$got"
	# promql_names.py: a scrape without the doctor's textfile lacks its metrics
	cat >"$work/scrape.txt" <<'EOF'
# HELP node_hwmon_chip_names Annotation metric for human-readable chip names
# TYPE node_hwmon_chip_names gauge
node_hwmon_chip_names{chip="0000:02:00_0_0000:03:00_0",chip_name="nvsidecar"} 1
node_hwmon_sensor_label{chip="0000:02:00_0_0000:03:00_0",label="hotspot",sensor="temp1"} 1
node_hwmon_temp_celsius{chip="0000:02:00_0_0000:03:00_0",sensor="temp1"} 92.25
node_hwmon_temp_highest_celsius{chip="0000:02:00_0_0000:03:00_0",sensor="temp1"} 92.25
EOF
	out=$("$py" "$top/tests/prometheus/promql_names.py" "$work/scrape.txt" "$prom/nvsidecar.rules.yml" "$prom/nvsidecar-dashboard.json" 2>&1)
	rc=$?
	[[ $rc == 1 ]] && grep -q '^FAIL rule NvsidecarDoctorStale: not in the scrape: nvsidecar_doctor_last_run_timestamp_seconds' <<<"$out" &&
		grep -q '^ok   rule nvsidecar:gpu_temp_celsius' <<<"$out" && t_pass prometheus-names-bite ||
		t_fail prometheus-names-bite "rc $rc: $(grep -m2 FAIL <<<"$out")"
	# ... and with the textfile doctor writes, every query is satisfied
	if make -s -C "$top/user" O="$NVS_BUILD/prom-u" WERROR=1 -j2 >"$work/build" 2>&1; then
		mkdir -p "$work/root"
		NVS_DOCTOR_ROOT=$work/root "$NVS_BUILD/prom-u/nvsidecar" doctor --quick --expect-gpus 1 --textfile "$work/tf.prom" >/dev/null 2>&1
		# the driver temperature needs NVML and a GPU: one line in the textfile format
		echo 'nvsidecar_gpu_driver_temperature_celsius{gpu="gpu0",busid="0000:03:00.0",chip="0000:02:00_0_0000:03:00_0"} 61' >>"$work/tf.prom"
		echo 'nvsidecar_gpu_info{gpu="gpu0",busid="0000:03:00.0",model="gb202",status="ok",chip="0000:02:00_0_0000:03:00_0"} 1' >>"$work/tf.prom"
		cat "$work/tf.prom" >>"$work/scrape.txt"
		out=$("$py" "$top/tests/prometheus/promql_names.py" "$work/scrape.txt" "$prom/nvsidecar.rules.yml" "$prom/nvsidecar-dashboard.json" 2>&1)
		[[ $? == 0 ]] && t_pass prometheus-names-textfile || t_fail prometheus-names-textfile "$(grep -m2 FAIL <<<"$out")"
	else
		t_fail prometheus-names-textfile "the helper does not build: $(tail -3 "$work/build" | tr '\n' ' ')"
	fi
fi

# the timers' units, as systemd reads them (@BINDIR@ as make install fills it in)
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$work/units"
	for u in nvsidecar-metrics.service nvsidecar-metrics.timer nvsidecar-idle-fix.service nvsidecar-idle-fix.timer \
		nvsidecar.service; do
		sed "s|@BINDIR@|$NVS_BUILD/prom-u|" "$top/scripts/systemd/$u" >"$work/units/$u"
	done
	out=$(cd "$work/units" && systemd-analyze verify --man=no ./nvsidecar-metrics.service ./nvsidecar-metrics.timer \
		./nvsidecar-idle-fix.service ./nvsidecar-idle-fix.timer 2>&1)
	[[ -z $out ]] && t_pass systemd-units-verify || t_fail systemd-units-verify "$(head -n 3 <<<"$out" | tr '\n' ' ')"
else
	t_skip systemd-units-verify "systemd-analyze is not installed"
fi

# scripts/slurm: syntax, --help, bad arguments (the drains are t-slurm.sh's)
hc=$top/scripts/slurm/nvsidecar-healthcheck
bash -n "$hc" && bash -n "$top/scripts/slurm/nvsidecar.nhc" && t_pass slurm-scripts-syntax || t_fail slurm-scripts-syntax "bash -n failed"
"$hc" --help | grep -q 'HealthCheckProgram' && t_pass slurm-healthcheck-help || t_fail slurm-healthcheck-help "no help"
"$hc" --bogus >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "unknown argument" "$work/err" && t_pass slurm-healthcheck-bad-arg || t_fail slurm-healthcheck-bad-arg "$(cat "$work/err")"
