#!/bin/sh
# SPDX-License-Identifier: MIT
# check-provider-kit.sh - run by `make check` from the build directory: what
# a vendor gets from `make install` is enough to write a provider.
#  1. `make install DESTDIR=<stage>`; the staged hostrdma-rnicpi.pc is
#     pointed at the stage (prefix= rewritten), as a relocated install.
#  2. <hostrdma/rnicpi.h> and <hostrdma/rnicpi_util.h> compile on their
#     own, -Werror, with only `pkg-config --cflags hostrdma-rnicpi`.
#  3. examples/skeleton-provider builds out of the tree with its own
#     Makefile against the stage (headers and libhostrdma-rnicpi-util.a)
#     and exports nothing but rnicpi_provider_entry.
#  4. tools/hostrdma-info -l, with HOSTRDMA_PROVIDER_PATH at the skeleton,
#     lists skel_lo, and hostrdma-info -d skel_lo opens and queries it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir="$here/.."
builddir=$(pwd)
MAKE=${MAKE:-make}
CC=${CC:-cc}

command -v pkg-config >/dev/null 2>&1 ||
	{ echo "SKIP: pkg-config is not installed"; exit 77; }
stage=$(mktemp -d "${TMPDIR:-/tmp}/hostrdma-kit-XXXXXX") || exit 99
trap 'rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. Install into the stage.
$MAKE -s -C "$builddir" install DESTDIR="$stage/root" >"$stage/install.log" 2>&1 ||
	{ cat "$stage/install.log"; fail "make install DESTDIR failed"; }
pc=$(find "$stage/root" -name hostrdma-rnicpi.pc | head -n 1)
[ -n "$pc" ] || fail "hostrdma-rnicpi.pc not installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$stage/root$prefix|" "$pc"
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags hostrdma-rnicpi) || fail "pkg-config --cflags"
echo "pkg-config --cflags hostrdma-rnicpi: $cflags"
for h in rnicpi.h rnicpi_util.h; do
	[ -f "$stage/root$prefix/include/hostrdma/$h" ] ||
		fail "$h not installed under include/hostrdma"
done
ls "$stage/root$prefix"/lib*/libhostrdma-rnicpi-util.a >/dev/null 2>&1 ||
	fail "libhostrdma-rnicpi-util.a not installed"

# 2. The installed headers alone.
for h in rnicpi.h rnicpi_util.h; do
	printf '#include <hostrdma/%s>\nint main(void) { return 0; }\n' "$h" \
		>"$stage/h.c"
	$CC -std=gnu11 -Wall -Wextra -Werror $cflags -c "$stage/h.c" \
		-o "$stage/h.o" || fail "<hostrdma/$h> does not compile alone"
done

# 3. The skeleton, out of the tree, with its own Makefile.
cp -r "$top_srcdir/examples/skeleton-provider" "$stage/skel" || exit 99
chmod -R u+w "$stage/skel"
$MAKE -C "$stage/skel" clean all CFLAGS="-O2 -g -Werror" ||
	fail "the skeleton provider does not build against the stage"
exports=$(nm -D --defined-only "$stage/skel/skel.so" | awk '$2 == "T" { print $3 }')
[ "$exports" = rnicpi_provider_entry ] ||
	fail "skel.so exports more than its entry point: $exports"
$MAKE -C "$stage/skel" install DESTDIR="$stage/inst" PROVIDERDIR=/providers \
	>/dev/null || fail "the skeleton's make install"
[ -x "$stage/inst/providers/skel.so" ] || fail "skel.so not installed"

# 4. The core loads it and lists its device.
HOSTRDMA_PROVIDER_PATH="$stage/inst/providers"
HOSTRDMA_DEVICES=skel_lo
export HOSTRDMA_PROVIDER_PATH HOSTRDMA_DEVICES
unset HOSTRDMA_CONF HOSTRDMA_OPTIONS
list=$("$builddir/tools/hostrdma-info" -l 2>"$stage/err") ||
	{ cat "$stage/err"; fail "hostrdma-info -l failed"; }
echo "hostrdma-info -l: $list"
echo "$list" | awk '$1 == "skel_lo" { f = 1 } END { exit !f }' ||
	{ cat "$stage/err"; fail "skel_lo not listed"; }
"$builddir/tools/hostrdma-info" -d skel_lo >"$stage/info" 2>&1 ||
	{ cat "$stage/info"; fail "hostrdma-info -d skel_lo failed"; }
echo "PASS: the skeleton provider builds out of tree and skel_lo is listed"
