# SPDX-License-Identifier: MIT
#
# labns.sh - sourced by the interop scripts (run.sh, rxe.sh): choose the
# network namespace the script's lab runs in.
#
# A namespace name is global to the machine (/run/netns), so a name that
# is already taken may belong to another run that is still going (two CI
# jobs on one host) or to a run that was killed before it could take its
# lab down. Neither is ours to delete. So:
#
#   lab_pick_ns BASE
#     RDMAPEER_NS set by the caller: used as given; if it is taken, that
#     is an error (return 1) unless KEEP=1 (reuse a running lab).
#     Otherwise BASE when free, else BASE-<pid>[-N], with a line saying
#     which name was taken and which one this run uses instead.
#     Exports RDMAPEER_NS.

lab_ns_taken() { # name
	ip netns list 2>/dev/null | awk '{ print $1 }' | grep -qxF -- "$1"
}

lab_pick_ns() { # base
	local base=$1 name n=0
	if [ -n "${RDMAPEER_NS:-}" ]; then
		export RDMAPEER_NS
		lab_ns_taken "$RDMAPEER_NS" || return 0
		[ "${KEEP:-0}" = 1 ] && return 0
		echo "FAIL: namespace $RDMAPEER_NS (RDMAPEER_NS) is in use" \
			"(another run?); choose another or unset it" >&2
		return 1
	fi
	name=$base
	while lab_ns_taken "$name"; do
		n=$((n + 1))
		name=$base-$$$([ "$n" -gt 1 ] && echo "-$n")
	done
	[ "$name" = "$base" ] ||
		echo "note: namespace $base is taken (another run, or one" \
			"that was killed); this run uses $name"
	export RDMAPEER_NS=$name
}
