#!/bin/sh
# SPDX-License-Identifier: MIT
# check-fi-tools.sh - libfabric's own programs over the hostrdma provider:
# fi_info lists the provider and its soft-iWARP device, fi_pingpong runs
# between two processes on 127.0.0.1 (MSG endpoints, and RDM endpoints
# through libfabric's ofi_rxm; data checked).
# Skips (77) when libfabric-bin is not installed.
here=$(cd "$(dirname "$0")" && pwd)
build=${HOSTRDMA_BUILDDIR:-$(pwd)}
# Never a host's hostrdma-kald.
export HOSTRDMA_KALD_SOCKET=
for t in fi_info fi_pingpong; do
	command -v $t >/dev/null 2>&1 ||
		{ echo "SKIP: check-fi-tools: $t not found (apt-get install libfabric-bin)"; exit 77; }
done
[ -e "$build/fi/.libs/libhostrdma-fi.so" ] ||
	{ echo "SKIP: check-fi-tools: no $build/fi/.libs/libhostrdma-fi.so"; exit 77; }
# A build configured --enable-sanitizers: fi_info and fi_pingpong, built
# without ASan, cannot load a provider that is (ASan's runtime must come
# first). make check-sanitizers leaves this test out of TESTS, but the
# soft-RoCE chain (tests/local-fi.mk) still makes this log before
# check-fi-rxe's: say why nothing ran rather than fail.
if readelf --dyn-syms -W "$build/fi/.libs/libhostrdma-fi.so" 2>/dev/null |
	grep -q '__asan_init'; then
	echo "SKIP: check-fi-tools: libhostrdma-fi.so is built with AddressSanitizer, which libfabric's programs cannot load (the plain and clang builds run this test)"
	exit 77
fi
export FI_PROVIDER_PATH="$build/fi/.libs"
export HOSTRDMA_PROVIDER_PATH="$build/vp/siw/.libs"
export HOSTRDMA_DEVICES=siw_lo HOSTRDMA_CONF=
unset FI_PROVIDER
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: check-fi-tools: $*"; for f in "$tmp"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

fi_info -p hostrdma -t FI_EP_MSG >"$tmp/info" 2>&1 || fail "fi_info -p hostrdma"
grep -q 'provider: hostrdma$' "$tmp/info" || fail "fi_info: no hostrdma"
grep -q 'domain: siw_lo' "$tmp/info" || fail "fi_info: no siw_lo domain"
fi_info -p hostrdma -t FI_EP_MSG -v >"$tmp/info-v" 2>&1 || fail "fi_info -v"
grep -q 'FI_MR_LOCAL' "$tmp/info-v" || fail "fi_info -v: no mr_mode"

# A free port for fi_pingpong's control connection.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 47593)
for size in 1 64 4096 1048576; do
	timeout 60 fi_pingpong -p hostrdma -e msg -c -I 50 -S $size \
		-B "$port" >"$tmp/server-$size" 2>&1 &
	srv=$!
	sleep 0.5
	timeout 60 fi_pingpong -p hostrdma -e msg -c -I 50 -S $size \
		-P "$port" 127.0.0.1 >"$tmp/client-$size" 2>&1 ||
		{ kill $srv 2>/dev/null; fail "fi_pingpong client, $size bytes"; }
	wait $srv || fail "fi_pingpong server, $size bytes"
	grep -q '=50' "$tmp/client-$size" || fail "fi_pingpong: not 50 acked"
	echo "fi_pingpong $size bytes: $(tail -1 "$tmp/client-$size")"
done
# RDM endpoints: libfabric's ofi_rxm over our MSG endpoints (eager and
# rendezvous through RMA). rxm's buffer pools shrunk to fit an 8 MiB
# RLIMIT_MEMLOCK (registrations pin memory).
export FI_OFI_RXM_BUFFER_SIZE=1024
fi_info -p "hostrdma;ofi_rxm" -t FI_EP_RDM >"$tmp/info-rdm" 2>&1 ||
	fail "fi_info -p hostrdma;ofi_rxm"
for size in 1 4096 1048576; do
	timeout 60 fi_pingpong -p "hostrdma;ofi_rxm" -e rdm -c -I 20 \
		-S $size -B "$port" >"$tmp/rdm-server-$size" 2>&1 &
	srv=$!
	sleep 0.5
	timeout 60 fi_pingpong -p "hostrdma;ofi_rxm" -e rdm -c -I 20 \
		-S $size -P "$port" 127.0.0.1 >"$tmp/rdm-client-$size" 2>&1 ||
		{ kill $srv 2>/dev/null; fail "fi_pingpong rdm client, $size bytes"; }
	wait $srv || fail "fi_pingpong rdm server, $size bytes"
	grep -q '=20' "$tmp/rdm-client-$size" || fail "fi_pingpong rdm: not 20 acked"
	echo "fi_pingpong rdm (ofi_rxm) $size bytes: $(tail -1 "$tmp/rdm-client-$size")"
done
echo "PASS: check-fi-tools"
