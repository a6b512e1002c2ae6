#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/fabtests.sh CACHE - build libfabric's fabtests (fi_rma_bw,
# fi_msg_pingpong) into CACHE/fabtests, against the installed
# libfabric-dev. Debian 12 does not package fabtests, so the source comes
# from Debian's own libfabric source package (apt-get source, through a
# temporary deb-src list); nothing of it enters the repository.
# FABTESTS_BIN=DIR uses fabtests built elsewhere instead (a distribution
# that packages them, or your own build of the installed version).
# Prints the bin directory.
set -euo pipefail
cache=$1
prefix=$cache/fabtests
have() { [ -x "$1/fi_rma_bw" ] && [ -x "$1/fi_msg_pingpong" ]; }
if [ -n "${FABTESTS_BIN:-}" ]; then
	have "$FABTESTS_BIN" || {
		echo "FABTESTS_BIN=$FABTESTS_BIN has no fi_rma_bw and fi_msg_pingpong" >&2
		exit 1
	}
	echo "$FABTESTS_BIN"
	exit 0
fi
if have "$prefix/bin"; then
	echo "$prefix/bin"
	exit 0
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
src=$cache/src
mkdir -p "$src"
# deb-src for the suites this machine already uses, taken from its own
# apt sources (deb822 or one-line), in a file removed afterwards.
list=/etc/apt/sources.list.d/hostrdma-bench-src.sources
if ! (cd "$src" && apt-get source --print-uris libfabric 2>/dev/null |
	grep -q dsc); then
	python3 - "$list" <<'PY' | as_root tee "$list" >/dev/null
import glob, re, sys
out = []
for f in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in open(f).read().split("\n\n"):
        lines = [l for l in stanza.splitlines() if not l.startswith("#")]
        d = dict(l.split(":", 1) for l in lines if ":" in l)
        if "deb" in d.get("Types", "").split() and "security" not in d.get("URIs", ""):
            d["Types"] = " deb-src"
            out.append("\n".join(k + ":" + v for k, v in d.items()))
for f in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
    try:
        for l in open(f):
            m = re.match(r"\s*deb\s+(.*)", l)
            if m and "security" not in l:
                out.append("Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s" %
                           tuple((m.group(1).split(None, 2) + ["", "", ""])[:3]))
    except OSError:
        pass
print("\n\n".join(out))
PY
	trap 'as_root rm -f "$list"; as_root apt-get update -qq || true' EXIT
	as_root apt-get update -qq >&2
fi
if ! (cd "$src" && apt-get source -qq --download-only libfabric >&2 &&
	rm -rf libfabric &&
	dpkg-source -x --skip-patches libfabric_*.dsc libfabric >&2); then
	echo "Debian's libfabric source package could not be had (a mirror" \
		"without its tarballs?); set FABTESTS_BIN to fabtests built" \
		"for the installed libfabric $(dpkg-query -W -f='${Version}' libfabric-dev)" >&2
	exit 1
fi
cd "$src/libfabric/fabtests"
[ -x configure ] || autoreconf -fi >&2
./configure -q --prefix="$prefix" >&2
make -j"$(nproc)" -s >&2
make -s install >&2
echo "$prefix/bin"
