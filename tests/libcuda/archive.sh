# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Sourced by tests/host/50-libcuda.sh: Debian's libcuda builds, found and
# fetched through a private apt configuration (its own sources list, lists,
# cache and an empty dpkg status; the system's apt configuration is never
# read or written). Everything is cached outside the clone in $lc_cache
# (default /var/cache/nvsidecar/libcuda, override with NVS_LIBCUDA_CACHE).
#
#   lc_archive_update            fetch the package lists (at most once a day)
#   lc_archive_list              "package version sha256" of every *cuda1 build
#   lc_archive_fetch PKG VER SHA path of the extracted libcuda.so.<version>
#
# Suites: every Debian suite that carries non-free driver branches today.
lc_cache=${NVS_LIBCUDA_CACHE:-/var/cache/nvsidecar/libcuda}
if ! mkdir -p "$lc_cache" 2>/dev/null || [[ ! -w $lc_cache ]]; then
	lc_cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvsidecar/libcuda
	mkdir -p "$lc_cache"
fi
lc_apt=$lc_cache/apt
lc_log=$lc_cache/apt.log
mkdir -p "$lc_apt/lists/partial" "$lc_apt/cache/archives/partial" "$lc_cache/debs" "$lc_cache/x"
cat >"$lc_apt/sources.list.new" <<'SRC'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian experimental non-free
SRC
if cmp -s "$lc_apt/sources.list.new" "$lc_apt/sources.list"; then
	rm -f "$lc_apt/sources.list.new"
else
	mv "$lc_apt/sources.list.new" "$lc_apt/sources.list"
	rm -f "$lc_apt/updated"
fi
lc_aptopts=(-o Dir::Etc::SourceList="$lc_apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	    -o Dir::State::Lists="$lc_apt/lists" -o Dir::Cache="$lc_apt/cache"
	    -o Dir::State::status=/dev/null -o APT::Architecture=amd64
	    -o Debug::NoLocking=1 -o APT::Sandbox::User=root)

# 0 when the lists are there (fresh or, if the archive is unreachable, old).
lc_archive_update() {
	if [[ -f $lc_apt/updated && -n $(find "$lc_apt/updated" -mmin -1440) ]]; then
		return 0
	fi
	if apt-get "${lc_aptopts[@]}" -q update >"$lc_log" 2>&1; then
		touch "$lc_apt/updated"
		return 0
	fi
	[[ -f $lc_apt/updated ]]
}

lc_archive_list() {
	apt-cache "${lc_aptopts[@]}" search --names-only 'cuda1$' 2>/dev/null | cut -d' ' -f1 | sort -u |
		xargs -r apt-cache "${lc_aptopts[@]}" show -a 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^SHA256:/ { s = $2 }
		     /^$/ { if (p) print p, v, s; p = "" } END { if (p) print p, v, s }' | sort -u
}

# lc_archive_fetch PKG VERSION DEB_SHA256: the cached .deb is used when its
# hash matches; otherwise it is downloaded (apt checks it against the lists).
lc_archive_fetch() {
	local pkg=$1 ver=$2 sha=$3 deb x lib
	deb=$lc_cache/debs/${pkg}_${ver//:/%3a}_amd64.deb
	x=$lc_cache/x/$sha
	lib=$(find "$x" -name 'libcuda.so.*' -type f 2>/dev/null | head -1)
	[[ -n $lib ]] && { echo "$lib"; return 0; }
	if [[ ! -f $deb || $(sha256sum "$deb" | cut -d' ' -f1) != "$sha" ]]; then
		rm -f "$deb"
		(cd "$lc_cache/debs" && apt-get "${lc_aptopts[@]}" -q download "$pkg=$ver") >>"$lc_log" 2>&1 ||
			return 1
		deb=$(ls "$lc_cache/debs/${pkg}_"*"${ver#*:}"*_amd64.deb 2>/dev/null | head -1)
		[[ -f $deb && $(sha256sum "$deb" | cut -d' ' -f1) == "$sha" ]] || return 1
	fi
	rm -rf "$x.tmp"
	mkdir -p "$x.tmp" && dpkg -x "$deb" "$x.tmp" && rm -rf "$x" && mv "$x.tmp" "$x" || return 1
	lib=$(find "$x" -name 'libcuda.so.*' -type f | head -1)
	[[ -n $lib ]] && echo "$lib"
}
