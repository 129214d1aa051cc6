#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv)
#
# Prometheus for real: Debian's node_exporter scrapes the simulated GPUs'
# hwmon chips and the textfile `nvsidecar doctor --textfile' writes (with a
# fake NVML, tests/nvml/fakenvml.c, for the driver's temperatures). From
# that one scrape (saved as $NVS_OUT/prom-scrape.txt):
#   - each GPU's chip label, chip name, sensor labels and temperatures are
#     what sysfs says (the label is derived here from the sysfs path, as
#     node_exporter does; the README quotes the result);
#   - doctor's nvsidecar_gpu_info and driver temperatures carry the same
#     chip label, so the rules and dashboard can join them;
#   - promtool accepts the exposition (check metrics);
#   - every query in docs/prometheus (rules and dashboard) names metrics the
#     scrape has (tests/prometheus/promql_names.py);
#   - the rules, run by promtool on the scrape's own series, give each GPU's
#     hotspot and hotspot-over-driver, and fire NvsidecarGpuHotspotHigh for
#     the one GPU set to 104 °C only (tests/prometheus/scrape_to_promtest.py).
set -u

if [[ $NVS_LANE == debug ]]; then
	t_skip prometheus "node_exporter and promtool under KASAN and emulation exceed the debug lane's budget; the module paths this file drives (load, hwmon reads) run there in t-thermal-*"
	exit 0
fi
ne=/usr/bin/prometheus-node-exporter
py=/usr/bin/python3
for p in "$ne" /usr/bin/promtool "$py" gcc; do
	if ! command -v "$p" >/dev/null; then
		t_skip prometheus "$p is not installed (scripts/deps.sh installs prometheus-node-exporter, prometheus, python3-yaml)"
		exit 0
	fi
done
if ! "$py" -c 'import yaml' 2>/dev/null; then
	t_skip prometheus "python3-yaml is not installed (scripts/deps.sh)"
	exit 0
fi
run=/run/nvs-prom
mkdir -p "$run/tf" "$run/root"
scrape=$NVS_OUT/prom-scrape.txt
rules=$NVS_TOP/docs/prometheus/nvsidecar.rules.yml
dash=$NVS_TOP/docs/prometheus/nvsidecar-dashboard.json
port=9100

t0=$SECONDS
phase() { echo "   $1 at $((SECONDS - t0)) s"; }

# node_exporter first: a Go program takes its time to start under
# emulation; the textfile collector reads the directory at each scrape.
"$ne" --collector.disable-defaults --collector.hwmon --collector.textfile \
	--collector.textfile.directory="$run/tf" --web.listen-address=127.0.0.1:$port >"$run/ne.log" 2>&1 &
nepid=$!
trap 'kill $nepid 2>/dev/null' EXIT
# The fake NVML, built here from its source (the guest has the host's gcc), meanwhile.
gcc -shared -fPIC -O2 -o "$run/libnvidia-ml.so.1" "$NVS_TOP/tests/nvml/fakenvml.c" 2>"$run/gcc.log" &
gccpid=$!

