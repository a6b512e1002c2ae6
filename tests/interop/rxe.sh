#!/bin/bash
# tests/interop/rxe.sh: hostrdma's soft-RoCE provider against the Linux
# kernel's rdma_rxe in a qemu guest (tests/interop/lab/rdmapeer), on the
# lab's rxe network (198.51.100.0/24 and IPv6 link-local), in a network
# namespace of its own (RDMAPEER_NS, default hrinterop-rxe, or
# hrinterop-rxe-PID when that name is taken: tests/interop/labns.sh).
#
#   tests/interop/rxe.sh            (root; BUILD_DIR=build by default)
#
# Cases: a MAD from our GSI QP to the kernel's QP1 and its answer back
# (IPv4, IPv6), rdma_cm over the InfiniBand CM (rping and ucmatose both
# ways, IPv4 and IPv6, against tests/interop/it-rping over IT-API;
# tools/hostrdma-ping against rping both ways over IPv4, as client over
# IPv6; two host hostrdma-ping processes through one hostrdma-kald as
# servers of two guest rping clients at once, and as clients of two guest
# rping servers; REJ
# from a port nobody listens on), udaddy's SIDR and UD datagrams both
# ways over IPv4 and IPv6 against tests/interop/it-udaddy, ibv_rc_pingpong both ways over IPv4
# and IPv6, ib_write_bw /
# ib_read_bw / ib_send_bw / ib_atomic_bw (perftest's own exchange, no -R)
# with the guest as server and as client over IPv4, write over IPv6,
# ib_write_bw -R / ib_read_bw -R / ib_send_bw -R (rdma_cm) against
# tools/hostrdma-perf -R both ways, then
# rping both ways, ping-pong, write and read with 3% loss both ways on
# the bridge
# (nftables in the lab namespace); every RoCE frame captured is
# decoded by tshark's InfiniBand dissector (no malformed frame) and its
# ICRC checked by the lab's probes/icrc_check.py (tests/interop/lab).
# RXE_CASES="name ..." runs only those cases (and the capture checks,
# without the one that wants every kind of CM MAD).
# Prints "ok NAME" / "FAIL NAME" per case and "N passed, N failed";
# exit 0 when all passed, 1 on a failure, 77 (loud SKIP) when qemu, the
# interop kit, root or the build is missing.
set -u
# A host's hostrdma-kald must not take part: cases that want one start
# their own on a socket of their own.
export HOSTRDMA_KALD_SOCKET=

top=${HOSTRDMA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${HOSTRDMA_BUILDDIR:-${BUILD_DIR:-$top/build}}
interop=${HOSTRDMA_INTEROP_DIR:-$top/tests/interop/lab}
peer=$build/tests/interop/rxe-peer
itr=$build/tests/interop/it-rping
rp=$interop/rdmapeer
work=$(mktemp -d /tmp/rxe-interop.XXXXXX)
pass=0
fail=0

skip() {
	echo "SKIP: tests/interop/rxe.sh: $*" >&2
	exit 77
}

[ -x "$rp" ] || skip "no rdmapeer at $interop (set HOSTRDMA_INTEROP_DIR)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing"
[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, taps)"
[ -x "$peer" ] || skip "$peer not built (make -C $build)"
[ -x "$itr" ] || skip "$itr not built (make -C $build)"
[ -x "$build/tools/hostrdma-ping" ] ||
	skip "$build/tools/hostrdma-ping not built (make -C $build)"

tcpdump_pid=
lab_started=0
cleanup() {
	[ -n "$tcpdump_pid" ] && kill "$tcpdump_pid" 2>/dev/null
	[ -n "${kald_pid:-}" ] && kill "$kald_pid" 2>/dev/null
	# Only a lab this run started is ours to stop.
	[ "$lab_started" = 1 ] && "$rp" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

# Is case $1 to run (RXE_CASES)?
want() {
	[ -z "${RXE_CASES:-}" ] || [[ " $RXE_CASES " == *" $1 "* ]]
}

result() { # name, status
	if [ "$2" -eq 0 ]; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "FAIL $1 (logs: $work/$1.*)"
		fail=$((fail + 1))
		keep=1
		# CI sees only this output: show the evidence here too.
		for f in "$work/$1".*; do
			[ -f "$f" ] && case $f in *.pcap) ;; *)
				echo "   --- ${f##*/}"
				tail -n 25 "$f" | sed 's/^/   | /' ;;
			esac
		done
	fi
}

