# SPDX-License-Identifier: MIT
#
# bench/lib.sh - what bench/run and bench/paired share: the log line,
# the servers they start and stop, the ports they take, and a
# hostrdma-kald of their own. Sourced, not run. The sourcing script sets
# BENCH_TAG (the log's prefix), out (the results directory) and PORT
# first; everything started here is killed when the script exits.

log() { printf '[%s %s] %s\n' "$BENCH_TAG" "$(date +%H:%M:%S)" "$*" >&2; }
next_port() { PORT=$((PORT + 1)); }

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server CMD...: runs in the background with its output in
# $out/$SERVER_LOG (server.log unless set), sets $spid; half a second to
# listen.
spid=
start_server() {
	"$@" >"$out/${SERVER_LOG:-server.log}" 2>&1 &
	spid=$!
	pids+=("$spid")
	sleep 0.5
}
stop_server() {
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

# kald_start KALD NAME: KALD --foreground on $out/NAME.sock, its log in
# $out/NAME.log; returns once it says it listens (a process started
# earlier would hold UDP 4791 alone), with HOSTRDMA_KALD_SOCKET exported
# and $kald_pid set, or 1 with the log's tail logged. When something
# holds UDP 4791 on loopback already (the host's own hostrdma-kald, a
# soft-RoCE process without one), ours could not take it: 1, saying who.
kald_pid= kald_sock=
kald_start() {
	local kald=$1 name=$2 i held
	[ -x "$kald" ] || { log "no $kald"; return 1; }
	held=$(ss -Huanp 'sport = :4791' 2>/dev/null | grep -o 'users:.*' |
		sort -u | head -n 2 | paste -sd ' ')
	if [ -n "$held" ]; then
		log "UDP port 4791 is held already ($held): the soft-RoCE" \
			"rows need it free for a hostrdma-kald of their own;" \
			"stop the holder (systemctl stop hostrdma-kald" \
			"hostrdma-kald.socket, for the host's daemon)"
		return 1
	fi
	kald_sock=$out/$name.sock
	rm -f "$out/$name.log" "$kald_sock"
	"$kald" --foreground --socket "$kald_sock" 2>"$out/$name.log" &
	kald_pid=$!
	pids+=("$kald_pid")
	for i in $(seq 100); do
		grep -q "listening on" "$out/$name.log" 2>/dev/null && {
			export HOSTRDMA_KALD_SOCKET=$kald_sock
			return 0; }
		kill -0 "$kald_pid" 2>/dev/null || break
		sleep 0.05
	done
	log "hostrdma-kald did not start: $(tail -c 300 "$out/$name.log")"
	return 1
}
kald_stop() {
	[ -n "$kald_pid" ] || return 0
	kill "$kald_pid" 2>/dev/null
	wait "$kald_pid" 2>/dev/null
	kald_pid=
	unset HOSTRDMA_KALD_SOCKET
	rm -f "$kald_sock"
}
