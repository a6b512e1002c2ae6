#!/bin/sh
# SPDX-License-Identifier: MIT
# check-verbs-nolink.sh - run by `make check` from the build tree when the
# verbs provider is a module: libhostrdma.so does not need libibverbs or
# librdmacm (directly or through anything it loads at start), the module
# does, and the module exports nothing but its entry point.
lib=.libs/libhostrdma.so
mod=vp/verbs/.libs/verbs.so
fail=0
for t in ldd readelf nm; do
	command -v $t >/dev/null 2>&1 ||
		{ echo "SKIP: check-verbs-nolink: $t is not installed"; exit 77; }
done
[ -f "$lib" ] && [ -f "$mod" ] ||
	{ echo "FAIL: $lib or $mod not built"; exit 1; }

if ldd "$lib" | grep -E 'libibverbs|librdmacm'; then
	echo "FAIL: $lib needs rdma-core (above); a host without it could not run the soft providers"
	fail=1
fi
# The same test on the module must find libibverbs, or the test tests
# nothing (librdmacm joins once the provider calls it: the link drops
# unused libraries).
for l in libibverbs; do
	readelf -d "$mod" | grep NEEDED | grep -q "$l" || {
		echo "FAIL: $mod does not need $l: is this test looking at the right files?"
		fail=1
	}
done
exports=$(nm -D --defined-only "$mod" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
if [ "$exports" != "rnicpi_provider_entry" ]; then
	echo "FAIL: $mod exports more than its entry point:"
	echo "$exports"
	fail=1
fi
[ $fail = 0 ] && echo "PASS: libhostrdma does not link rdma-core; verbs.so exports only rnicpi_provider_entry"
exit $fail