sim_fixture_all gb202
# GPU0 runs hot: over the 100 °C of NvsidecarGpuHotspotHigh
sim 0 temp hotspot 104
nvs_load || { t_fail prom-load "insmod failed"; exit 0; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status") == ok && $(read_err "$(hw_temp "$(sim_hwmon 0)" hotspot)_input") == 104000 ]]'

# chip_label BDF: node_exporter's chip label for a PCI device's hwmon:
# the parent device's name and the device's, lower case, [^a-z0-9:_] -> _.
chip_label() {
	local real parent
	real=$(readlink -f "/sys/bus/pci/devices/$1")
	parent=${real%/*}
	parent=${parent##*/}
	local l="${parent}_${real##*/}"
	l=${l,,}
	echo "${l//[^a-z0-9:_]/_}"
}

# mc2c MILLIDEG: C="104", "92.25", "79.301", as node_exporter prints °C (no forks)
mc2c() {
	local f
	printf -v f '%03d' $(($1 % 1000))
	while [[ $f == *0 ]]; do f=${f%0}; done
	C="$(($1 / 1000))${f:+.$f}"
}

# What sysfs says, for the one comparison below: "CHIP SENSOR LABEL °C|-".
# The fake NVML knows every simulated GPU, the driver saying 55 + N °C.
: >"$run/nvml.state"
: >"$run/sysfs.txt"
: >"$run/gpus.txt"
declare -A chip drv hot
for ((i = 0; i < NVS_GPUS; i++)); do
	b=$(sim_bdf "$i")
	h=$(sim_hwmon "$i")
	chip[$i]=$(chip_label "$b")
	drv[$i]=$((55 + i))
	echo "$b 0 0 ${drv[$i]} 80" >>"$run/nvml.state"
	for l in "$h"/temp*_label; do
		s=${l##*/}
		s=${s%_label}
		read -r lab <"$l"
		C=-
		# a sensor without a reading fails the read (ENODATA)
		if read -r v 2>/dev/null <"${l%_label}_input"; then
			mc2c "$v"
		fi
		[[ $lab == hotspot ]] && hot[$i]=$C
		echo "${chip[$i]} $s $lab $C" >>"$run/sysfs.txt"
	done
	# The module numbers GPUs in the order it finds them, which is not the
	# simulated GPU's number once an earlier file has unplugged and
	# replugged some (a replugged device goes to the end of the PCI list).
	c=$(sim_class "$i") || { t_fail prom-gpu-class "no class device for simulated GPU $i"; exit 0; }
	echo "${chip[$i]} ${c##*/} driver ${drv[$i]}" >>"$run/gpus.txt"
done

phase "fixtures, module and sysfs read"
if ! wait $gccpid; then
	t_fail prom-fakenvml "$(head -3 "$run/gcc.log")"
	exit 0
fi
# doctor's textfile: the empty NVS_DOCTOR_ROOT keeps the guest from reading
# the host's initramfs (tests/host/45-doctor.sh covers that part).
FAKE_NVML_STATE=$run/nvml.state NVS_DOCTOR_ROOT=$run/root "$NVS_BIN" doctor --nvml "$run/libnvidia-ml.so.1" \
	--expect-gpus "$NVS_GPUS" --textfile "$run/tf" >"$NVS_OUT/prom-doctor.txt" 2>&1
rc=$?
[[ -f $run/tf/nvsidecar.prom ]] && t_pass prom-textfile || t_fail prom-textfile "doctor exit $rc wrote no $run/tf/nvsidecar.prom: $(tail -n 2 "$NVS_OUT/prom-doctor.txt" | tr '\n' ' ')"
# GPU0's hidden hotspot (104 °C) against the driver's 55 °C: the throttling hint
grep -q "^WARN gpu      gpu[0-9]*-hotspot: $(sim_bdf 0) hotspot 104.0 °C while the driver reports 55 °C: the GPU is likely thermal-throttling" \
	"$NVS_OUT/prom-doctor.txt" && t_pass prom-doctor-hidden-hotspot ||
	t_fail prom-doctor-hidden-hotspot "$(grep -- '-hotspot' "$NVS_OUT/prom-doctor.txt" | tr '\n' ' ')"
left=$(shopt -s dotglob nullglob; f=("$run"/tf/*); echo "${f[*]##*/}")
[[ $left == nvsidecar.prom ]] && t_pass prom-textfile-alone ||
	t_fail prom-textfile-alone "the textfile directory holds: $left (a temporary file left behind?)"

phase "doctor --textfile"
up=0
for ((i = 0; i < 300; i++)); do
	if exec 3<>/dev/tcp/127.0.0.1/$port; then
		up=1
		break
	fi 2>/dev/null
	nvs_sleep 0.2
done
if ((!up)); then
	t_fail prom-node-exporter "node_exporter did not listen on 127.0.0.1:$port in 60 s: $(tail -n 3 "$run/ne.log" | tr '\n' ' ')"
	exit 0
fi
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
# the body follows the first empty line of the HTTP response
body=0
while IFS= read -r line <&3; do
	line=${line%$'\r'}
	if ((body)); then
		echo "$line"
	elif [[ -z $line ]]; then
		body=1
	fi
done >"$scrape"
exec 3>&-
kill $nepid 2>/dev/null
[[ -s $scrape ]] && grep -q '^node_hwmon_temp_celsius' "$scrape" && t_pass prom-scrape ||
	{ t_fail prom-scrape "no hwmon series in the scrape ($(wc -l <"$scrape") lines)"; exit 0; }

phase "scrape"
# --- what node_exporter made of the chips, and doctor's series beside them ---
# One Python process for all of it (each start costs seconds under emulation):
# the series against sysfs, then tests/prometheus/promql_names.py and
# scrape_to_promtest.py as modules.
args=()
for ((i = 0; i < NVS_GPUS; i++)); do
	args+=(--hotspot "${chip[$i]}=${hot[$i]}" --driver "${chip[$i]}=${drv[$i]}")
done
pyout=$("$py" - "$scrape" "$run/sysfs.txt" "$run/gpus.txt" "$NVS_GPUS" "$NVS_TOP/tests/prometheus" "$rules" "$dash" \
	"$NVS_OUT/prom-queries.txt" "$run/scrape.test.yml" "${args[@]}" --alert-hot "${chip[0]}" <<'PYEOF'
import contextlib, io, re, sys
scrape, sysfs, gpus, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tools, rules, dash, names_out, test_out = sys.argv[5:10]
gen_args = sys.argv[10:]
have = {}
for line in open(scrape, encoding="utf-8"):
    m = re.match(r'^([a-z_:]+)(\{.*\})? (\S+)$', line.strip())
    if m:
        have[(m.group(1), m.group(2) or "")] = m.group(3)
def val(name, labels):
    # node_exporter writes the labels sorted by name
    return have.get((name, "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels)) + "}" if labels else ""))
def num(s):
    return f"{float(s):g}"
bad = []
chips = set()
for line in open(sysfs):
    chip, sensor, label, c = line.split()
    chips.add(chip)
    if val("node_hwmon_sensor_label", [("chip", chip), ("label", label), ("sensor", sensor)]) != "1":
        bad.append(f"{chip}:{label}:label")
    got = val("node_hwmon_temp_celsius", [("chip", chip), ("sensor", sensor)])
    if c != "-" and (got is None or num(got) != num(c)):
        bad.append(f"{chip}:{label}={got} (sysfs {c})")
for chip in chips:
    if val("node_hwmon_chip_names", [("chip", chip), ("chip_name", "nvsidecar")]) != "1":
        bad.append(f"{chip}:chip_names")
    # no threshold set: tempN_max reads the module's ceiling, 200 °C
    if num(val("node_hwmon_temp_max_celsius", [("chip", chip), ("sensor", "temp1")]) or "0") != "200":
        bad.append(f"{chip}:max")
doc = []
for line in open(gpus):
    chip, gpu, _, drv = line.split()
    info = [k for k in have if k[0] == "nvsidecar_gpu_info" and f'chip="{chip}"' in k[1] and f'gpu="{gpu}"' in k[1]]
    if not info:
        doc.append(f"{gpu}:info")
    t = [v for k, v in have.items() if k[0] == "nvsidecar_gpu_driver_temperature_celsius" and f'chip="{chip}"' in k[1]]
    if t != [drv]:
        doc.append(f"{gpu}:driver-temp {t}")
for name, labels, want in [("nvsidecar_doctor_expected_gpus", [], str(n)), ("nvsidecar_doctor_gpus", [], str(n)),
                           ("nvsidecar_doctor_check_status", [("layer", "gpu"), ("check", "gpus"), ("status", "ok")], "1"),
                           ("node_textfile_scrape_error", [], "0")]:
    if val(name, labels) != want:
        doc.append(f"{name}={val(name, labels)}")
for name in ("nvsidecar_doctor_healthy", "nvsidecar_doctor_last_run_timestamp_seconds", "nvsidecar_doctor_duration_seconds"):
    if val(name, []) is None:
        doc.append(name)
print("hwmon " + (" ".join(bad) if bad else "ok") + f" ({len(chips)} chips)")
print("doctor " + (" ".join(doc) if doc else "ok"))
sys.path.insert(0, tools)
import promql_names, scrape_to_promtest
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = promql_names.main(["promql_names.py", scrape, rules, dash])
open(names_out, "w").write(buf.getvalue())
print(f"names {rc} " + " ".join(l for l in buf.getvalue().splitlines() if l.startswith("FAIL"))[:500])
sys.argv = ["scrape_to_promtest.py", scrape, rules, test_out] + gen_args
try:
    print(f"gen {scrape_to_promtest.main()}")
except SystemExit as e:
    print(f"gen 1 {e}")
PYEOF
)
echo "$pyout" >"$NVS_OUT/prom-series.txt"
l=$(sed -n 's/^hwmon //p' <<<"$pyout")
[[ $l == "ok ($NVS_GPUS chips)" ]] && t_pass prom-hwmon-series || t_fail prom-hwmon-series "${l:0:600}"
l=$(sed -n 's/^doctor //p' <<<"$pyout")
[[ $l == ok ]] && t_pass prom-doctor-series || t_fail prom-doctor-series "${l:0:600}"

phase "series, names and the rule test checked"
out=$(promtool check metrics <"$scrape" 2>&1)
# promtool lints node_exporter's own names too; only errors about ours count
ours=$(grep -i 'nvsidecar' <<<"$out")
[[ -z $ours ]] && t_pass prom-check-metrics || t_fail prom-check-metrics "$(head -n 3 <<<"$ours" | tr '\n' ' ')"

l=$(sed -n 's/^names //p' <<<"$pyout")
[[ $l == "0 " ]] && t_pass prom-queries-named || t_fail prom-queries-named "$l"

l=$(sed -n 's/^gen //p' <<<"$pyout")
if [[ $l == 0 ]]; then
	cp "$run/scrape.test.yml" "$NVS_OUT/prom-scrape.test.yml"
	out=$(cd "$run" && promtool test rules scrape.test.yml 2>&1)
	rc=$?
	echo "$out" >"$NVS_OUT/prom-promtool-test.txt"
	[[ $rc == 0 ]] && t_pass prom-rules-on-scrape || t_fail prom-rules-on-scrape "$(head -n 8 <<<"$out" | tr -s '\n ' ' ' | cut -c1-600)"
else
	t_fail prom-rules-on-scrape "could not write the test from the scrape: $l"
fi

phase "rules run on the scrape"
nvs_unload || t_fail prom-unload "rmmod failed"