# A case against the guest's tools runs once more when it failed: the
# kernel's rxe and its tools in the guest, emulated on two shared cores,
# now and then leave a tool hanging after our side did everything right
# (seen: ib_send_bw's server waiting for receives whose packets its rxe
# had all acknowledged; rping's client silent after the DREQ/DREP pair
# completed on the wire). The first failure is printed in full and
# counted in "retried"; a second one fails. RXE_NO_RETRY=1: no second go.
retry_case() {
	local before=$fail
	"$@"
	[ "$fail" -gt "$before" ] && [ -z "${RXE_NO_RETRY:-}" ] || return 0
	fail=$before
	retried=$((retried + 1))
	# The first run's logs stay beside the second's (NAME.*.first):
	# a failure that does not come back is still evidence.
	for f in "$work/$2".*; do
		[ -f "$f" ] && mv -f "$f" "$f.first"
	done
	echo "   $2: once more (see above; a second failure counts; first logs in $work/$2.*.first)"
	"$@"
}
retrying() { # $1: a case function, to be run through retry_case
	eval "_once_$1() $(declare -f "$1" | tail -n +2)"
	eval "$1() { retry_case _once_$1 \"\$@\"; }"
}
retried=0

guest_kill() {
	"$rp" run 'killall ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw rping ucmatose' \
		>/dev/null 2>&1
}

# rdma_cm cases: the InfiniBand CM over QP1 (REQ/REP/RTU, DREQ/DREP)
# between the guest's librdmacm tools and tests/interop/it-rping over
# IT-API (libhostrdma, rxe loaded as a module, device rxe_rdmabr0).
it_rxe() {
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 120 "$itr" -d rxe_rdmabr0 "$@"
}

