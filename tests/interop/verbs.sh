#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/interop/verbs.sh: hostrdma's verbs provider (vp/verbs) inside the
# lab's qemu guests (tests/interop/lab/rdmapeer), on top of the kernel's
# own siw0 (iWARP, eth0) and rxe0 (RoCEv2, eth1) through libibverbs: the
# build is installed into an overlay (make install DESTDIR=...) that the
# guest boots with (RDMAPEER_OVERLAY), in a network namespace of its own
# (RDMAPEER_NS, default hrinterop-verbs: tests/interop/labns.sh).
#
#   tests/interop/verbs.sh          (root; BUILD_DIR=build by default)
#
# Cases: hostrdma-info in the guest lists siw0 and rxe0 under those names
# (beside the soft providers' siw_eth0 ...), siw0 iWARP and rxe0
# InfiniBand/RoCE (IT-API's name for IB and RoCE), online, with the
# guest's address of that interface and message limits above zero.
# Then, on each: a PZ, event dispatchers, an LMR, an RC endpoint with
# receives posted, a listener, a UD endpoint (rxe0; refused on siw0), all
# freed (tests/interop/it-verbs-objects).
# Then connections through librdmacm (two guests): hostrdma-ping between
# them and against the guest's rping, both roles, on each device; the
# connection functions and events (tests/interop/it-verbs-cm: private
# data, reject, non-peer reject, accept, disconnect); across the bridge,
# the guest's siw0/rxe0 against our soft siw/rxe on the host, both roles.
# hostrdma-perf -R in guest 1 against perftest's ib_write_bw -R and
# ib_read_bw -R in guest 2, both roles, on each device.
# UD datagrams between the guests' rxe0 (tests/interop/it-verbs-ud).
# SIDR on rxe0 (tests/interop/it-udaddy) against librdmacm's udaddy in
# guest 2 and against our soft rxe on the host, both roles.
# RDMA Writes and Sends with immediate data (tests/interop/it-imm) between
# rxe0 and our soft rxe on the host, both roles.
# hostrdma-conformance (the pure IT-API suites) on siw0 and on rxe0.
# Last, a second ibverbs device on eth0 (rxe1 beside siw0): one of the
# two is listed, the other named in a log line.
# VERBS_CASES="GLOB ...": run only the cases whose names match one of
# the globs (e.g. 'perf-* ud-*'); the lab boots all the same.
# Prints "ok NAME" / "FAIL NAME" per case and "N passed, N failed"; exit 0
# when all passed, 1 on a failure, 77 (loud SKIP) when qemu, root or the
# build is missing.
set -u
# A host's hostrdma-kald must not take part: cases that want one start
# their own on a socket of their own.
export HOSTRDMA_KALD_SOCKET=

