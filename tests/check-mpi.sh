#!/bin/bash
# SPDX-License-Identifier: MIT
# check-mpi.sh - Open MPI over the hostrdma libfabric provider: two ranks
# in two network namespaces this script creates (a veth pair between
# them, 10.77.16.1 and .2), launched by mpirun itself, run a ping-pong,
# an allreduce and a one-sided (MPI_Put/MPI_Get) program
# (tests/mpi/*.c), each checking its data, over soft-iWARP and then over
# soft-RoCE (each namespace has its own rxe device on its veth, and its
# own UDP port 4791).
#
# MPI traffic goes through pml cm + mtl ofi, with FI_PROVIDER=hostrdma
# leaving libfabric no other core provider (RDM endpoints from ofi_rxm
# over hostrdma's MSG endpoints) and mtl_ofi_provider_include=hostrdma;
# Open MPI's shared-memory and TCP paths are off (btl self only, one-sided
# through osc pt2pt over the same pml), so nothing else can carry it.
# The script checks that mtl ofi on both ranks names the veth's hostrdma
# device (siw_hrmpi0, rxe_hrmpi0) as the fabric it picked.
#
# mpirun runs in the first namespace (rank 0 beside it); it starts its
# daemon in the second through a launch agent that does what ssh would
# do on a real host: `ip netns exec NS sh -c CMD`. Across real hosts the
# same mpirun command runs with --host hostA,hostB and ssh (README).
# --bind-to none: both "hosts" are this machine, and Open MPI's default
# binding would put both ranks, busy polling, on core 0 (6 ms round
# trips instead of 20 us).
#
# Skips (77), saying why, without mpicc/mpirun, without root (network
# namespaces) or without the provider.
here=$(cd "$(dirname "$0")" && pwd)
build=${HOSTRDMA_BUILDDIR:-$(pwd)}
skip() { echo "SKIP: check-mpi: $*"; exit 77; }
for t in mpicc mpirun ip; do
	command -v $t >/dev/null 2>&1 ||
		skip "$t not found (apt-get install openmpi-bin libopenmpi-dev)"
done
[ -e "$build/fi/.libs/libhostrdma-fi.so" ] ||
	skip "no $build/fi/.libs/libhostrdma-fi.so"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"