# The guest serves (bg), it-rping is the client. $1 name, $2 guest
# command, $3 port, $4 success pattern in the guest log, rest: it-rping.
cm_guest_server() {
	want "$1" || return 0
	local name=$1 gcmd=$2 port=$3 pat=$4 st=0 bgout pid log
	shift 4
	guest_kill
	bgout=$("$rp" bg "$gcmd") || st=1
	pid=${bgout%% *}
	log=${bgout##* }
	"$rp" run wait-listen "$port" 20 >/dev/null || st=1
	it_rxe -c -p "$port" "$@" >"$work/$name.ours" 2>&1 || st=1
	"$rp" run -t 60 "while kill -0 $pid 2>/dev/null; do sleep 0.2; done; cat $log" \
		>"$work/$name.guest" 2>&1 || st=1
	grep -q "$pat" "$work/$name.guest" || st=1
	grep -qi "error\|fail" "$work/$name.guest" && st=1
	result "$name" $st
}
retrying cm_guest_server

# it-rping serves, the guest's tool is the client.
cm_guest_client() {
	want "$1" || return 0
	local name=$1 gcmd=$2 port=$3 pat=$4 st=0 ours i
	shift 4
	guest_kill
	it_rxe -s -p "$port" "$@" >"$work/$name.ours" 2>&1 &
	ours=$!
	for i in $(seq 100); do
		grep -q listening "$work/$name.ours" 2>/dev/null && break
		sleep 0.1
	done
	"$rp" run -t 120 "$gcmd" >"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q "$pat" "$work/$name.guest" || st=1
	result "$name" $st
}
retrying cm_guest_client

# tools/hostrdma-ping (the rping users run) against the guest's rping over
# the IB CM, both roles, every round's data checked: by hostrdma-ping -V
# as client, by the guest's rping -c -V as server.
hping=$build/tools/hostrdma-ping
hping_rxe() {
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 120 "$hping" -D rxe_rdmabr0 "$@"
}
hping_guest_server() { # $1 name, $2 guest address, $3 port, $4 rounds
	want "$1" || return 0
	local name=$1 st=0 bgout pid log
	guest_kill
	bgout=$("$rp" bg "rping -s -a $2 -p $3 -C $4 -S 1024 -v") || st=1
	pid=${bgout%% *}
	log=${bgout##* }
	"$rp" run wait-listen "$3" 20 >/dev/null || st=1
	hping_rxe -c -a "$2" -p "$3" -C "$4" -S 1024 -V -v \
		>"$work/$name.ours" 2>&1 || st=1
	grep -q "client: $4 rounds of 1024 bytes, validated" \
		"$work/$name.ours" || st=1
	"$rp" run -t 60 "while kill -0 $pid 2>/dev/null; do sleep 0.2; done; cat $log" \
		>"$work/$name.guest" 2>&1 || st=1
	grep -q "server ping data: rdma-ping-$(($4 - 1)): " "$work/$name.guest" || st=1
	grep -qi "error\|fail" "$work/$name.guest" && st=1
	result "$name" $st
}
retrying hping_guest_server
hping_guest_client() { # $1 name, $2 host address, $3 port, $4 rounds
	want "$1" || return 0
	local name=$1 st=0 ours i
	guest_kill
	hping_rxe -s -a "$2" -p "$3" -C "$4" -S 1024 -v >"$work/$name.ours" 2>&1 &
	ours=$!
	for i in $(seq 100); do
		grep -q "waiting for a client" "$work/$name.ours" 2>/dev/null && break
		sleep 0.1
	done
	"$rp" run -t 120 "rping -c -a $2 -p $3 -C $4 -S 1024 -v -V" \
		>"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q "ping data: rdma-ping-$(($4 - 1)): " "$work/$name.guest" || st=1
	grep -qi "error\|fail\|mismatch" "$work/$name.guest" && st=1
	grep -q "server ping data: rdma-ping-$(($4 - 1)): " "$work/$name.ours" || st=1
	result "$name" $st
}
retrying hping_guest_client

# Two host processes sharing the lab's rxe network through one
# hostrdma-kald (its own socket under $work, in the lab's namespace):
# two hostrdma-ping servers against two guest rping clients at the same
# time, and two hostrdma-ping clients of two guest rping servers. Every
# round's data checked (rping -V in the guest, hostrdma-ping -V here, and
# each side's last round seen); the daemon's log shows both processes
# with their own QPN range.
kald_pid=
kald_sock=
kald_up() { # $1 name
	kald_sock=$work/$1.kald.sock
	"$rp" ns env G_MESSAGES_DEBUG=hostrdma-kald \
		"$build/kald/hostrdma-kald" --foreground --socket "$kald_sock" \
		>"$work/$1.kald" 2>&1 &
	kald_pid=$!
	local i
	for i in $(seq 50); do
		[ -S "$kald_sock" ] && return 0
		sleep 0.1
	done
	return 1
}
kald_down() {
	[ -n "$kald_pid" ] && kill "$kald_pid" 2>/dev/null && wait "$kald_pid"
	kald_pid=
}
hping_kald() {
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		HOSTRDMA_KALD_SOCKET="$kald_sock" \
		timeout 120 "$hping" -D rxe_rdmabr0 "$@"
}
kald_two_servers() { # $1 name, $2 host address, $3 first port, $4 rounds
	want "$1" || return 0
	local name=$1 st=0 i n ours=() guest=()
	guest_kill
	kald_up "$name" || st=1
	for i in 0 1; do
		hping_kald -s -a "$2" -p $(($3 + i)) -C "$4" -S 1024 -v -d \
			>"$work/$name.ours$i" 2>&1 &
		ours+=($!)
	done
	for i in 0 1; do
		for n in $(seq 100); do
			grep -q "waiting for a client" "$work/$name.ours$i" \
				2>/dev/null && break
			sleep 0.1
		done
	done
	for i in 0 1; do
		"$rp" run -t 120 "rping -c -a $2 -p $(($3 + i)) -C $4 -S 1024 -v -V" \
			>"$work/$name.guest$i" 2>&1 &
		guest+=($!)
	done
	for i in 0 1; do
		wait "${guest[$i]}" || st=1
		wait "${ours[$i]}" || st=1
		grep -q "ping data: rdma-ping-$(($4 - 1)): " \
			"$work/$name.guest$i" || st=1
		grep -qi "error\|fail\|mismatch" "$work/$name.guest$i" && st=1
		grep -q "server ping data: rdma-ping-$(($4 - 1)): " \
			"$work/$name.ours$i" || st=1
	done
	kald_down
	grep -q "QPN range 2 " "$work/$name.kald" || st=1
	result "$name" $st
}
retrying kald_two_servers
kald_two_clients() { # $1 name, $2 guest address, $3 first port, $4 rounds
	want "$1" || return 0
	local name=$1 st=0 i bgout pid=() log=() ours=()
	guest_kill
	kald_up "$name" || st=1
	for i in 0 1; do
		bgout=$("$rp" bg "rping -s -a $2 -p $(($3 + i)) -C $4 -S 1024 -v") ||
			st=1
		pid+=("${bgout%% *}")
		log+=("${bgout##* }")
		"$rp" run wait-listen $(($3 + i)) 20 >/dev/null || st=1
	done
	for i in 0 1; do
		hping_kald -c -a "$2" -p $(($3 + i)) -C "$4" -S 1024 -V -v \
			>"$work/$name.ours$i" 2>&1 &
		ours+=($!)
	done
	for i in 0 1; do
		wait "${ours[$i]}" || st=1
		grep -q "client: $4 rounds of 1024 bytes, validated" \
			"$work/$name.ours$i" || st=1
		"$rp" run -t 60 "while kill -0 ${pid[$i]} 2>/dev/null; do sleep 0.2; done; cat ${log[$i]}" \
			>"$work/$name.guest$i" 2>&1 || st=1
		grep -q "server ping data: rdma-ping-$(($4 - 1)): " \
			"$work/$name.guest$i" || st=1
		grep -qi "error\|fail" "$work/$name.guest$i" && st=1
	done
	kald_down
	grep -q "QPN range 2 " "$work/$name.kald" || st=1
	result "$name" $st
}
retrying kald_two_clients

# Guest runs the server (bg); ours is the client. $1 name, $2 guest command,
# $3 success pattern in the guest log, rest: rxe-peer arguments.
guest_server() {
	want "$1" || return 0
	local name=$1 gcmd=$2 pat=$3 st=0 bgout pid log
	shift 3
	guest_kill
	bgout=$("$rp" bg "$gcmd") || st=1
	pid=${bgout%% *}
	log=${bgout##* }
	"$rp" run wait-listen 18515 20 >/dev/null || st=1
	timeout 300 "$rp" ns "$peer" "$@" >"$work/$name.ours" 2>&1 || st=1
	"$rp" run -t 60 "while kill -0 $pid 2>/dev/null; do sleep 0.2; done; cat $log" \
		>"$work/$name.guest" 2>&1 || st=1
	grep -q "$pat" "$work/$name.guest" || st=1
	grep -qi "fail\|couldn't\|error" "$work/$name.guest" && st=1
	result "$name" $st
}
retrying guest_server

# Ours listens; the guest's client connects. $1 name, $2 guest command,
# $3 success pattern, rest: rxe-peer arguments.
guest_client() {
	want "$1" || return 0
	local name=$1 gcmd=$2 pat=$3 st=0 ours
	shift 3
	guest_kill
	timeout 300 "$rp" ns "$peer" "$@" >"$work/$name.ours" 2>&1 &
	ours=$!
	for _ in $(seq 100); do
		"$rp" ns ss -ltn 2>/dev/null | grep -q ':18515 ' && break
		sleep 0.1
	done
	"$rp" run -t 300 "$gcmd" >"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q "$pat" "$work/$name.guest" || st=1
	result "$name" $st
}
retrying guest_client

. "$(dirname "${BASH_SOURCE[0]}")/labns.sh"
lab_pick_ns hrinterop-rxe || exit 1
echo "== starting the lab ($RDMAPEER_NS)"
lab_started=1
lab_up "$rp" "$work/up.log" || { cat "$work/up.log"; exit 1; }
host_ip=$("$rp" env | sed -n 's/^RDMAPEER_HOST_RXE_IP=//p')
guest_ip=$("$rp" env | sed -n 's/^RDMAPEER_GUEST1_RXE_IP=//p')
"$rp" ns ip link set rdmabr0 up
cap=$work/rxe.pcap
if command -v tcpdump >/dev/null; then
	"$rp" ns tcpdump -i rdmabr0 -s 0 -U -w "$cap" 'udp port 4791' \
		>/dev/null 2>&1 &
	tcpdump_pid=$!
	sleep 1
fi

v4=(-a "$host_ip")
guest_ll=$("$rp" run "ip -6 addr show dev eth1" |
	sed -n 's/.*inet6 \(fe80[^/]*\).*/\1/p' | head -1)
# rdma_cm over IPv6 wants a routable address (a link-local one needs a
# scope): RFC 3849 documentation addresses on the lab's rxe link.
host_ip6=2001:db8:100::1
guest_ip6=2001:db8:100::2
"$rp" ns ip -6 addr add "$host_ip6/64" dev rdmabr0 nodad
"$rp" run "ip -6 addr add $guest_ip6/64 dev eth1; sleep 2" >/dev/null

# Our GSI QP (QP1) to the kernel's: a MAD out, its GetResp back.
if want gsi-v4; then
	st=0
	timeout 60 "$rp" ns "$peer" "${v4[@]}" -G "$guest_ip" rdmabr0 \
		>"$work/gsi-v4.ours" 2>&1 || st=1
	result gsi-v4 $st
fi
if want gsi-v6; then
	st=0
	timeout 60 "$rp" ns "$peer" -6 -G "$guest_ll" rdmabr0 \
		>"$work/gsi-v6.ours" 2>&1 || st=1
	result gsi-v6 $st
fi

guest_server pingpong-v4-guest-server "ibv_rc_pingpong -d rxe0 -g 1 -n 200" \
	"200 iters" "${v4[@]}" -n 200 rdmabr0 "$guest_ip"
guest_client pingpong-v4-guest-client \
	"ibv_rc_pingpong -d rxe0 -g 1 -n 200 $host_ip" "200 iters" \
	"${v4[@]}" -n 200 rdmabr0
guest_server pingpong-v6-guest-server \
	"ibv_rc_pingpong -d rxe0 -g 0 -n 200 -s 8192" "200 iters" \
	-6 -n 200 -s 8192 rdmabr0 "$guest_ip"
guest_client pingpong-v6-guest-client \
	"ibv_rc_pingpong -d rxe0 -g 0 -n 200 $host_ip" "200 iters" \
	-6 -n 200 rdmabr0
for t in write read send; do
	guest_server "ib_${t}_bw-v4" \
		"ib_${t}_bw -d rxe0 -x 1 -n 500 -s 65536 -m 1024" " 65536 *500 " \
		"${v4[@]}" -P "$t" -n 500 -s 65536 rdmabr0 "$guest_ip"
done
guest_server ib_atomic_bw-v4 "ib_atomic_bw -d rxe0 -x 1 -n 500 -m 1024" \
	" 8 *500 " "${v4[@]}" -P atomic -n 500 -s 8 rdmabr0 "$guest_ip"
guest_server ib_write_bw-v6 "ib_write_bw -d rxe0 -x 0 -n 200 -s 4096 -m 1024" \
	" 4096 *200 " -6 -P write -n 200 -s 4096 rdmabr0 "$guest_ip"
# The kernel as requester, our responder serving its perftest client.
for t in write read send; do
	guest_client "ib_${t}_bw-v4-guest-client" \
		"ib_${t}_bw -d rxe0 -x 1 -n 500 -s 65536 -m 1024 $host_ip" \
		" 65536 *500 " "${v4[@]}" -P "$t" -n 500 -s 65536 rdmabr0
done
guest_client ib_atomic_bw-v4-guest-client \
	"ib_atomic_bw -d rxe0 -x 1 -n 500 -m 1024 $host_ip" " 8 *500 " \
	"${v4[@]}" -P atomic -n 500 -s 8 rdmabr0

# 3% of the RoCE datagrams dropped in each direction on the bridge.
cm_guest_server rping-v4-guest-server \
	"rping -s -a $guest_ip -p 7174 -C 10 -S 1024 -v" 7174 \
	"server DISCONNECT EVENT" -a "$guest_ip" -C 10 -S 1024
# IT-API's three-way handshake against the kernel's rdma_cm: our REP is
# held by an MRA, then our RTU completes it; rping's rounds then run.
cm_guest_server rping-three-way-guest-server \
	"rping -s -a $guest_ip -p 7180 -C 5 -S 1024 -v" 7180 \
	"server DISCONNECT EVENT" -3 -a "$guest_ip" -C 5 -S 1024
cm_guest_client rping-v4-guest-client \
	"rping -c -a $host_ip -p 7175 -C 10 -S 1024 -v" 7175 \
	"client DISCONNECT EVENT" -a "$host_ip" -C 10 -S 1024
cm_guest_server rping-v6-guest-server \
	"rping -s -a $guest_ip6 -p 7176 -C 10 -v" 7176 \
	"server DISCONNECT EVENT" -a "$guest_ip6" -C 10
cm_guest_client rping-v6-guest-client \
	"rping -c -a $host_ip6 -p 7177 -C 10 -v" 7177 \
	"client DISCONNECT EVENT" -a "$host_ip6" -C 10
hping_guest_server hostrdma-ping-v4-guest-server "$guest_ip" 7180 10
hping_guest_client hostrdma-ping-v4-guest-client "$host_ip" 7181 10
hping_guest_server hostrdma-ping-v6-guest-server "$guest_ip6" 7182 10
kald_two_servers hostrdma-kald-two-host-servers "$host_ip" 7190 20
kald_two_clients hostrdma-kald-two-host-clients "$guest_ip" 7192 20
cm_guest_server ucmatose-guest-server "ucmatose -b $guest_ip -C 10" 7471 \
	"test complete" -U -a "$guest_ip" -C 10 -S 100
cm_guest_client ucmatose-guest-client "ucmatose -s $host_ip -C 10" 7471 \
	"test complete" -U -a "$host_ip" -C 10 -S 100
cm_guest_server ucmatose-v6-guest-server "ucmatose -b $guest_ip6 -C 10" \
	7471 "test complete" -U -a "$guest_ip6" -C 10 -S 100
# Nobody listens: the kernel answers REJ "invalid service ID".
if want cm-rej-no-listener; then
	st=0
	it_rxe -c -a "$guest_ip" -p 7999 \
		>"$work/cm-rej-no-listener.ours" 2>&1 && st=1
	grep -q "event 0x2005" "$work/cm-rej-no-listener.ours" || st=1
	result cm-rej-no-listener $st
fi

# --- perftest -R: tools/hostrdma-perf -R against ib_*_bw -R --------------
# perftest's rdma_cm mode: its control exchange in Sends over one rdma_cm
# connection, the data QP over another, both on port 18520 here.
hperf=$build/tools/hostrdma-perf
perf_rxe() {
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 180 "$hperf" -d rxe_rdmabr0 "$@"
}
# The guest's perftest serves, hostrdma-perf -R measures. $1 name, $2
# test (write_bw, read_bw, write_lat, ...), $3 guest address, $4 size.
rperf_guest_server() {
	local name=$1 st=0 bgout pid log size=${4:-65536}
	want "$1" || return 0
	guest_kill
	bgout=$("$rp" bg "ib_$2 -d rxe0 -R -p 18520 -n 300 -s $size") || st=1
	pid=${bgout%% *}
	log=${bgout##* }
	"$rp" run wait-listen 18520 20 >/dev/null || st=1
	perf_rxe "$2" -R -p 18520 -n 300 -s "$size" --json "$3" \
		>"$work/$name.ours" 2>&1 || st=1
	"$rp" run -t 60 "while kill -0 $pid 2>/dev/null; do sleep 0.2; done; cat $log" \
		>"$work/$name.guest" 2>&1 || st=1
	# Both print the run, $size-byte messages, 300 of them (not
	# read_lat's server, which only waits).
	grep -q "\"msg_size\": *$size, *\"iterations\": *300," \
		"$work/$name.ours" || st=1
	if [ "$2" != read_lat ]; then
		grep -q " $size *300 " "$work/$name.guest" || st=1
	fi
	grep -qi "error\|fail\|couldn" "$work/$name.guest" && st=1
	result "$name" $st
}
retrying rperf_guest_server
# hostrdma-perf -R serves, the guest's perftest is the client. read_lat's
# server only waits and prints no run of its own.
rperf_guest_client() {
	local name=$1 st=0 ours i size=${4:-65536}
	want "$1" || return 0
	guest_kill
	perf_rxe "$2" -R -p 18521 -n 300 -s "$size" --json \
		>"$work/$name.ours" 2>&1 &
	ours=$!
	for i in $(seq 100); do
		grep -q "waiting for a client" "$work/$name.ours" 2>/dev/null &&
			break
		sleep 0.1
	done
	"$rp" run -t 120 "ib_$2 -d rxe0 -R -p 18521 -n 300 -s $size $3" \
		>"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q " $size *300 " "$work/$name.guest" || st=1
	grep -qi "error\|fail\|couldn" "$work/$name.guest" && st=1
	if [ "$2" != read_lat ]; then
		grep -q "\"msg_size\": *$size, *\"iterations\": *300," \
			"$work/$name.ours" || st=1
	fi
	result "$name" $st
}
retrying rperf_guest_client
if [ -x "$hperf" ]; then
	for t in write_bw read_bw send_bw; do
		rperf_guest_server "perftest-R-$t-guest-server" "$t" "$guest_ip"
		rperf_guest_client "perftest-R-$t-guest-client" "$t" "$host_ip"
	done
	# The latency tests: perftest exchanges no size or count, both ends
	# are given the same.
	for t in write_lat read_lat send_lat; do
		rperf_guest_server "perftest-R-$t-guest-server" "$t" \
			"$guest_ip" 8
		rperf_guest_client "perftest-R-$t-guest-client" "$t" \
			"$host_ip" 8
	done
else
	echo "   $hperf not built (make -C $build)"
	result perftest-R-built 1
fi
# --- end of perftest -R ----------------------------------------------------

# --- udaddy: SIDR (IBA 12.11) and UD datagrams ---------------------------
# librdmacm's udaddy uses rdma_cm's UDP port space (port 7174, fixed):
# SIDR_REQ / SIDR_REP over QP1, then 10 datagrams of 100 bytes each way
# with Q_Key 0x01234567, against tests/interop/it-udaddy over IT-API.
# udaddy's server answers the QPN the first datagram's immediate data
# names: ours send their QPN that way (hostrdma_post_sendto_imm) and
# take the answers, and every datagram either side takes carries its
# sender's QPN as immediate data (it-udaddy.c says more).
itu=$build/tests/interop/it-udaddy
it_udaddy() {
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 120 "$itu" -d rxe_rdmabr0 "$@"
}
udaddy_guest_server() { # $1 name, $2 guest address
	want "$1" || return 0
	local name=$1 st=0 bgout pid log
	"$rp" run 'killall udaddy' >/dev/null 2>&1
	bgout=$("$rp" bg "udaddy -b $2 -C 10 -S 100") || st=1
	pid=${bgout%% *}
	log=${bgout##* }
	"$rp" run wait-listen 7174 20 >/dev/null || st=1
	it_udaddy -c -a "$2" -C 10 -S 100 -v >"$work/$name.ours" 2>&1 || st=1
	grep -q "SIDR reply status 0, QPN 0x[0-9a-f]*, Q_Key 0x01234567" \
		"$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes sent to QP 0x[0-9a-f]*, our QPN as immediate data" \
		"$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes back from QP 0x[0-9a-f]*, its QPN as immediate data" \
		"$work/$name.ours" || st=1
	"$rp" run -t 60 "while kill -0 $pid 2>/dev/null; do sleep 0.2; done; cat $log" \
		>"$work/$name.guest" 2>&1 || st=1
	grep -q "data transfers complete" "$work/$name.guest" || st=1
	grep -q "return status 0" "$work/$name.guest" || st=1
	result "$name" $st
}
retrying udaddy_guest_server
udaddy_guest_client() { # $1 name, $2 host address
	want "$1" || return 0
	local name=$1 st=0 ours i
	"$rp" run 'killall udaddy' >/dev/null 2>&1
	it_udaddy -s -a "$2" -C 10 -S 100 -v >"$work/$name.ours" 2>&1 &
	ours=$!
	for i in $(seq 100); do
		grep -q listening "$work/$name.ours" 2>/dev/null && break
		sleep 0.1
	done
	"$rp" run -t 120 "udaddy -s $2 -C 10 -S 100" \
		>"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q "10 datagrams of 100 bytes from QP 0x[0-9a-f]*, its QPN as immediate data" \
		"$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes sent back" "$work/$name.ours" || st=1
	grep -q "data transfers complete" "$work/$name.guest" || st=1
	grep -q "return status 0" "$work/$name.guest" || st=1
	result "$name" $st
}
retrying udaddy_guest_client
if [ -x "$itu" ]; then
	udaddy_guest_server udaddy-v4-guest-server "$guest_ip"
	udaddy_guest_client udaddy-v4-guest-client "$host_ip"
	udaddy_guest_server udaddy-v6-guest-server "$guest_ip6"
	udaddy_guest_client udaddy-v6-guest-client "$host_ip6"
else
	echo "   $itu not built (make -C $build)"
	result udaddy-built 1
fi
# --- end of udaddy ---------------------------------------------------------

if [ -z "${RXE_CASES:-}" ] || [[ "$RXE_CASES" == *lossy* ]]; then
"$rp" ns nft -f - <<'EOF'
table inet hrloss {
	chain in { type filter hook input priority 0; udp dport 4791 numgen random mod 100 lt 3 counter drop; }
	chain out { type filter hook output priority 0; udp dport 4791 numgen random mod 100 lt 3 counter drop; }
}
EOF
# (rping's client may exit before its DISCONNECTED event when the DREP
# is lost: its last round is the proof there.)
cm_guest_server lossy-rping-v4-guest-server \
	"rping -s -a $guest_ip -p 7178 -C 50 -S 1024 -v" 7178 \
	"server DISCONNECT EVENT" -a "$guest_ip" -C 50 -S 1024
cm_guest_client lossy-rping-v4-guest-client \
	"rping -c -a $host_ip -p 7179 -C 50 -S 1024 -v" 7179 \
	"rdma-ping-49: " -a "$host_ip" -C 50 -S 1024
guest_server lossy-pingpong-v4 "ibv_rc_pingpong -d rxe0 -g 1 -n 300 -s 8192" \
	"300 iters" "${v4[@]}" -n 300 -s 8192 rdmabr0 "$guest_ip"
guest_client lossy-pingpong-v6-guest-client \
	"ibv_rc_pingpong -d rxe0 -g 0 -n 300 $host_ip" "300 iters" \
	-6 -n 300 rdmabr0
guest_server lossy-ib_write_bw "ib_write_bw -d rxe0 -x 1 -n 300 -s 65536 -m 1024" \
	" 65536 *300 " "${v4[@]}" -P write -n 300 -s 65536 rdmabr0 "$guest_ip"
guest_server lossy-ib_read_bw "ib_read_bw -d rxe0 -x 1 -n 300 -s 65536 -m 1024" \
	" 65536 *300 " "${v4[@]}" -P read -n 300 -s 65536 rdmabr0 "$guest_ip"
guest_client lossy-ib_read_bw-guest-client \
	"ib_read_bw -d rxe0 -x 1 -n 300 -s 65536 -m 1024 $host_ip" \
	" 65536 *300 " "${v4[@]}" -P read -n 300 -s 65536 rdmabr0
dropped=$("$rp" ns nft list table inet hrloss |
	sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
retx=$(cat "$work"/lossy-*.ours 2>/dev/null |
	sed -n 's/.*retransmitted \([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
echo "   loss: $dropped datagrams dropped on the bridge, we retransmitted $retx packets"
st=0
[ "$dropped" -gt 0 ] && [ "$retx" -gt 0 ] || st=1
result lossy-retransmissions $st
"$rp" ns nft delete table inet hrloss
fi

if [ -n "$tcpdump_pid" ]; then
	sleep 1
	kill "$tcpdump_pid"
	wait "$tcpdump_pid" 2>/dev/null
	tcpdump_pid=
	if command -v tshark >/dev/null; then
		frames=$(tshark -r "$cap" --disable-heuristic rpcrdma_infiniband \
			-Y infiniband 2>/dev/null | wc -l)
		# Linux rxe sends UDP/IPv6 with a zero checksum, which
		# Wireshark flags; that is the kernel's, not a decoding
		# problem, and counted apart.
		zero6=$(tshark -r "$cap" --disable-heuristic rpcrdma_infiniband \
			-Y 'infiniband && ipv6 && udp.checksum == 0' \
			2>/dev/null | wc -l)
		bad=$(tshark -r "$cap" --disable-heuristic rpcrdma_infiniband \
			-Y '(_ws.malformed || _ws.expert.severity >= error) &&
			    !(ipv6 && udp.checksum == 0)' 2>/dev/null | wc -l)
		cm=$(tshark -r "$cap" --disable-heuristic rpcrdma_infiniband \
			-Y 'infiniband.mad.mgmtclass == 0x07' 2>/dev/null | wc -l)
		cm_kinds=$(tshark -r "$cap" --disable-heuristic rpcrdma_infiniband \
			-Y 'infiniband.mad.mgmtclass == 0x07' -T fields \
			-e infiniband.mad.attributeid 2>/dev/null | sort | uniq -c |
			awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
		echo "   tshark: $cm CM MADs decoded ($cm_kinds)"
		st=0
		for a in 0x0010 0x0012 0x0013 0x0014 0x0015 0x0016 \
			0x0017 0x0018; do
			grep -q "$a" <<<"$cm_kinds" || st=1
		done
		[ -n "${RXE_CASES:-}" ] || result tshark-cm-mads $st
		echo "   tshark: $frames InfiniBand frames decoded, $bad malformed" \
			"or in error ($zero6 IPv6 frames from the kernel with" \
			"a zero UDP checksum not counted)"
		st=0
		[ "$frames" -gt 0 ] && [ "$bad" -eq 0 ] || st=1
		result tshark-decode $st
	fi
	if command -v python3 >/dev/null; then
		out=$(python3 "$interop/probes/icrc_check.py" "$cap")
		st=$?
		echo "   icrc_check.py: ${out##*$'\n'}"
		result icrc-check $st
	fi
fi

echo "$pass passed, $fail failed ($retried run a second time)"
if [ "${keep:-0}" -eq 1 ]; then
	trap - EXIT
	[ -n "$tcpdump_pid" ] && kill "$tcpdump_pid" 2>/dev/null
	"$rp" down >/dev/null 2>&1
	echo "logs kept in $work"
fi
[ "$fail" -eq 0 ]
