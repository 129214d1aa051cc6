#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vm: before -- tests/run boots no VM lane while this runs: it
#   installs the packages into the host root, which the guests see.
#
# Packaging and DKMS behaviour, on this machine (root; CI runs as root):
#   1. make install DESTDIR=... then make uninstall leaves nothing;
#   2. make deb builds nvsidecar-dkms and nvsidecar (no top-level debian/);
#   3. installing them builds and installs for 6.12 ("installed", not
#      "added"), signed with a throwaway key from a private DKMS config.
#      One kernel here (CI time): step 4 builds for a second one through
#      the kernel hook, and 20-kbuild builds every kernel W=1 C=2;
#   4. the kernel hook DKMS installs for header packages
#      (/etc/kernel/header_postinst.d/dkms = dkms autoinstall) builds for
#      another kernel (the debug kernel);
#   5. an upgrade to a deliberately broken version fails clearly, leaves no
#      trace of itself and keeps the installed module;
#   6. removing the packages leaves no nvsidecar.ko and no DKMS entry;
#   7. rpmbuild builds the spec (Debian's rpm, --nodeps), else rpmlint.
# The machine is left as found, also on failure (trap).
set -u
. "$(dirname "$0")/../lib.sh"

name=pkg
# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"
debian_kernels "$name"
((${#kernels[@]})) && kernels=("${kernels[-1]}")
# Another kernel for the header hook: the debug kernel (beside the clone).
dbg=
kern_resolve debug
drc=$? dwhy=$KERR
((drc == 0)) && dbg=$KREL
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$NVS_TOP/dkms.conf")

((EUID == 0)) || { t_skip "$name" "needs root (dpkg -i, dkms)"; exit 0; }
for c in dpkg-buildpackage dh dkms unshare flock openssl; do
	command -v $c >/dev/null || { t_skip "$name" "\`$c' is not installed (scripts/deps.sh installs it)"; exit 0; }
done

work=$(mktemp -d /var/tmp/nvs-pkg.XXXXXX)
log=$NVS_BUILD/packaging.log
: >"$log"
run() { echo "+ $*" >>"$log"; "$@" >>"$log" 2>&1; }
why() { echo "$(tail -n 4 "$log" | tr -s '\n\t ' ' ') (log: $log)"; }

# --- 1. make install / uninstall into DESTDIR ------------------------------
u=$work/user
if ! run make -C "$NVS_TOP/user" O="$u" -j2; then
	t_fail "$name: make user" "$(why)"
elif ! run make -C "$NVS_TOP" --no-print-directory install DESTDIR="$work/root" USER_O="$u"; then
	t_fail "$name: make install DESTDIR" "$(why)"
else
	r=$work/root
	missing=
	for f in usr/local/bin/nvsidecar usr/local/lib/libnvsidecar.so.1 usr/local/lib/libnvsidecar.so \
		usr/local/lib/libnvsidecar.a usr/local/include/libnvsidecar.h usr/local/include/nvsidecar.h \
		usr/src/nvsidecar-$ver/dkms.conf usr/src/nvsidecar-$ver/Kbuild usr/src/nvsidecar-$ver/Makefile \
		usr/src/nvsidecar-$ver/kmod/main.c usr/src/nvsidecar-$ver/kmod/uapi/nvsidecar.h \
		usr/share/initramfs-tools/hooks/nvsidecar usr/lib/dracut/modules.d/90nvsidecar/module-setup.sh \
		usr/local/lib/modules-load.d/nvsidecar.conf etc/default/nvsidecar \
		usr/local/lib/systemd/system/nvsidecar.service usr/local/share/nvsidecar/install-manifest; do
		[[ -e $r/$f ]] || missing="$missing $f"
	done
	# Only what the module build needs goes to /usr/src.
	extra=$(cd "$r/usr/src/nvsidecar-$ver" 2>/dev/null && find . -type f | grep -vE '^\./(Kbuild|Makefile|dkms\.conf|kmod/.*)$')
	if [[ -n $missing || -n $extra ]]; then
		t_fail "$name: make install DESTDIR" "missing:${missing:- none}; unexpected in /usr/src: ${extra:-none}"
	elif ! grep -q 'ExecStartPost=-/usr/local/bin/nvsidecar status' "$r/usr/local/lib/systemd/system/nvsidecar.service"; then
		t_fail "$name: make install DESTDIR" "the unit's @BINDIR@ was not substituted"
	else
		t_pass "$name: make install DESTDIR installs helper, library, DKMS tree, hooks and units"
	fi
	if ! run make -C "$NVS_TOP" --no-print-directory uninstall DESTDIR="$work/root"; then
		t_fail "$name: make uninstall DESTDIR" "$(why)"
	elif left=$(find "$work/root" -mindepth 1 | head -n 5) && [[ -n $left ]]; then
		t_fail "$name: make uninstall DESTDIR" "left behind: $(tr '\n' ' ' <<<"$left")"
	else
		t_pass "$name: make uninstall removes every file and directory install created"
	fi
	# Without a manifest there is nothing to go by: refuse, clearly.
	out=$(make -C "$NVS_TOP" --no-print-directory uninstall DESTDIR="$work/root" 2>&1)
	if [[ $? -ne 0 && $out == *"No install manifest"* ]]; then
		t_pass "$name: make uninstall without a manifest refuses"
	else
		t_fail "$name: make uninstall without a manifest" "got \`$out'"
	fi
fi

# --- everything below changes the system's DKMS and dpkg state --------------
exec 9>/run/lock/nvsidecar-dkms.lock
flock -w 1800 9 || { t_skip "$name: DKMS" "another nvsidecar DKMS test held /run/lock/nvsidecar-dkms.lock for 30 min"; rm -rf "$work"; exit 0; }
if [[ -n $(dkms status -m nvsidecar 2>/dev/null) ]] || dpkg-query -W nvsidecar-dkms nvsidecar >/dev/null 2>&1; then
	t_skip "$name: DKMS" "nvsidecar is already installed or in DKMS here; not touching the admin's install"
	rm -rf "$work"
	exit 0
fi
mok_before=$(ls /var/lib/dkms/mok.key 2>/dev/null)
cleanup() {
	dpkg --purge nvsidecar nvsidecar-dkms >>"$log" 2>&1
	if [[ -n $(dkms status -m nvsidecar 2>/dev/null) ]]; then
		dkms remove -m nvsidecar --all >>"$log" 2>&1
	fi
	# A version whose /usr/src tree is gone cannot be removed by dkms; lend
	# it the repository's sources (the package scripts do the same).
	local t v
	for t in /var/lib/dkms/nvsidecar/*/; do
		[[ -d $t && ! -e $t/source/dkms.conf ]] || continue
		v=$(basename "$t")
		mkdir -p "$work/lend-$v"
		(cd "$NVS_TOP" && cp -p --parents Makefile Kbuild dkms.conf kmod/*.c kmod/*.h kmod/*.sh kmod/uapi/*.h "$work/lend-$v/")
		sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$v\"/" "$work/lend-$v/dkms.conf"
		ln -sfn "$work/lend-$v" "$t/source"
		dkms remove -m nvsidecar -v "$v" --all >>"$log" 2>&1
	done
	[[ -z $mok_before ]] && rm -f /var/lib/dkms/mok.key /var/lib/dkms/mok.pub
	rm -rf "$work"
}
trap cleanup EXIT

# --- 2. make deb ---------------------------------------------------------------
t0=$SECONDS
if run make -C "$NVS_TOP" --no-print-directory deb BUILD="$work/b"; then
	dkmsdeb=$(ls "$work"/b/deb/nvsidecar-dkms_"$ver"-1_all.deb 2>/dev/null)
	helperdeb=$(ls "$work"/b/deb/nvsidecar_"$ver"-1_*.deb 2>/dev/null)
	if [[ -n $dkmsdeb && -n $helperdeb ]] &&
		dpkg-deb -c "$dkmsdeb" | grep >/dev/null "usr/src/nvsidecar-$ver/dkms.conf" &&
		dpkg-deb -c "$helperdeb" | grep >/dev/null 'usr/bin/nvsidecar$' &&
		[[ ! -e $NVS_TOP/debian ]]; then
		t_pass "$name: make deb builds nvsidecar-dkms and nvsidecar ($((SECONDS - t0)) s)"
	else
		t_fail "$name: make deb" "packages or their contents missing, or a debian/ appeared at the top level"
		exit 0
	fi
else
	t_fail "$name: make deb" "$(why)"
	exit 0
fi

# --- 3. install, signed with a throwaway key -----------------------------------
# DKMS reads its signing settings only from /etc/dkms/framework.conf{,.d};
# a private mount namespace shows it a framework.conf.d with the test key
# and nothing else on the host changes.
mkdir -p "$work/conf.d" "$work/key"
openssl req -new -x509 -nodes -days 2 -subj "/CN=nvsidecar CI throwaway key/" \
	-newkey rsa:2048 -keyout "$work/key/mok.key" -outform DER -out "$work/key/mok.der" >>"$log" 2>&1
printf 'mok_signing_key=%s\nmok_certificate=%s\n' "$work/key/mok.key" "$work/key/mok.der" >"$work/conf.d/test-key.conf"
t0=$SECONDS
if unshare -m --propagation private bash -c '
	mount --bind "$1" /etc/dkms/framework.conf.d
	NVSIDECAR_DKMS_KERNELS="$2" dpkg -i "$3" "$4"
' _ "$work/conf.d" "${kernels[*]}" "$dkmsdeb" "$helperdeb" >>"$log" 2>&1; then
	t_pass "$name: dpkg -i nvsidecar-dkms nvsidecar ($((SECONDS - t0)) s for ${#kernels[@]} kernels)"
else
	t_fail "$name: dpkg -i" "$(why)"
fi
for k in "${kernels[@]}"; do
	st=$(dkms status -m nvsidecar -v "$ver" -k "$k" 2>/dev/null)
	path=$(modinfo -k "$k" -F filename nvsidecar 2>/dev/null)
	if [[ $st == *": installed"* && $path == /lib/modules/$k/updates/dkms/nvsidecar.ko* ]]; then
		t_pass "$name: dkms status installed for $k"
	else
		t_fail "$name: dkms status for $k" "status \`$st', modinfo \`$path'"
	fi
	signer=$(modinfo -k "$k" -F signer nvsidecar 2>/dev/null)
	sig=$(modinfo -k "$k" -F sig_id nvsidecar 2>/dev/null)
	hash=$(modinfo -k "$k" -F sig_hashalgo nvsidecar 2>/dev/null)
	if [[ $signer == "nvsidecar CI throwaway key" && $sig == PKCS#7 && -n $hash ]]; then
		t_pass "$name: module for $k signed by the test key ($sig, $hash)"
	else
		t_fail "$name: module signature for $k" "signer \`$signer', sig_id \`$sig', hash \`$hash'"
	fi
done
if [[ -x /usr/bin/nvsidecar ]] && ! ldd /usr/bin/nvsidecar | grep -q 'not found'; then
	t_pass "$name: /usr/bin/nvsidecar installed with its libraries resolved"
else
	t_fail "$name: nvsidecar package" "/usr/bin/nvsidecar missing or unresolved: $(ldd /usr/bin/nvsidecar 2>&1 | grep 'not found' | tr '\n' ' ')"
fi

# --- 4. a kernel whose headers arrive later -------------------------------------
if [[ -n $dbg ]]; then
	t0=$SECONDS
	# What Debian's linux-headers packages run from their postinst.
	run /etc/kernel/header_postinst.d/dkms "$dbg"
	st=$(dkms status -m nvsidecar -v "$ver" -k "$dbg" 2>/dev/null)
	if [[ $st == *": installed"* && $(modinfo -k "$dbg" -F filename nvsidecar 2>/dev/null) == */updates/dkms/* ]]; then
		t_pass "$name: dkms autoinstall (header hook) builds for $dbg ($((SECONDS - t0)) s)"
	else
		t_fail "$name: dkms autoinstall for $dbg" "status \`$st' $(why)"
	fi
elif ((drc == 2)); then
	t_skip "$name: dkms autoinstall for another kernel" "no debug kernel: $dwhy"
else
	t_fail "$name: dkms autoinstall for another kernel" "$dwhy"
fi

# --- 5. a broken upgrade ----------------------------------------------------------
bad=$work/broken
mkdir -p "$bad"
(cd "$NVS_TOP" && tar -c --exclude=./build --exclude-vcs Kbuild Makefile dkms.conf kmod user scripts) | tar -x -C "$bad"
badver=$ver.1
sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$badver\"/" "$bad/dkms.conf"
echo 'this is not C;' >>"$bad/kmod/main.c"
k=${kernels[0]}
if ! run make -C "$bad" --no-print-directory deb DEBBUILDFLAGS=-A BUILD="$work/bb"; then
	t_fail "$name: broken upgrade" "could not build the broken package: $(why)"
else
	out=$(NVSIDECAR_DKMS_KERNELS=$k dpkg -i "$work"/bb/deb/nvsidecar-dkms_"$badver"-1_all.deb 2>&1)
	rc=$?
	echo "$out" >>"$log"
	kept=$(modinfo -k "$k" -F version nvsidecar 2>/dev/null)
	if ((rc == 0)); then
		t_fail "$name: broken upgrade" "dpkg -i succeeded"
	elif [[ $out != *"failed to build for: $k"* || $out != *"main.c"* ]]; then
		t_fail "$name: broken upgrade" "the error does not name the kernel and the compiler error: $(tail -n 4 <<<"$out" | tr '\n' ' ')"
	elif [[ -n $(dkms status -m nvsidecar -v "$badver" 2>/dev/null) ]] ||
		[[ -n $(find /lib/modules /var/lib/dkms -path "*$badver*" 2>/dev/null | head -n 1) ]]; then
		t_fail "$name: broken upgrade" "$badver left state behind: $(dkms status -m nvsidecar -v "$badver" 2>&1)"
	elif [[ $kept != "$ver" ]]; then
		t_fail "$name: broken upgrade" "the installed module for $k is now version \`$kept', not $ver"
	else
		t_pass "$name: broken upgrade fails clearly, leaves nothing of $badver, keeps $ver loaded for $k"
	fi
fi

# --- 6. removal ------------------------------------------------------------------------
run dpkg --purge nvsidecar nvsidecar-dkms
left=$(find /lib/modules -name 'nvsidecar.ko*' 2>/dev/null)
st=$(dkms status -m nvsidecar 2>/dev/null)
src=$(ls -d /usr/src/nvsidecar-* 2>/dev/null)
if [[ -z $left && -z $st && -z $src ]]; then
	t_pass "$name: removing the packages leaves no module, DKMS entry or source tree"
else
	t_fail "$name: package removal" "left: $(tr '\n' ' ' <<<"$left$st$src")"
fi

# --- 7. RPM ----------------------------------------------------------------------------
if command -v rpmbuild >/dev/null; then
	t0=$SECONDS
	# --nodeps: Debian's rpm database knows none of the BuildRequires.
	if run make -C "$NVS_TOP" --no-print-directory rpm BUILD="$work/b" \
		RPMBUILDFLAGS="--nodeps --define 'debug_package %{nil}'"; then
		srpm=$(ls "$work"/b/rpm/SRPMS/nvsidecar-"$ver"-1*.src.rpm 2>/dev/null)
		dk=$(ls "$work"/b/rpm/RPMS/noarch/nvsidecar-dkms-"$ver"-1*.noarch.rpm 2>/dev/null)
		hp=$(ls "$work"/b/rpm/RPMS/x86_64/nvsidecar-"$ver"-1*.x86_64.rpm 2>/dev/null)
		if [[ -n $srpm && -n $dk && -n $hp ]] &&
			rpm -qlp "$dk" 2>/dev/null | grep -q "/usr/src/nvsidecar-$ver/dkms.conf" &&
			rpm -qlp "$dk" 2>/dev/null | grep -q '/usr/lib/dracut/modules.d/90nvsidecar/module-setup.sh' &&
			rpm -qlp "$hp" 2>/dev/null | grep -q '/usr/bin/nvsidecar'; then
			t_pass "$name: rpmbuild builds nvsidecar and nvsidecar-dkms ($((SECONDS - t0)) s)"
		else
			t_fail "$name: rpmbuild" "RPMs or their contents missing in $work/b/rpm"
		fi
	else
		t_fail "$name: rpmbuild" "$(why)"
	fi
else
	t_skip "$name: rpmbuild" "rpm is not installed (scripts/deps.sh installs it)"
fi
if command -v rpmlint >/dev/null; then
	t_run "$name: rpmlint on the spec" make -C "$NVS_TOP" --no-print-directory rpm-lint BUILD="$work/b"
else
	t_skip "$name: rpmlint" "rpmlint is not installed (scripts/deps.sh installs it)"
fi

cleanup
trap - EXIT
