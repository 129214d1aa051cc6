#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# One install layout, whichever route (review T3-03): `make install' with
# its default PREFIX=/usr/local, `make install PREFIX=/usr' (the .deb's
# route) and the RPM's libexec layout each install into a DESTDIR, and
# every path under /usr, /etc or /lib that an installed text file names for
# nvsidecar (slurm.conf example, health check, NHC file, man page, units)
# must exist there; no @NAME@ may be left unsubstituted.
#
# Not installed on purpose, so not looked for: files an admin creates or
# copies (modprobe.d and dracut cmdline.d settings, the NHC check under
# /etc/nhc, a doctor.conf of another name).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

work=$(mktemp -d /tmp/nvs-paths.XXXXXX)
trap 'rm -rf "$work"' EXIT
u=$NVS_BUILD/paths-u
if ! make -s -C "$NVS_TOP/user" O="$u" -j2 >"$work/build" 2>&1; then
	t_fail install-paths-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
admin_paths='^/etc/modprobe\.d/|^/lib/modprobe\.d/|^/usr/lib/modprobe\.d/|^/etc/cmdline\.d/|^/etc/nhc/|^/etc/nvsidecar/gpu\.conf$'

route() { # NAME MAKE-VARIABLES...
	local name=$1 d=$work/$1 missing='' left='' p q
	shift
	if ! make -s -C "$NVS_TOP" --no-print-directory install-helper install-dkms DESTDIR="$d" USER_O="$u" "$@" \
		>"$work/$name.log" 2>&1; then
		t_fail "install-paths-$name" "make install: $(tail -3 "$work/$name.log" | tr '\n' ' ')"
		return
	fi
	# text files only; roff's \- is a plain - in a path
	while IFS= read -r -d '' f; do
		grep -Iq . "$f" || continue
		sed 's/\\-/-/g' "$f" | grep -oE '(^|[^A-Za-z0-9_./-])(/usr|/etc|/lib)/[A-Za-z0-9._/-]*' | sed 's/^[^/]//'
	done < <(find "$d" -type f -print0) | grep nvsidecar | sort -u >"$work/$name.paths"
	left=$(grep -rlIE '@[A-Z]+@' "$d" | sed "s|^$d||" | tr '\n' ' ')
	while IFS= read -r p; do
		q=${p%/}
		q=${q%.}
		[[ $q =~ $admin_paths ]] && continue
		[[ -e $d$q ]] || missing+=" $p"
	done <"$work/$name.paths"
	if [[ -z $missing && -z $left && -s $work/$name.paths ]]; then
		t_pass "install-paths-$name ($(wc -l <"$work/$name.paths") paths named, all installed)"
	else
		t_fail "install-paths-$name" "named but not installed:${missing:- none}; @NAME@ left in:${left:- none}"
	fi
}

route make-install
route prefix-usr PREFIX=/usr
route rpm-layout PREFIX=/usr LIBDIR=/usr/lib64 LIBEXECDIR=/usr/libexec/nvsidecar UNITDIR=/usr/lib/systemd/system
# the example Slurm is pointed at names the installed, executable program
hc=$(sed -n 's/^HealthCheckProgram=//p' "$work/make-install/usr/local/share/doc/nvsidecar/examples/slurm.conf" 2>/dev/null)
[[ $hc == /usr/local/lib/nvsidecar/nvsidecar-healthcheck && -x $work/make-install$hc ]] &&
	t_pass install-paths-slurm-example || t_fail install-paths-slurm-example "HealthCheckProgram=$hc"
# every alert's runbook_url, as installed, is the installed README with a
# heading of that name (the rules test passes with the link substituted)
rb=''
for r in make-install prefix-usr; do
	d=$work/$r
	while IFS= read -r url; do
		f=${url#file://}
		f=${f%%#*}
		grep -qix "## ${url##*#}" "$d$f" 2>/dev/null || rb+=" $r:$url"
	done < <(sed -n 's/^ *runbook_url: "\(.*\)"$/\1/p' "$d"/usr/*/share/nvsidecar/prometheus/nvsidecar.rules.yml "$d"/usr/share/nvsidecar/prometheus/nvsidecar.rules.yml 2>/dev/null)
done
n=$(grep -c 'runbook_url: "file:///usr/local/share/nvsidecar/prometheus/README.md#' \
	"$work/make-install/usr/local/share/nvsidecar/prometheus/nvsidecar.rules.yml" 2>/dev/null)
[[ -z $rb && $n == 7 ]] && command -v promtool >/dev/null &&
	(cd "$work/prefix-usr/usr/share/nvsidecar/prometheus" && promtool test rules nvsidecar.rules.test.yml >/dev/null 2>&1) &&
	t_pass install-paths-runbooks || t_fail install-paths-runbooks "links in make-install: ${n:-0} of 7; unresolved:${rb:- none}"
# Admin review finding 2: `make uninstall' keeps a settings file the admin
# edited (as dpkg keeps a changed conffile) and says so; an unchanged one
# goes with the rest (80-packaging checks that nothing else is left).
d=$work/make-install
if [[ -f $d/etc/nvsidecar/doctor.conf && -f $d/etc/default/nvsidecar ]]; then
	echo 'expect-gpus = 8' >>"$d/etc/nvsidecar/doctor.conf"
	echo 'NVSIDECAR_DOCTOR_ARGS="--strict"' >>"$d/etc/default/nvsidecar"
	out=$(make -s -C "$NVS_TOP" --no-print-directory uninstall DESTDIR="$d" 2>&1)
	rc=$?
	left=$(cd "$d" && find . -type f | sort | tr '\n' ' ')
	[[ $rc == 0 && $left == "./etc/default/nvsidecar ./etc/nvsidecar/doctor.conf " ]] &&
		grep -q "Keeping $d/etc/nvsidecar/doctor.conf: changed since install" <<<"$out" &&
		grep -q "Keeping $d/etc/default/nvsidecar: changed since install" <<<"$out" &&
		tail -n1 "$d/etc/nvsidecar/doctor.conf" | grep -qx 'expect-gpus = 8' &&
		t_pass install-uninstall-keeps-edited-conffiles ||
		t_fail install-uninstall-keeps-edited-conffiles "rc $rc, left: ${left:-nothing}; $(tr '\n' ' ' <<<"$out")"
else
	t_fail install-uninstall-keeps-edited-conffiles "make install put no doctor.conf or /etc/default/nvsidecar into $d"
fi
