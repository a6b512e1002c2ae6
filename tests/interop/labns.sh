# SPDX-License-Identifier: MIT
#
# labns.sh - sourced by the interop scripts (run.sh, rxe.sh, verbs.sh):
# choose the network namespace the script's lab runs in, and bring the
# lab up (lab_up).
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

# lab_up RDMAPEER LOG [ARGS...]: "RDMAPEER up ARGS" into LOG. A guest
# that does not boot in time belongs to the lab, not to the code under
# test (seen once in CI, under TCG: guest1 up in 11 s, guest2's console
# still empty after the 180 s boot time-out): the lab goes down and comes
# up once more, which is said on stdout; the second try's result stands.
lab_up() { # rdmapeer log [args...]
	local rp=$1 log=$2 con
	shift 2
	"$rp" up "$@" >"$log" 2>&1 && return 0
	grep -q "did not come up" "$log" || return 1
	echo "note: the lab did not boot ($(grep "did not come up" "$log" |
		tail -n 1)); once more, the first try's log in $log.first"
	mv "$log" "$log.first"
	# its console goes with the lab: kept beside the log
	con=$(sed -n 's/.*did not come up.*console: //p' "$log.first" |
		tail -n 1)
	[ -n "$con" ] && cp "$con" "$log.console" 2>/dev/null
	"$rp" down >/dev/null 2>&1
	"$rp" up "$@" >"$log" 2>&1
}
