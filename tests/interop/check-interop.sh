#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-interop.sh - `make check-interop`: run every interop script
# (tests/interop/run.sh: iWARP against the kernel's siw; rxe.sh: RoCEv2
# against the kernel's rdma_rxe) one after the other, each in a lab of its
# own. Exit 0 when all passed, 77 when the lab cannot run here at all
# (every script skipped), 1 otherwise: a script that skips while another
# one ran is a failure too, since the machine evidently can run the lab.
set -u
# A host's hostrdma-kald must not take part: cases that want one start
# their own on a socket of their own.
export HOSTRDMA_KALD_SOCKET=
dir=$(cd "$(dirname "$0")" && pwd)
# The scripts of the providers this build has (make passes the list).
read -r -a scripts <<<"${INTEROP_SCRIPTS:-run.sh rxe.sh}"
[ ${#scripts[@]} -gt 0 ] || { echo "SKIP: no provider with interop tests is built"; exit 77; }
ran=0 skipped=0 failed=0 summary=()

for s in "${scripts[@]}"; do
	echo "=== check-interop: $s"
	bash "$dir/$s"
	rc=$?
	case $rc in
	0) ran=$((ran + 1)); summary+=("passed  $s") ;;
	77) skipped=$((skipped + 1)); summary+=("SKIPPED $s") ;;
	*) failed=$((failed + 1)); summary+=("FAILED  $s (exit $rc)") ;;
	esac
done

echo "=== check-interop summary"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -gt 0 ]; then
	exit 1
elif [ "$skipped" -eq ${#scripts[@]} ]; then
	exit 77
elif [ "$skipped" -gt 0 ]; then
	echo "check-interop: some scripts skipped while others ran: failing"
	exit 1
fi
exit 0