top=${HOSTRDMA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${HOSTRDMA_BUILDDIR:-${BUILD_DIR:-$top/build}}
interop=${HOSTRDMA_INTEROP_DIR:-$top/tests/interop/lab}
rp=$interop/rdmapeer
work=$(mktemp -d /tmp/verbs-interop.XXXXXX)
pass=0
fail=0

skip() {
	echo "SKIP: tests/interop/verbs.sh: $*" >&2
	rm -rf "$work"
	exit 77
}

[ -x "$rp" ] || skip "no rdmapeer at $interop (set HOSTRDMA_INTEROP_DIR)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing"
[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, taps)"
[ -f "$build/vp/verbs/verbs.la" ] ||
	skip "$build has no verbs provider module (configure found no libibverbs-dev/librdmacm-dev?)"

lab_started=0
cleanup() {
	[ "$lab_started" = 1 ] && "$rp" down >/dev/null 2>&1
	[ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

want() { # case name: selected by VERBS_CASES?
	local g
	[ -z "${VERBS_CASES:-}" ] && return 0
	for g in $VERBS_CASES; do
		# shellcheck disable=SC2254
		case $1 in $g) return 0 ;; esac
	done
	return 1
}

result() { # name, status
	if [ "$2" -eq 0 ]; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "FAIL $1 (logs: $work/$1.*)"
		fail=$((fail + 1))
		KEEP=1
		for f in "$work/$1".*; do
			[ -f "$f" ] || continue
			echo "   --- ${f##*/}"
			tail -n 40 "$f" | sed 's/^/   | /'
		done
	fi
}

# The build, installed as configured (its prefix, under usr/ or opt/ as
# the overlay wants).
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
case $prefix in
/usr/* | /opt/*) ;;
*) skip "the build's prefix $prefix is not under /usr or /opt (configure --prefix=/opt/hostrdma)" ;;
esac
echo "== installing $build ($prefix) into the overlay"
make -C "$build" install DESTDIR="$work/ov" >"$work/install.log" 2>&1 ||
	{ tail -n 30 "$work/install.log"; exit 1; }
[ -f "$work/ov$prefix/lib/hostrdma/providers/verbs.so" ] ||
	{ echo "FAIL: make install put no verbs.so in $prefix/lib/hostrdma/providers"; exit 1; }
# Test programs are not installed: the binary libtool built, beside.
for p in it-verbs-objects it-verbs-cm it-verbs-ud it-udaddy it-imm; do
	f=$build/tests/interop/.libs/$p
	[ -x "$f" ] || f=$build/tests/interop/$p
	[ -x "$f" ] || skip "$f not built (make -C $build)"
	cp "$f" "$work/ov$prefix/bin/$p" || exit 1
done

. "$(dirname "${BASH_SOURCE[0]}")/labns.sh"
lab_pick_ns hrinterop-verbs || exit 1
echo "== starting the lab ($RDMAPEER_NS) with hostrdma inside"
lab_started=1
RDMAPEER_OVERLAY="$work/ov" lab_up "$rp" "$work/up.log" 2 ||
	{ cat "$work/up.log"; exit 1; }
siw_ip=$("$rp" env | sed -n 's/^RDMAPEER_GUEST1_SIW_IP=//p')
rxe_ip=$("$rp" env | sed -n 's/^RDMAPEER_GUEST1_RXE_IP=//p')
siw_ip2=$("$rp" env | sed -n 's/^RDMAPEER_GUEST2_SIW_IP=//p')
rxe_ip2=$("$rp" env | sed -n 's/^RDMAPEER_GUEST2_RXE_IP=//p')

# hostrdma in guest 1, the installed one (its own provider directory).
hr() {
	"$rp" run -t 60 "LD_LIBRARY_PATH=$prefix/lib G_MESSAGES_DEBUG=hostrdma-verbs $*"
}

# A program in the background in guest $1 (command line $2): bg_pid and
# bg_log as rdmapeer's bg gives them; 1 when it did not start.
gbg() {
	local out
	bg_pid= bg_log=
	out=$("$rp" bg -g "$1" "$2") || return 1
	bg_pid=${out%% *}
	bg_log=${out##* }
}
# Wait (10 s at most) for a line matching $2 in $1, the log of a program
# started on the host in the background (its server saying it listens);
# the client that follows fails if it never does.
host_log_wait() {
	local i
	for i in $(seq 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# A server on the host (the command after $2, in the background, its log
# $work/$1.host) and guest 1's client ($2, its log $work/$1.guest): 1 when
# either exits non-zero.
host_serves() {
	local name=$1 gcmd=$2 ours st=0
	shift 2
	"$@" >"$work/$name.host" 2>&1 &
	ours=$!
	host_log_wait "$work/$name.host" listening
	"$rp" run -g 1 -t 120 "$gcmd" >"$work/$name.guest" 2>&1 || st=1
	wait "$ours" || st=1
	return $st
}
# Wait (60 s at most) for the program gbg started in guest $1 to end; its
# output into file $2.
gwait() {
	"$rp" run -g "$1" -t 60 "while kill -0 $bg_pid 2>/dev/null; do sleep 0.2; done; cat $bg_log" \
		>"$2" 2>&1
}

# hostrdma makes devices only on interfaces up and running with an
# address: wait for both of the guest's (right after boot one may lag).
"$rp" run -t 30 'for i in $(seq 100); do
	ok=1
	for d in eth0 eth1; do
		ip -4 addr show dev $d | grep -q inet || ok=0
		ip link show dev $d | grep -q LOWER_UP || ok=0
	done
	[ $ok = 1 ] && exit 0
	sleep 0.2
done; ip addr; exit 1' >"$work/ifaces.guest" 2>&1 ||
	{ echo "FAIL: the guest's eth0/eth1 never came up with addresses"; cat "$work/ifaces.guest"; exit 1; }
"$rp" run -g 2 -t 30 'for i in $(seq 100); do
	ip -4 addr show dev eth0 | grep -q inet &&
		ip -4 addr show dev eth1 | grep -q inet && exit 0
	sleep 0.2
done; exit 1' >"$work/ifaces2.guest" 2>&1 ||
	{ echo "FAIL: guest 2's eth0/eth1 never came up with addresses"; exit 1; }
"$rp" run ibv_devinfo >"$work/ibv_devinfo.guest" 2>&1

# The guests' kernel siw (Linux 6.1; upstream reads the same), accepting a
# connection, sends the MPA Reply and only then gives the socket's
# receive upcall to the QP (siw_accept: siw_send_mpareqrep before
# siw_qp_socket_assoc). A first FPDU from the initiator that lands in
# between meets the connection manager's upcall, which ignores data in
# RDMA mode: it stays in the socket until more data comes, and a client
# that sends once and waits for the answer (perftest -R's exchange)
# waits for ever while the accepting side's receive never completes.
# Seen under load, about one run in ten of perf-read_bw-server-siw0 with
# two busy loops on the host. The kernel's own debug line for that
# arrival ("siw_cm_llp_data_ready: cep state: 7", RDMA_MODE) tells it
# from a fault of ours: it is switched on in both guests, and
# siw_accept_race looks for it since a case's mark. (The same window
# that hostrdma-siw(7)'s rts_delay_ms keeps our soft-iWARP initiator out
# of, and that the rping cases below retry for.)
for g in 1 2; do
	"$rp" run -g $g 'mount -t debugfs none /sys/kernel/debug 2>/dev/null
		echo "func siw_cm_llp_data_ready +p" >/proc/dynamic_debug/control' \
		>/dev/null 2>&1
done
kmark() { # mark: written to both guests' kernel log
	local g
	for g in 1 2; do
		"$rp" run -g $g "echo 'hostrdma-interop: $1' >/dev/kmsg" >/dev/null 2>&1
	done
}
siw_accept_race() { # mark: did a guest's siw meet the race since then?
	local g
	for g in 1 2; do
		"$rp" run -g $g "dmesg | sed -n '/hostrdma-interop: $1\$/,\$p' |
			grep -q 'siw_cm_llp_data_ready: cep state: 7'" \
			>/dev/null 2>&1 && { echo "guest $g"; return 0; }
	done
	return 1
}

if want info-list; then
st=0
hr "$prefix/bin/hostrdma-info -l" >"$work/info-list.guest" 2>&1 || st=1
grep -Eq '^siw0[[:space:]]+iWARP$' "$work/info-list.guest" || st=1
grep -Eq '^rxe0[[:space:]]+InfiniBand/RoCE$' "$work/info-list.guest" || st=1
result info-list $st
fi

# $1 device, $2 transport as IT-API shows it, $3 the guest's address.
info_device() {
	local name=info-$1 st=0 f
	want "$name" || return 0
	f=$work/$name.guest
	hr "HOSTRDMA_DEVICES=$1 $prefix/bin/hostrdma-info -v -d $1" >"$f" 2>&1 ||
		st=1
	grep -q "^device: $1\$" "$f" || st=1
	# siw0 and rxe0 are the verbs provider's; the interface is the one
	# holding the device's address (the name does not carry it).
	grep -Eq "provider:[[:space:]]+verbs\$" "$f" || st=1
	grep -Eq "network interface:[[:space:]]+eth[01]\$" "$f" || st=1
	grep -Eq "transport:[[:space:]]+$2\$" "$f" || st=1
	grep -Eq "state:[[:space:]]+PORT_ACTIVE" "$f" || st=1
	# iWARP shows the port's address, RoCE its GIDs
	grep -Eq "(address|GID\[ *[0-9]+\]):[[:space:]]+(::ffff:)?$3\$" "$f" ||
		st=1
	# Limits from ibv_query_device / ibv_query_port: non-zero numbers.
	grep -Eq "max RC Send:[[:space:]]+[1-9][0-9]* bytes" "$f" || st=1
	result "$name" $st
}
info_device siw0 iWARP "$siw_ip"
info_device rxe0 'InfiniBand/RoCE' "$rxe_ip"

# PD, MR, CQs, an RC QP and posted receives on the kernel's devices,
# through IT-API (tests/interop/it-verbs-objects.c).
for dev in siw0 rxe0; do
	want "objects-$dev" || continue
	st=0
	hr "HOSTRDMA_DEVICES=$dev $prefix/bin/it-verbs-objects $dev" \
		>"$work/objects-$dev.guest" 2>&1 || st=1
	grep -q '^objects ok' "$work/objects-$dev.guest" || st=1
	result "objects-$dev" $st
done

# Connections through librdmacm (vp/verbs/verbs_cm.c and verbs_cm_ops.c,
# cm/cm_native.c): tools/hostrdma-ping, which is rping over IT-API, between
# the guests and against the guest's rping, both roles, 10 rounds of 1 KiB,
# every round checked by the client (-V) and the server's last round in
# its log.
# $1 guest, rest: hostrdma-ping's arguments, on the one device -D names.
gping_env() { # device
	echo "LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=$1 $prefix/bin/hostrdma-ping -D $1"
}
guests_kill() {
	for g in 1 2; do
		"$rp" run -g $g 'killall rping hostrdma-ping' >/dev/null 2>&1
	done
}
# $1 name, $2 server guest, $3 server command, $4 client guest, $5 client
# command, $6 server address; port 7174, 10 rounds.
ping_case() {
	local name=$1 sg=$2 scmd=$3 cg=$4 ccmd=$5 addr=$6 st=0
	want "$name" || return 0
	guests_kill
	gbg "$sg" "$scmd -s -a $addr -p 7174 -C 10 -S 1024 -v" || st=1
	"$rp" run -g "$sg" wait-listen 7174 20 >/dev/null || st=1
	"$rp" run -g "$cg" -t 90 "$ccmd -c -a $addr -p 7174 -C 10 -S 1024 -v -V" \
		>"$work/$name.client" 2>&1 || st=1
	gwait "$sg" "$work/$name.server" || st=1
	grep -q "ping data: rdma-ping-9: " "$work/$name.client" || st=1
	grep -q "server ping data: rdma-ping-9: " "$work/$name.server" || st=1
	grep -qi "error\|fail\|mismatch" "$work/$name.client" "$work/$name.server" &&
		st=1
	result "$name" $st
}
# A case against rping runs once more when it failed: Linux siw 6.1
# leaves unread an FPDU that arrives between its MPA Reply and entering
# RDMA mode (hostrdma-siw(7), rts_delay_ms), which a client sending at
# once after ESTABLISHED - ours on the kernel's siw0 too - now and then
# hits on the lab's two shared cores (seen once in six runs: rping's
# server silent, our client without an answer). The first failure is
# printed in full; a second one counts. VERBS_NO_RETRY=1: no second go.
retried=0
once_more() {
	local before=$fail
	"$@"
	[ "$fail" -gt "$before" ] && [ -z "${VERBS_NO_RETRY:-}" ] || return 0
	fail=$before
	retried=$((retried + 1))
	echo "   $2: once more (see above; a second failure counts)"
	"$@"
}
for dev in siw0 rxe0; do
	if [ $dev = siw0 ]; then a1=$siw_ip a2=$siw_ip2; else a1=$rxe_ip a2=$rxe_ip2; fi
	ping_case "hping-guests-$dev" 2 "$(gping_env $dev)" 1 "$(gping_env $dev)" "$a2"
	once_more ping_case "hping-client-rping-$dev" 2 rping 1 "$(gping_env $dev)" "$a2"
	once_more ping_case "hping-server-rping-$dev" 1 "$(gping_env $dev)" 2 rping "$a1"
done

# The connection functions and their events between the guests
# (tests/interop/it-verbs-cm.c): a request's private data, it_reject's
# reaching the client in PEER_REJECT, NONPEER_REJECT where nobody listens,
# a request the client gives up before the server answers (the server's
# it_ep_accept, then BROKEN on its endpoint),
# it_ep_accept's private data in the client's ESTABLISHED, a Send, and
# it_ep_disconnect ending both sides with DISCONNECT.
for dev in siw0 rxe0; do
	if [ $dev = siw0 ]; then a2=$siw_ip2; else a2=$rxe_ip2; fi
	want "cm-$dev" || continue
	st=0
	guests_kill
	env="LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=$dev"
	gbg 2 "$env $prefix/bin/it-verbs-cm $dev server $a2 7180" || st=1
	"$rp" run -g 2 wait-listen 7180 20 >/dev/null || st=1
	"$rp" run -g 1 -t 90 "$env $prefix/bin/it-verbs-cm $dev client $a2 7180" \
		>"$work/cm-$dev.client" 2>&1 || st=1
	gwait 2 "$work/cm-$dev.server" || st=1
	grep -q "^client ok" "$work/cm-$dev.client" || st=1
	grep -q "^server ok" "$work/cm-$dev.server" || st=1
	result "cm-$dev" $st
done

# Across the bridge: the guest's verbs device against hostrdma's own soft
# providers on the host (siw over TCP/MPA, rxe over RoCEv2 and the IB CM
# we run ourselves), both roles. One API, the kernel's device on one end,
# ours on the other.
hping=$build/tools/hostrdma-ping
host_ping() { # soft provider (siw, rxe), rest: hostrdma-ping's arguments
	local p=$1
	shift
	# (siw: Linux siw 6.1 leaves unread an FPDU that arrives between its
	# MPA Reply and entering RDMA mode: the first one a little later, as
	# in run.sh; hostrdma-siw(7), rts_delay_ms.)
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/$p/.libs" HOSTRDMA_CONF= \
		HOSTRDMA_OPTIONS=$([ "$p" = siw ] && echo siw.rts_delay_ms=100) \
		HOSTRDMA_DEVICES=${p}_rdmabr0 timeout 120 "$hping" \
		-D ${p}_rdmabr0 "$@"
}
host_ip=$("$rp" env | sed -n 's/^RDMAPEER_HOST_SIW_IP=//p')
host_rxe_ip=$("$rp" env | sed -n 's/^RDMAPEER_HOST_RXE_IP=//p')
# $1 name, $2 guest device, $3 soft provider, $4 guest address, $5 host's
bridge_cases() {
	local name=$1 dev=$2 p=$3 ga=$4 ha=$5 st=0 ours
	want "$name-guest-server" || want "$name-host-server" || return 0
	[ -x "$hping" ] && [ -n "$ha" ] || { result "$name-skipped" 1; return; }
	# The guest serves, the host's soft device is the client.
	guests_kill
	gbg 1 "$(gping_env "$dev") -s -a $ga -p 7175 -C 10 -S 1024 -v" || st=1
	"$rp" run -g 1 wait-listen 7175 20 >/dev/null || st=1
	host_ping "$p" -c -a "$ga" -p 7175 -C 10 -S 1024 -V \
		>"$work/$name-guest-server.host" 2>&1 || st=1
	gwait 1 "$work/$name-guest-server.guest" || st=1
	grep -q "client: 10 rounds of 1024 bytes, validated" \
		"$work/$name-guest-server.host" || st=1
	grep -q "server ping data: rdma-ping-9: " \
		"$work/$name-guest-server.guest" || st=1
	grep -qi "error\|fail" "$work/$name-guest-server".* && st=1
	result "$name-guest-server" $st
	# The host's soft device serves, the guest is the client.
	st=0
	host_ping "$p" -s -a "$ha" -p 7176 -C 10 -S 1024 -v \
		>"$work/$name-host-server.host" 2>&1 &
	ours=$!
	host_log_wait "$work/$name-host-server.host" "waiting for a client"
	"$rp" run -g 1 -t 90 "$(gping_env "$dev") -c -a $ha -p 7176 -C 10 -S 1024 -V" \
		>"$work/$name-host-server.guest" 2>&1 || st=1
	wait "$ours" || st=1
	grep -q "client: 10 rounds of 1024 bytes, validated" \
		"$work/$name-host-server.guest" || st=1
	grep -q "server ping data: rdma-ping-9: " \
		"$work/$name-host-server.host" || st=1
	grep -qi "error\|fail" "$work/$name-host-server".* && st=1
	result "$name-host-server" $st
}
bridge_cases bridge-siw0 siw0 siw "$siw_ip" "$host_ip"
bridge_cases bridge-rxe0 rxe0 rxe "$rxe_ip" "$host_rxe_ip"

# UD on rxe0 (the verbs provider's UD QPs, ibv_create_ah address handles):
# it_ep_ud_create, it_address_handle_create, it_post_sendto and
# it_post_recvfrom between the guests (tests/interop/it-verbs-ud.c): 16
# datagrams of 512 bytes each way, every byte and the GRH checked, all
# from the one peer QP. The server's QPN goes to the client by hand here
# (SIDR: the sidr-* cases below).
if want ud-rxe0; then
	st=0
	guests_kill
	"$rp" run -g 2 'killall it-verbs-ud' >/dev/null 2>&1
	env="LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=rxe0"
	gbg 2 "$env $prefix/bin/it-verbs-ud rxe0 server $rxe_ip 16" || st=1
	qpn=
	for i in $(seq 100); do
		qpn=$("$rp" run -g 2 "sed -n 's/^qpn //p' $bg_log" 2>/dev/null)
		[ -n "$qpn" ] && break
		sleep 0.2
	done
	[ -n "$qpn" ] || st=1
	"$rp" run -g 1 -t 60 "$env $prefix/bin/it-verbs-ud rxe0 client $rxe_ip2 16 ${qpn:-0}" \
		>"$work/ud-rxe0.client" 2>&1 || st=1
	gwait 2 "$work/ud-rxe0.server" || st=1
	grep -q "^client ok" "$work/ud-rxe0.client" || st=1
	grep -q "^server ok" "$work/ud-rxe0.server" || st=1
	result ud-rxe0 $st
fi

# SIDR on rxe0 (rdma_cm's UDP port space, RNICPI_DEV_CAP_NATIVE_SIDR):
# tests/interop/it-udaddy (IT-API: it_ud_service_request, a listener's
# it_ud_service_reply) in guest 1 on the verbs device against
# librdmacm's udaddy in guest 2, both roles: port 7174 (udaddy's, fixed),
# SIDR_REQ/SIDR_REP through both kernels' IB CMs, the reply's QPN and
# Q_Key 0x01234567 (RDMA_UDP_QKEY), then 10 datagrams of 100 bytes each
# way, each carrying its sender's QPN as immediate data (udaddy's server
# answers the QPN the first datagram's immediate data names; ours send it
# with hostrdma_post_sendto_imm and check it on every datagram taken, as
# in rxe.sh). Then across the bridge: it-udaddy on rxe0 against
# it-udaddy on the host's soft rxe (our own IB CM's SIDR), both roles.
gudaddy_env() {
	echo "LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=rxe0 $prefix/bin/it-udaddy -d rxe0"
}
# $1 guest, $2 log: wait for it-udaddy's "listening" line
gudaddy_listening() {
	"$rp" run -g "$1" -t 30 "for i in \$(seq 150); do grep -q listening $2 && exit 0; sleep 0.2; done; exit 1" \
		>/dev/null 2>&1
}
itu=$build/tests/interop/it-udaddy
host_udaddy() { # it-udaddy's arguments, on the host's soft rxe
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 120 "$itu" -d rxe_rdmabr0 "$@"
}
udaddy_kill() {
	for g in 1 2; do
		"$rp" run -g $g 'killall udaddy it-udaddy' >/dev/null 2>&1
	done
}
if want sidr-rxe0-udaddy-server; then
	name=sidr-rxe0-udaddy-server st=0
	udaddy_kill
	gbg 2 "udaddy -b $rxe_ip2 -C 10 -S 100" || st=1
	"$rp" run -g 2 wait-listen 7174 20 >/dev/null || st=1
	"$rp" run -g 1 -t 120 "$(gudaddy_env) -c -a $rxe_ip2 -C 10 -S 100 -v" \
		>"$work/$name.ours" 2>&1 || st=1
	gwait 2 "$work/$name.theirs" || st=1
	grep -q "SIDR reply status 0, QPN 0x[0-9a-f]*, Q_Key 0x01234567" \
		"$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes sent to QP 0x[0-9a-f]*, our QPN as immediate data" "$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes back from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.ours" || st=1
	grep -q "data transfers complete" "$work/$name.theirs" || st=1
	grep -q "return status 0" "$work/$name.theirs" || st=1
	result $name $st
fi
if want sidr-rxe0-udaddy-client; then
	name=sidr-rxe0-udaddy-client st=0
	udaddy_kill
	gbg 1 "$(gudaddy_env) -s -a $rxe_ip -C 10 -S 100 -v" || st=1
	gudaddy_listening 1 "$bg_log" || st=1
	"$rp" run -g 2 -t 120 "udaddy -s $rxe_ip -C 10 -S 100" \
		>"$work/$name.theirs" 2>&1 || st=1
	gwait 1 "$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.ours" || st=1
	grep -q "10 datagrams of 100 bytes sent back" "$work/$name.ours" || st=1
	grep -q "data transfers complete" "$work/$name.theirs" || st=1
	grep -q "return status 0" "$work/$name.theirs" || st=1
	result $name $st
fi
if want sidr-bridge-rxe0-guest-server; then
	name=sidr-bridge-rxe0-guest-server st=0
	udaddy_kill
	gbg 1 "$(gudaddy_env) -s -a $rxe_ip -C 10 -S 100 -v" || st=1
	gudaddy_listening 1 "$bg_log" || st=1
	host_udaddy -c -a "$rxe_ip" -C 10 -S 100 -v >"$work/$name.host" 2>&1 ||
		st=1
	gwait 1 "$work/$name.guest" || st=1
	grep -q "SIDR reply status 0, QPN 0x[0-9a-f]*, Q_Key 0x01234567" \
		"$work/$name.host" || st=1
	grep -q "10 datagrams of 100 bytes sent to QP 0x[0-9a-f]*, our QPN as immediate data" "$work/$name.host" || st=1
	grep -q "10 datagrams of 100 bytes back from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.host" || st=1
	grep -q "10 datagrams of 100 bytes from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.guest" || st=1
	grep -q "10 datagrams of 100 bytes sent back" "$work/$name.guest" ||
		st=1
	result $name $st
fi
if want sidr-bridge-rxe0-host-server && [ -n "$host_rxe_ip" ]; then
	name=sidr-bridge-rxe0-host-server st=0
	udaddy_kill
	host_serves $name "$(gudaddy_env) -c -a $host_rxe_ip -C 10 -S 100 -v" \
		host_udaddy -s -a "$host_rxe_ip" -C 10 -S 100 -v || st=1
	grep -q "SIDR reply status 0, QPN 0x[0-9a-f]*, Q_Key 0x01234567" \
		"$work/$name.guest" || st=1
	grep -q "10 datagrams of 100 bytes sent to QP 0x[0-9a-f]*, our QPN as immediate data" "$work/$name.guest" || st=1
	grep -q "10 datagrams of 100 bytes back from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.guest" || st=1
	grep -q "10 datagrams of 100 bytes from QP 0x[0-9a-f]*, its QPN as immediate data" "$work/$name.host" || st=1
	grep -q "10 datagrams of 100 bytes sent back" "$work/$name.host" ||
		st=1
	result $name $st
fi

# hostrdma-perf -R (tools/perf_rcm.c: perftest's rdma_cm exchange) in
# guest 1 against perftest -R in guest 2, both roles, on each device: 300
# messages of 64 KiB, both ends reporting that run, no error from
# perftest. $1 name, $2 device, $3 test (write_bw, read_bw), $4 who
# serves (ours, theirs), $5 the server's address.
gperf_env() { # device
	echo "LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=$1 $prefix/bin/hostrdma-perf -d $1"
}
perf_case() {
	local name=$1 dev=$2 t=$3 who=$4 addr=$5 st=0
	local args="-R -p 18530 -n 300 -s 65536" g
	want "$name" || return 0
	perf_runs=$((perf_runs + 1))
	kmark "$name-$perf_runs"
	guests_kill
	"$rp" run -g 1 'killall hostrdma-perf' >/dev/null 2>&1
	"$rp" run -g 2 "killall ib_$t" >/dev/null 2>&1
	if [ "$who" = theirs ]; then
		gbg 2 "ib_$t -d $dev $args" || st=1
		"$rp" run -g 2 wait-listen 18530 20 >/dev/null || st=1
		"$rp" run -g 1 -t 120 "$(gperf_env "$dev") $t $args --json $addr" \
			>"$work/$name.ours" 2>&1 || st=1
		gwait 2 "$work/$name.theirs" || st=1
	else
		gbg 1 "$(gperf_env "$dev") $t $args --json" || st=1
		"$rp" run -g 1 wait-listen 18530 20 >/dev/null || st=1
		"$rp" run -g 2 -t 120 "ib_$t -d $dev $args $addr" \
			>"$work/$name.theirs" 2>&1 || st=1
		gwait 1 "$work/$name.ours" || st=1
	fi
	grep -q '"msg_size": *65536, *"iterations": *300,' "$work/$name.ours" ||
		st=1
	grep -q ' 65536 *300 ' "$work/$name.theirs" || st=1
	grep -qi "error\|fail\|couldn" "$work/$name.theirs" && st=1
	# perftest measures the CPU clock first and gives up when its
	# samples do not line up ("Correlation coefficient r^2 ... < 0.9,
	# Can't produce a report"): a loaded guest's clock, not the data
	# path (seen once in CI, ib_write_bw -R against our server on siw0).
	grep -q "Can't produce a report" "$work/$name.theirs" &&
		perf_why="perftest could not calibrate its clock"
	if [ $st != 0 ] && [ "$dev" = siw0 ] &&
		g=$(siw_accept_race "$name-$perf_runs"); then
		perf_why="the kernel siw of $g took the first message before its QP had the socket"
	fi
	result "$name" $st
}
perf_runs=0
# A perf case that failed for one of the two reasons above (perftest's
# clock; the kernel's accept race) runs once more (printed and counted; a
# second failure counts). VERBS_NO_RETRY=1: no second go.
perf_once_more() {
	local before=$fail
	perf_why=
	perf_case "$@"
	[ "$fail" -gt "$before" ] && [ -n "$perf_why" ] &&
		[ -z "${VERBS_NO_RETRY:-}" ] || return 0
	fail=$before
	retried=$((retried + 1))
	echo "   $1: once more ($perf_why; a second failure counts)"
	perf_case "$@"
}
for dev in siw0 rxe0; do
	if [ $dev = siw0 ]; then a1=$siw_ip a2=$siw_ip2; else a1=$rxe_ip a2=$rxe_ip2; fi
	for t in write_bw read_bw; do
		perf_once_more "perf-$t-client-$dev" $dev $t theirs "$a2"
		perf_once_more "perf-$t-server-$dev" $dev $t ours "$a1"
	done
done

# Immediate data across the bridge (tests/interop/it-imm, hostrdma's
# it_ext.h): RDMA Writes and Sends with immediate data between rxe0 in
# guest 1 (the kernel's rxe builds and parses the ImmDt header, the verbs
# provider maps its network-order value) and our soft rxe on the host,
# both roles; the server checks each value, kind, length and the bytes.
gimm_env() {
	echo "LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=rxe0 $prefix/bin/it-imm -d rxe0"
}
iti=$build/tests/interop/it-imm
host_imm() { # it-imm's arguments, on the host's soft rxe
	"$rp" ns env HOSTRDMA_PROVIDER_PATH="$build/vp/rxe/.libs" \
		HOSTRDMA_CONF= HOSTRDMA_DEVICES=rxe_rdmabr0 \
		timeout 120 "$iti" -d rxe_rdmabr0 "$@"
}
imm_kill() {
	"$rp" run -g 1 'killall it-imm' >/dev/null 2>&1
}
if want imm-bridge-rxe0-guest-server; then
	name=imm-bridge-rxe0-guest-server st=0
	imm_kill
	gbg 1 "$(gimm_env) -s -a $rxe_ip -C 10 -S 1024" || st=1
	"$rp" run -g 1 wait-listen 7177 20 >/dev/null || st=1
	host_imm -c -a "$rxe_ip" -C 10 -S 1024 >"$work/$name.host" 2>&1 ||
		st=1
	gwait 1 "$work/$name.guest" || st=1
	grep -q "10 RDMA Writes and 10 Sends of 1024 bytes with immediate data checked" \
		"$work/$name.guest" || st=1
	grep -q "the server checked them" "$work/$name.host" || st=1
	result $name $st
fi
if want imm-bridge-rxe0-host-server && [ -n "$host_rxe_ip" ]; then
	name=imm-bridge-rxe0-host-server st=0
	imm_kill
	host_serves $name "$(gimm_env) -c -a $host_rxe_ip -C 10 -S 1024" \
		host_imm -s -a "$host_rxe_ip" -C 10 -S 1024 || st=1
	grep -q "10 RDMA Writes and 10 Sends of 1024 bytes with immediate data checked" \
		"$work/$name.host" || st=1
	grep -q "the server checked them" "$work/$name.guest" || st=1
	result $name $st
fi

# The pure IT-API suites through hostrdma-conformance in guest 1, both
# ends of each connection on the one device at its own address (the
# runner's checks, then itapi-cm on siw0, itapi-cm-rxe,
# itapi-atomic-rxe and itapi-ud-rxe's datagram and SIDR cases on rxe0,
# and on both the pure IT-API cases of itapi-ep, itapi-post, itapi-evd
# and itapi-mem, test case "device"). Every planned check must say "ok"
# but the ones listed below, which fail on a verbs device for the reason
# given (measured in the lab; they are printed, not counted):
#  - a check of hostrdma's own connection manager, which a verbs device
#    does not use: its TCP listener running out of descriptors
#    (listener_out_of_descriptors: the kernel's iw_cm listens, with no
#    descriptor of ours);
#  - what a verbs device refuses, as hostrdma-verbs(7) says: the
#    three-way handshake, IT_IANA_LR_PORT (listen_lr_port,
#    local_and_remote_port), service IDs outside rdma_cm's TCP port space
#    (handoff_service_id), it_socket_convert (socket_convert_*), private
#    data on disconnect (disconnect_private_data);
#  - rdma_cm's own behaviour: an abortive close reaches the peer as the
#    same DISCONNECTED event as an orderly one, with no status (iWARP:
#    iw_cm's CLOSE; IB: rdma_cm sends a DREQ for both, having no REJ for
#    an established connection), so IT-API sees DISCONNECT, not BROKEN
#    (disconnect_abortive, ep_hi_watermarks); the IB CM's REQ carries a
#    private data field always, so a request without any shows it present
#    (reject_with_private_data);
#  - the kernel's rxe checks an access through a memory window against
#    the region under it (check_rkey: mr_check_range), not the window's
#    own bounds, so a Write past a window's end but inside its region
#    lands (test_rmr_window_bounds);
#  - a Send with Invalidate naming a plain region's key: the kernel's siw
#    and rxe invalidate only what may be invalidated remotely (windows,
#    fast-registered regions) and complete the Send with a remote error
#    (send_with_invalidate; our soft providers deliver it);
#  - the kernel's siw (6.1): served an RDMA Read from a region registered
#    without remote read rights (rdma_read: the Read completed); refused
#    a Read posted with IBV_SEND_FENCE at ibv_post_send, EPERM
#    (unlink_fence_flag: IT_UNLINK_FENCE_FLAG is ibverbs' fence); completes
#    a Write posted behind a 1 MiB Read before the Read, out of posting
#    order (posting_order: the library's warning "completion ... names no
#    outstanding request", IT_ASYNC_AFF_EP_FAILURE);
#  - SIDR outside rdma_cm's UDP port space: a verbs device resolves UD
#    services through rdma_cm (the kernel owns QP1), which knows only
#    its port space (0x0111 << 16 | port) and answers with its own Q_Key
#    0x01234567: service IDs such as 0x1234abcd and a reply naming Q_Key
#    0x22223333 are refused (sidr_then_datagram,
#    sidr_rejected_and_unknown; hostrdma-verbs(7)); sidr_port_space, the
#    same through the port space, runs and must pass.
conf_allow_siw0="listener_out_of_descriptors listen_lr_port
	local_and_remote_port socket_convert_both
	socket_convert_initiator_alone socket_convert_responder_alone
	socket_convert_errors socket_convert_no_req_rep
	socket_convert_no_req_rep_wire socket_convert_timeout_state
	disconnect_abortive ep_hi_watermarks send_with_invalidate rdma_read
	unlink_fence_flag posting_order"
conf_allow_rxe0="three_way_accept three_way_reject three_way_unanswered
	listen_lr_port handoff_service_id disconnect_private_data
	disconnect_abortive ep_hi_watermarks reject_with_private_data
	test_rmr_window_bounds send_with_invalidate
	sidr_then_datagram sidr_rejected_and_unknown"
conf_case() { # device, its address, the cases that may fail, ok at least
	local name=conformance-$1 st=0 f planned okn c allowed=0
	want "$name" || return 0
	f=$work/$name.guest
	"$rp" run -t "${VERBS_CONF_TIMEOUT:-1500}" "LD_LIBRARY_PATH=$prefix/lib HOSTRDMA_DEVICES=$1 $prefix/bin/hostrdma-conformance -d $1 -a $2" \
		>"$f" 2>&1
	planned=$(sed -n 's/^1\.\.//p' "$f")
	okn=$(grep -c '^ok ' "$f")
	[ -n "$planned" ] && [ "$okn" -ge "$4" ] || st=1
	for c in $(sed -n 's/^not ok [0-9]* - [^:]*:[^:]*:\([^:]*\):.*/\1/p' "$f"); do
		case " $(echo $3) " in
		*" $c "*) allowed=$((allowed + 1)) ;;
		*) echo "   $name: $c failed"; st=1 ;;
		esac
	done
	# every planned check reported
	[ $((okn + $(grep -c '^not ok ' "$f"))) = "${planned:-x}" ] || st=1
	echo "   $name: $okn of ${planned:-?} ok, $allowed known to fail on a verbs device"
	result "$name" $st
}
conf_case siw0 "$siw_ip" "$conf_allow_siw0" 49
conf_case rxe0 "$rxe_ip" "$conf_allow_rxe0" 49

# A second ibverbs device on eth0 (a soft-RoCE rxe1 beside siw0): the
# core makes one device per provider and interface, so one of the two is
# listed and the other is named in one log line, not dropped in silence.
want shadowed && {
st=0
f=$work/shadowed.guest
"$rp" run 'rdma link add rxe1 type rxe netdev eth0' >"$f" 2>&1 || st=1
hr "$prefix/bin/hostrdma-info -l" >>"$f" 2>&1 || st=1
n=$(grep -Ec '^(siw0|rxe1)[[:space:]]' "$f")
[ "$n" = 1 ] || st=1
grep -Eq 'verbs: (siw0|rxe1) is on eth0 too, which carries (siw0|rxe1) already' \
	"$f" || st=1
result shadowed $st
}

echo "$pass passed, $fail failed$([ "$retried" -gt 0 ] && echo " ($retried retried)")"
[ "$fail" -eq 0 ]
