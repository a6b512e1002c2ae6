#!/bin/bash
# make check-scale: the long scale test (issue 11), run by hand or in CI
# when there is time. SCALE_CONNS concurrent connections to one listener
# (default 10000), each checked with one message, then SCALE_CYCLES
# connect/disconnect cycles (default 100000), on soft-iWARP (two
# processes) and soft-RoCE (one process: until the host service, one
# process per host owns UDP 4791). Descriptors and threads must be back
# where they were; the figures go to stdout, one JSON object per device
# after a human-readable block.
#
#   BUILD_DIR=build tests/scale/check-scale.sh
set -u
build=${BUILD_DIR:-.}
prog=$build/tests/scale/itapi-scale
conns=${SCALE_CONNS:-10000}
cycles=${SCALE_CYCLES:-100000}
providers=$(printf '%s:' "$build"/vp/*/.libs)
export HOSTRDMA_PROVIDER_PATH=${providers%:}
export HOSTRDMA_CONF=
unset HOSTRDMA_OPTIONS
fail=0 pass=0

# soft-RoCE: both ends in one process, and each QP has two descriptors
# (the UDP socket it sends from, its transport timer): four a connection
# in one process.
hard=$(ulimit -Hn)
rxe_conns=$conns
if [ "$hard" != unlimited ] && [ $((4 * conns + 256)) -gt "$hard" ]; then
	rxe_conns=$(((hard - 256) / 4))
	echo "soft-RoCE: RLIMIT_NOFILE's hard limit is $hard: $rxe_conns connections instead of $conns"
fi

run() {
	local name=$1
	shift
	echo "== $name: $*"
	if HOSTRDMA_DEVICES=${name} "$prog" "$@"; then
		pass=$((pass + 1))
	else
		echo "== $name: FAILED"
		fail=$((fail + 1))
	fi
}

run siw_lo -d siw_lo -n "$conns" -c "$cycles"
run rxe_lo -d rxe_lo --same-process -n "$rxe_conns" -c "$cycles"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
