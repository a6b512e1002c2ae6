#!/bin/sh
# An installed hostrdma used the way hostrdma.pc and it_api(3) say: install
# into a DESTDIR, then compile and link a program against it with
# pkg-config, against the shared library and statically against
# libhostrdma.a (pkg-config --static), and run both: each finds the
# providers in `pkg-config --variable=providerdir hostrdma`. Also checks
# that what the man pages cite is installed (docs under $(docdir)), that
# the examples' sources are there too and build as they say, that every
# IT-API function has a man page (a page or a .so link) and that the pages
# format without groff warnings.
#
# Run by make check from the top build directory through tests/check-install,
# which sets CC, PKG_CONFIG, MAKE, PROVIDER_LAS (the loadable providers'
# .la files), CORE_LIBADD (libhostrdma's convenience libraries) and srcdir.
set -eu

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

top=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostrdma-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
dest=$tmp/dest

# make install from inside make check: a make of its own, not a job of the
# caller's jobserver.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $MAKE -s install DESTDIR="$dest" \
	>"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log" >&2
	fail "make install DESTDIR=$dest"
}

pc=$(find "$dest" -name hostrdma.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || fail "no hostrdma.pc installed"
# The installed .pc names the final paths; point its absolute ones into
# DESTDIR (the rest are relative to prefix or libdir).
mkdir -p "$tmp/pc"
sed -E "s|^(prefix\|exec_prefix\|libdir\|includedir)=/|\1=$dest/|" "$pc" \
	>"$tmp/pc/hostrdma.pc"
PKG_CONFIG_PATH=$tmp/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
pcq() {
	$PKG_CONFIG "$@" hostrdma
}

libdir=$(pcq --variable=libdir)
providerdir=$(pcq --variable=providerdir)
[ -f "$libdir/libhostrdma.so" ] || fail "libhostrdma.so not in libdir $libdir"
case $providerdir in
"$libdir"/*) ;;
*) fail "providerdir $providerdir is not under libdir $libdir" ;;
esac
# The path the library itself searches (HOSTRDMA_PROVIDER_DIR) is the
# installed one: the strings of libhostrdma.so hold it.
want=${providerdir#"$dest"}
grep -qaF "$want" "$libdir/libhostrdma.so" ||
	fail "libhostrdma.so does not search providerdir $want"
nprov=0
for la in $PROVIDER_LAS; do
	name=$(basename "$la" .la)
	[ -f "$providerdir/$name.so" ] ||
		fail "provider $name.so not in providerdir $providerdir"
	nprov=$((nprov + 1))
done
echo "providerdir $want holds $nprov provider(s)"

cat >"$tmp/x.c" <<'EOS'
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <stdio.h>

int main(void)
{
	it_interface_t ifs[64];
	size_t n = 64, i;
	it_ia_handle_t ia;
	it_status_t st;

	it_interface_list(ifs, &n, NULL);
	for (i = 0; i < n && i < 64; i++)
		printf("%s\n", ifs[i].name);
	if (n == 0)
		return 2;
	st = it_ia_create(ifs[0].name, 2, 1, &ia);
	if (st != IT_SUCCESS) {
		fprintf(stderr, "it_ia_create %s: %d\n", ifs[0].name, st);
		return 3;
	}
	return it_ia_free(ia) == IT_SUCCESS ? 0 : 4;
}
EOS

# The programs run with the installed providers only. When soft-iWARP is
# one, with it alone: soft-RoCE takes UDP port 4791 for the process, which
# the test suite running next to this test (make -j check) may need.
rundir=$providerdir
if [ -f "$providerdir/siw.so" ]; then
	rundir=$tmp/providers
	mkdir -p "$rundir"
	ln -s "$providerdir/siw.so" "$rundir/siw.so"
fi
run() {
	# A build without loadable providers may have no device here (exit 2).
	rc=0
	env LD_LIBRARY_PATH="$libdir" HOSTRDMA_PROVIDER_PATH="$rundir" \
		"$@" >"$tmp/run.out" 2>&1 || rc=$?
	if [ $rc -ne 0 ] && ! { [ $rc -eq 2 ] && [ "$nprov" -eq 0 ]; }; then
		cat "$tmp/run.out" >&2
		fail "$* exited $rc"
	fi
}

# Dynamic.
$CC -o "$tmp/x-dyn" "$tmp/x.c" $(pcq --cflags --libs) ||
	fail "dynamic link with pkg-config --cflags --libs hostrdma"
run "$tmp/x-dyn"
echo "dynamic: $(tr '\n' ' ' <"$tmp/run.out")"

# The extensions' header and functions (it_ext(3)), as a program includes
# and links them: a live IA answers hostrdma_ia_imm_data_size, a bad
# handle gets 0, a NULL event no immediate data.
cat >"$tmp/ext.c" <<'EOS'
#include <hostrdma/it_ext.h>
int main(void)
{
	return hostrdma_ia_imm_data_size(NULL) == 0 &&
	       hostrdma_event_imm_data(NULL, NULL) == HOSTRDMA_IMM_NONE &&
	       HOSTRDMA_IT_EXT == 1 ? 0 : 1;
}
EOS
$CC -o "$tmp/ext" "$tmp/ext.c" $(pcq --cflags --libs) ||
	fail "#include <hostrdma/it_ext.h> with pkg-config --cflags --libs hostrdma"
run "$tmp/ext"
for f in hostrdma_ia_imm_data_size hostrdma_post_send_imm \
	hostrdma_post_sendto_imm hostrdma_post_rdma_write_imm \
	hostrdma_event_imm_data; do
	nm -D "$libdir/libhostrdma.so" | grep -q " T $f@@" ||
		fail "libhostrdma.so does not export $f"
done
echo "it_ext.h: builds, links, runs"

# Static: the installed libhostrdma.a when configure had --enable-static;
# otherwise the same objects (libhostrdma's convenience libraries, as
# libtool would archive them) in a stand-in archive. The link line is the
# one a user writes: pkg-config --static with only the archive in libdir.
mkdir -p "$tmp/static/lib" "$tmp/static/pc"
if [ -f "$libdir/libhostrdma.a" ]; then
	cp "$libdir/libhostrdma.a" "$tmp/static/lib/"
	what="installed libhostrdma.a"
else
	{
		echo "create $tmp/static/lib/libhostrdma.a"
		for la in $CORE_LIBADD; do
			case $la in
			*.la)
				echo "addlib $top/$(dirname "$la")/.libs/$(basename "$la" .la).a"
				;;
			esac
		done
		echo save
		echo end
	} | ar -M || fail "building the stand-in libhostrdma.a"
	what="libhostrdma.a made from the build's archives (configure --enable-static installs it)"
fi
sed -E "s|^libdir=.*|libdir=$tmp/static/lib|" "$tmp/pc/hostrdma.pc" \
	>"$tmp/static/pc/hostrdma.pc"
PKG_CONFIG_PATH=$tmp/static/pc:$PKG_CONFIG_PATH \
	$CC -o "$tmp/x-static" "$tmp/x.c" \
	$(PKG_CONFIG_PATH=$tmp/static/pc:$PKG_CONFIG_PATH \
		$PKG_CONFIG --static --cflags --libs hostrdma) ||
	fail "static link with pkg-config --static --libs hostrdma ($what)"
if readelf -d "$tmp/x-static" | grep -q 'NEEDED.*libhostrdma'; then
	fail "the static program still needs libhostrdma.so"
fi
run "$tmp/x-static"
echo "static ($what): $(tr '\n' ' ' <"$tmp/run.out")"

# The documents the man pages cite, under $(docdir).
docdir=$(find "$dest" -type d -path '*/share/doc/hostrdma' | head -n 1)
[ -n "$docdir" ] || fail "no share/doc/hostrdma installed"
for f in README.md $(cd "$srcdir/docs" && ls *.md); do
	case $f in
	README.md) [ -f "$docdir/$f" ] || fail "$docdir/$f not installed" ;;
	*) [ -f "$docdir/docs/$f" ] || fail "$docdir/docs/$f not installed" ;;
	esac
