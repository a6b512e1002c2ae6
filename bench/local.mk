# bench/: the benchmark against raw TCP, libfabric tcp and UCX tcp
# (bench/run, docs/PERFORMANCE.md); not part of make check. udp-ceiling is
# its UDP baseline for soft-RoCE's bulk rows, built with the tree and not
# installed.
noinst_PROGRAMS += bench/udp-ceiling bench/core-distance bench/tcp-fpdu
bench_udp_ceiling_SOURCES = bench/udp_ceiling.c bench/bench_util.h
# --icrc: soft-RoCE's own CRC (vp/rxe/librxe_icrc.la is built whatever
# the provider's configuration).
bench_udp_ceiling_LDADD = vp/rxe/librxe_icrc.la
# core-distance: how far apart the two CPUs are (bench/paired tags each
# round with it: a virtual machine's vCPUs move between near and far).
bench_core_distance_SOURCES = bench/core_distance.c
bench_core_distance_LDADD = $(PTHREAD_LIBS)
# tcp-fpdu: TCP in soft-iWARP's 64 KiB frames, each payload read into
# place, no transport (bench/paired's siw-cpu rounds).
bench_tcp_fpdu_SOURCES = bench/tcp_fpdu.c bench/bench_util.h
bench_tcp_fpdu_LDADD = $(PTHREAD_LIBS)
EXTRA_DIST += bench/run bench/paired bench/report.py bench/lib.sh \
	bench/fabtests.sh
