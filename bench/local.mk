# bench/: the benchmark against raw TCP, libfabric tcp and UCX tcp
# (bench/run, docs/PERFORMANCE.md); not part of make check. udp-ceiling is
# its UDP baseline for soft-RoCE's bulk rows, built with the tree and not
# installed.
noinst_PROGRAMS += bench/udp-ceiling
bench_udp_ceiling_SOURCES = bench/udp_ceiling.c
EXTRA_DIST += bench/run bench/paired bench/report.py bench/lib.sh \
	bench/fabtests.sh