done
# The examples' sources under $(docdir)/examples (examples/local.mk), and
# each program there builds against the installed hostrdma with the
# pkg-config line its opening comment gives.
for f in $(cd "$srcdir/examples" && ls *.c) \
	$(cd "$srcdir/examples" && ls skeleton-provider/*.c) \
	skeleton-provider/Makefile; do
	[ -f "$docdir/examples/$f" ] || fail "$docdir/examples/$f not installed"
done
nex=0
for f in "$docdir"/examples/*.c; do
	$CC -o "$tmp/example" "$f" $(pcq --cflags --libs) ||
		fail "the installed $f does not build with pkg-config hostrdma"
	nex=$((nex + 1))
done
[ "$nex" -ge 2 ] || fail "only $nex example programs in $docdir/examples"
echo "$nex examples in $docdir/examples, each builds"

mandir=$(find "$dest" -type d -path '*/share/man' | head -n 1)
[ -n "$mandir" ] || fail "no man pages installed"
# A man page cites docs/X.md (installed as $(docdir)/docs/X.md).
for cite in $(grep -ho 'docs/[A-Za-z0-9_-]*\.md' "$mandir"/man*/* | sort -u); do
	[ -f "$docdir/$cite" ] ||
		fail "a man page cites $cite, not installed in $docdir"
done

# Every function it_api.h declares has an installed man page (a page or a
# .so link), so that `man it_FUNCTION` works.
funcs=$(sed -n 's/^[a-z_0-9]*[ *]\{1,\}\(it_[a-z_0-9]*\)(.*/\1/p' \
	"$srcdir/it_api.h"; sed -n 's/^#define \(it_[a-z_0-9]*\) it_.*/\1/p' \
	"$srcdir/it_api.h")
n=0
for f in $funcs; do
	[ -f "$mandir/man3/$f.3" ] || fail "no man page for $f (man/$f.3)"
	n=$((n + 1))
done
[ "$n" -ge 80 ] || fail "found only $n functions in it_api.h"
for f in $(sed -n 's/^[a-z_0-9]*[ *]\{1,\}\(hostrdma_[a-z_0-9]*\)(.*/\1/p' \
	"$srcdir/it_ext.h"); do
	[ -f "$mandir/man3/$f.3" ] || fail "no man page for $f (man/$f.3)"
	n=$((n + 1))
done
echo "$n IT-API and extension functions, each with a man page"

# A link leads to a page, and it_api(3) names every family page.
for f in "$mandir"/man3/it_*.3; do
	so=$(sed -n 's/^\.so //p' "$f")
	if [ -n "$so" ]; then
		[ -f "$mandir/$so" ] || fail "$f links to $so, not installed"
	elif [ "$(basename "$f")" != it_api.3 ]; then
		grep -q "^\.BR $(basename "$f" .3) (3)" "$mandir/man3/it_api.3" ||
			fail "it_api(3) does not name $(basename "$f" .3)(3)"
	fi
done

# The constants the pages set in bold are it_api.h's (no typo'd names).
hdr=$(pcq --variable=includedir)/it_api.h
[ -f "$hdr" ] || fail "it_api.h not installed in $(dirname "$hdr")"
for t in $(grep -h '^\.\(B\|BR\|RB\) ' "$mandir"/man3/it_*.3 |
	sed 's/IT_[A-Z0-9_]*_\*//g' | grep -o '\<IT_[A-Z0-9_]*[A-Z0-9]' |
	sort -u); do
	grep -qw "$t" "$hdr" || fail "a man page names $t, which it_api.h lacks"
done

# Every installed page formats without a warning (groff -ww).
if command -v groff >/dev/null 2>&1; then
	for f in "$mandir"/man*/*; do
		out=$(cd "$mandir" && LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z \
			"${f#"$mandir"/}" 2>&1) || fail "groff failed on $f"
		[ -z "$out" ] || fail "groff warns on $f: $out"
	done
	echo "man pages format without warnings"
else
	echo "groff not found: man page warnings not checked"
fi
echo PASS
