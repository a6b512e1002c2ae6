#!/bin/sh
# SPDX-License-Identifier: MIT
# check-conformance.sh - run by `make check` from the build directory:
# hostrdma-conformance passes on soft-iWARP (siw_lo) and soft-RoCE
# (rxe_lo) with every TAP line "ok", its own checks and the tree's IT-API
# suite for the transport (itapi-cm / itapi-cm-rxe, named in the TAP
# lines) and the pure IT-API cases of itapi-ep, itapi-post, itapi-evd and
# itapi-mem (test case "device"), alone and with a second -d (a second IA
# for the passive ends),
# and fails on the in-memory test provider (test_lo: its IA works,
# its RC endpoints do not, it_ep_rc_create fails): exit status 1, "not ok"
# lines, in the suite's cases too.
set -u
# A host's hostrdma-kald must not take part: cases that want one start
# their own on a socket of their own.
export HOSTRDMA_KALD_SOCKET=
builddir=$(pwd)
prog="$builddir/tests/conformance/hostrdma-conformance"
out=$(mktemp "${TMPDIR:-/tmp}/hostrdma-conf-XXXXXX") || exit 99
trap 'rm -f "$out" "$out.xml"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
unset HOSTRDMA_DEVICES HOSTRDMA_OPTIONS
HOSTRDMA_CONF=
export HOSTRDMA_CONF

# A provider that passes: exit 0, a plan, only "ok" lines, among them
# the suite case $3; $4: provider options.
passes() {
	HOSTRDMA_PROVIDER_PATH="$1" HOSTRDMA_OPTIONS="${4-}" "$prog" -d "$2" \
		--junit "$out.xml" >"$out" 2>/dev/null ||
		fail "$2: exit status $?"
	grep -q '^1\.\.[1-9]' "$out" || fail "$2: no TAP plan"
	grep -q "^ok .*:$3: Passed" "$out" ||
		fail "$2: the tree's suite case $3 did not run"
	grep -q '^ok .*:test_rmr_window_bounds: Passed' "$out" ||
		fail "$2: the memory window checks did not run"
	# (Check names the file of a case's last assertion, not its own.)
	for c in rc_create_errors srq_resize rdma_read posting_order \
		wait_interrupted lmr_iobl; do
		grep -q "^ok .*:device:$c: Passed" "$out" ||
			fail "$2: the device case $c did not run"
	done
	grep -q '^not ok' "$out" && fail "$2: a check failed"
	[ "$(grep -c '^ok ' "$out")" = "$(sed -n 's/^1\.\.//p' "$out")" ] ||
		fail "$2: not every planned check is ok"
	grep -q '<testsuites' "$out.xml" || fail "$2: no XML from --junit"
	echo "PASS: hostrdma-conformance -d $2"
}

# The provider's MPA time-out below the connection manager's, as the
# suites' time-out cases expect (the runner leaves provider options to
# its user).
[ -f "$builddir/vp/siw/.libs/siw.so" ] &&
	passes "$builddir/vp/siw/.libs" siw_lo socket_convert_no_req_rep \
		siw.mpa_timeout_ms=1500
if [ -f "$builddir/vp/rxe/.libs/rxe.so" ]; then
	passes "$builddir/vp/rxe/.libs" rxe_lo three_way_accept
	grep -q '^ok .*:fetch_and_add: Passed' "$out" ||
		fail "rxe_lo: the atomic suite did not run"
fi

# A second -d: the suite's two-sided cases put their passive endpoint on
# an IA of the peer device, its events on that IA's EVDs (they would
# time out on the first IA's). In one process the route to a local
# address leads to the device holding it, so the peer is a second IA of
# the same device; a peer that does not open fails those cases.
two_sided="connect_accept_send private_data_roundtrip reject_with_private_data
	disconnect_graceful disconnect_abortive many_connections"
if [ -f "$builddir/vp/siw/.libs/siw.so" ]; then
	HOSTRDMA_PROVIDER_PATH="$builddir/vp/siw/.libs" \
		HOSTRDMA_OPTIONS=siw.mpa_timeout_ms=1500 \
		"$prog" -d siw_lo -d siw_lo >"$out" 2>/dev/null ||
		fail "siw_lo/siw_lo: exit status $?"
	grep -q '^not ok' "$out" && fail "siw_lo/siw_lo: a check failed"
	for c in $two_sided socket_convert_no_req_rep; do
		grep -q "^ok .*:siw-lo:$c: Passed" "$out" ||
			fail "siw_lo/siw_lo: $c did not pass"
	done
	echo "PASS: hostrdma-conformance -d siw_lo -d siw_lo"
	HOSTRDMA_PROVIDER_PATH="$builddir/vp/siw/.libs" \
		HOSTRDMA_OPTIONS=siw.mpa_timeout_ms=1500 \
		"$prog" -d siw_lo -d siw_nosuch >"$out" 2>/dev/null
	[ $? = 1 ] || fail "siw_nosuch peer: exit status is not 1"
	for c in $two_sided; do
		grep -q "^not ok .*:$c: it_ia_create(siw_nosuch) failed" \
			"$out" || fail "siw_nosuch peer: $c did not fail so"
	done
	grep -q '^ok .*test_ia_create_query' "$out" ||
		fail "siw_nosuch peer: the IA check of siw_lo did not pass"
	echo "PASS: hostrdma-conformance -d siw_lo -d siw_nosuch fails"
fi
if [ -f "$builddir/vp/rxe/.libs/rxe.so" ]; then
	HOSTRDMA_PROVIDER_PATH="$builddir/vp/rxe/.libs" \
		"$prog" -d rxe_lo -d rxe_lo >"$out" 2>/dev/null ||
		fail "rxe_lo/rxe_lo: exit status $?"
	grep -q '^not ok' "$out" && fail "rxe_lo/rxe_lo: a check failed"
	for c in $two_sided disconnect_private_data three_way_accept \
		three_way_reject three_way_unanswered fetch_and_add; do
		grep -q "^ok .*:$c: Passed" "$out" ||
			fail "rxe_lo/rxe_lo: $c did not pass"
	done
	echo "PASS: hostrdma-conformance -d rxe_lo -d rxe_lo"
fi

# The test provider: IA checks ok, RC checks not ok.
HOSTRDMA_PROVIDER_PATH="$builddir/tests/provider/.libs" \
	"$prog" -d test_lo >"$out" 2>/dev/null
st=$?
[ $st = 1 ] || fail "test_lo: exit status $st, expected 1"
grep -q '^not ok .*test_rc_connect_disconnect' "$out" ||
	fail "test_lo: the connection check did not fail"
grep -q '^ok .*test_ia_create_query' "$out" ||
	fail "test_lo: the IA check did not pass"
grep -q '^not ok .*:connect_accept_send:' "$out" ||
	fail "test_lo: the suite's connection case did not fail"
echo "PASS: hostrdma-conformance -d test_lo fails as it should"

# --own-only: the runner's eight checks alone.
HOSTRDMA_PROVIDER_PATH="$builddir/tests/provider/.libs" \
	"$prog" -d test_lo --own-only >"$out" 2>/dev/null
grep -q '^1\.\.8$' "$out" || fail "--own-only: not the eight own checks"

# Usage errors.
"$prog" >/dev/null 2>&1
[ $? = 2 ] || fail "no -d: exit status is not 2"
exit 0