tmp=$(mktemp -d)
nsa=hrmpi$$a nsb=hrmpi$$b
cleanup() {
	ip netns del $nsa 2>/dev/null
	ip netns del $nsb 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: check-mpi: $*"
	for f in "$tmp"/*.out; do [ -e "$f" ] && { echo "--- $f"; cat "$f"; }; done
	exit 1
}

ip netns add $nsa && ip netns add $nsb || skip "cannot create network namespaces"
ip link add hrmpi0 netns $nsa type veth peer name hrmpi0 netns $nsb ||
	fail "cannot create the veth pair"
ip -n $nsa addr add 10.77.16.1/24 dev hrmpi0
ip -n $nsb addr add 10.77.16.2/24 dev hrmpi0
for ns in $nsa $nsb; do
	ip -n $ns link set lo up
	ip -n $ns link set hrmpi0 up
done

# A device appears once its interface is up with carrier and an address:
# wait for the veth's in both namespaces.
for ns in $nsa $nsb; do
	n=0
	until ip netns exec $ns env HOSTRDMA_PROVIDER_PATH="$build/vp/siw/.libs" \
		"$build/tools/hostrdma-info" -l 2>/dev/null | grep -q '^siw_hrmpi0 '; do
		n=$((n + 1))
		[ $n -lt 50 ] || fail "no siw_hrmpi0 in $ns"
		sleep 0.2
	done
done

for p in pingpong allreduce onesided; do
	mpicc -O2 -Wall -o "$tmp/mpi_$p" "$here/mpi/mpi_$p.c" ||
		fail "mpicc mpi_$p.c"
done

# The launch agent: mpirun calls it as `agent HOST COMMAND...`, as it
# would call ssh; HOST is an address, mapped to its namespace.
cat >"$tmp/agent" <<AGENT
#!/bin/sh
case "\$1" in
10.77.16.1) ns=$nsa ;;
10.77.16.2) ns=$nsb ;;
*) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec \$ns /bin/sh -c "\$*"
AGENT
chmod +x "$tmp/agent"

export FI_PROVIDER_PATH="$build/fi/.libs"
export HOSTRDMA_CONF= HOSTRDMA_KALD_SOCKET=
# Only our provider among the core providers (no tcp, no shm); ofi_rxm
# still layers on it.
export FI_PROVIDER=hostrdma
# rxm's buffer pools under an 8 MiB RLIMIT_MEMLOCK.
export FI_OFI_RXM_BUFFER_SIZE=1024
export OMPI_MCA_plm_rsh_agent="$tmp/agent"
export OMPI_MCA_oob_tcp_if_include=hrmpi0
export OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_btl=self
export OMPI_MCA_mtl_ofi_provider_include=hostrdma
export OMPI_MCA_mtl_base_verbose=10
export OMPI_MCA_osc=pt2pt

for dev in siw rxe; do
	# soft-iWARP alone with no device named: each rank must take the
	# veth's siw_hrmpi0 before siw_lo (the provider lists loopback
	# last), as on a real host. soft-RoCE: the device named.
	export HOSTRDMA_PROVIDER_PATH="$build/vp/$dev/.libs"
	if [ $dev = siw ]; then
		unset HOSTRDMA_DEVICES
	else
		export HOSTRDMA_DEVICES=rxe_hrmpi0
	fi
	for p in pingpong allreduce onesided; do
		out="$tmp/$dev-$p.out"
		timeout 120 ip netns exec $nsa mpirun --allow-run-as-root \
			-np 2 --host 10.77.16.1:1,10.77.16.2:1 --bind-to none \
			-x FI_PROVIDER_PATH -x HOSTRDMA_PROVIDER_PATH \
			-x HOSTRDMA_CONF -x HOSTRDMA_KALD_SOCKET \
			${HOSTRDMA_DEVICES:+-x HOSTRDMA_DEVICES} -x FI_PROVIDER \
			-x FI_OFI_RXM_BUFFER_SIZE \
			"$tmp/mpi_$p" >"$out" 2>&1 ||
			fail "mpi_$p over ${dev}_hrmpi0"
		grep -q "mpi_$p: OK" "$out" || fail "mpi_$p: no OK"
		# mtl ofi names the fabric it picked: our device, on both ranks.
		[ "$(grep -c "mtl:ofi:provider: ${dev}_hrmpi0\$" "$out")" = 2 ] ||
			fail "mpi_$p: mtl ofi did not pick ${dev}_hrmpi0"
		grep "^mpi_$p" "$out" | sed "s/^/${dev}_hrmpi0: /"
	done
done
# The control: with hostrdma offering no device, the same job must fail,
# as nothing else may carry it.
export HOSTRDMA_PROVIDER_PATH="$build/vp/siw/.libs" HOSTRDMA_DEVICES=siw_none
out="$tmp/no-device.out"
if timeout 120 ip netns exec $nsa mpirun --allow-run-as-root \
	-np 2 --host 10.77.16.1:1,10.77.16.2:1 --bind-to none \
	-x FI_PROVIDER_PATH -x HOSTRDMA_PROVIDER_PATH -x HOSTRDMA_CONF \
	-x HOSTRDMA_KALD_SOCKET -x HOSTRDMA_DEVICES -x FI_PROVIDER \
	-x FI_OFI_RXM_BUFFER_SIZE "$tmp/mpi_pingpong" >"$out" 2>&1; then
	fail "mpi_pingpong ran with no hostrdma device: something else carried it"
fi
grep -q "PML cm cannot be selected" "$out" ||
	fail "with no hostrdma device, mpirun failed for another reason"
echo "no hostrdma device: mpirun fails as it should"
echo "PASS: check-mpi"
