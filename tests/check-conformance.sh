#!/bin/sh
# SPDX-License-Identifier: MIT
# check-conformance.sh - run by `make check` from the build directory:
# hostrdma-conformance passes on soft-iWARP (siw_lo) and soft-RoCE
# (rxe_lo) with every TAP line "ok", and fails on the in-memory test
# provider (test_lo: its IA works, its RC endpoints do not, it_ep_rc_create
# fails): exit status 1, "not ok" lines.
set -u
builddir=$(pwd)
prog="$builddir/tests/conformance/hostrdma-conformance"
out=$(mktemp "${TMPDIR:-/tmp}/hostrdma-conf-XXXXXX") || exit 99
trap 'rm -f "$out" "$out.xml"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
unset HOSTRDMA_DEVICES HOSTRDMA_OPTIONS
HOSTRDMA_CONF=
export HOSTRDMA_CONF

# A provider that passes: exit 0, a plan, only "ok" lines.
passes() {
	HOSTRDMA_PROVIDER_PATH="$1" "$prog" -d "$2" --junit "$out.xml" \
		>"$out" 2>/dev/null || fail "$2: exit status $?"
	grep -q '^1\.\.[1-9]' "$out" || fail "$2: no TAP plan"
	grep -q '^not ok' "$out" && fail "$2: a check failed"
	[ "$(grep -c '^ok ' "$out")" = "$(sed -n 's/^1\.\.//p' "$out")" ] ||
		fail "$2: not every planned check is ok"
	grep -q '<testsuites' "$out.xml" || fail "$2: no XML from --junit"
	echo "PASS: hostrdma-conformance -d $2"
}

[ -f "$builddir/vp/siw/.libs/siw.so" ] &&
	passes "$builddir/vp/siw/.libs" siw_lo
[ -f "$builddir/vp/rxe/.libs/rxe.so" ] &&
	passes "$builddir/vp/rxe/.libs" rxe_lo

# The test provider: IA checks ok, RC checks not ok.
HOSTRDMA_PROVIDER_PATH="$builddir/tests/provider/.libs" \
	"$prog" -d test_lo >"$out" 2>/dev/null
st=$?
[ $st = 1 ] || fail "test_lo: exit status $st, expected 1"
grep -q '^not ok .*test_rc_connect_disconnect' "$out" ||
	fail "test_lo: the connection check did not fail"
grep -q '^ok .*test_ia_create_query' "$out" ||
	fail "test_lo: the IA check did not pass"
echo "PASS: hostrdma-conformance -d test_lo fails as it should"

# Usage errors.
"$prog" >/dev/null 2>&1
[ $? = 2 ] || fail "no -d: exit status is not 2"
exit 0
