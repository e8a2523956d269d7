#!/bin/sh
# test_oot_plugins.sh - the plugin author's path, end to end, against a
# staged install: `make install DESTDIR=...`, the SDK examples
# (plugins/leaky_relu, plugins/cube) built with their plain Makefiles (cc
# and pkg-config only, no libpopc), loaded through POPC_PLUGIN_PATH, and
# used for training and inference by a program compiled against the
# staged headers and libpopc (tests/oot_plugins.c, which also checks the
# gradients by finite differences); then the installed Python package
# (tests/python/installed.py).
#
# Run by `make check` from the build tree (POPC_BUILDDIR, POPC_SRCDIR,
# POPC_CC and POPC_MAKE come from tests/local.mk and tests/extend.mk).
set -eu

builddir=${POPC_BUILDDIR:?run this through make check}
srcdir=${POPC_SRCDIR:?run this through make check}
cc=${POPC_CC:-cc}
mk=${POPC_MAKE:-make}
# the build's own flags for the program (a sanitizer build needs its
# runtime linked first); the plugins are built as an author builds them
test_cflags=${POPC_TEST_CFLAGS:-}
test_ldflags=${POPC_TEST_LDFLAGS:-}

if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP: pkg-config is not installed"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-oot-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
    echo "FAIL: $*"
    exit 1
}

# 1. The install, staged.
echo "== make install DESTDIR=$tmp/stage"
if ! $mk -C "$builddir" install DESTDIR="$tmp/stage" >"$tmp/install.log" 2>&1
then
    tail -n 30 "$tmp/install.log"
    fail "make install DESTDIR=$tmp/stage"
fi
pc=$(find "$tmp/stage" -name popc.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "the staged install has no popc.pc"

# pkg-config reads the staged popc.pc; --define-prefix makes its paths
# point into the staged tree instead of the final prefix.
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
PKG_CONFIG="pkg-config --define-prefix"
opsdir=$($PKG_CONFIG --variable=opsdir popc)
plugindir=$($PKG_CONFIG --variable=plugindir popc)
libdir=$($PKG_CONFIG --variable=libdir popc)
includedir=$($PKG_CONFIG --variable=includedir popc)
case $opsdir in
"$tmp"/stage/*) ;;
*) fail "pkg-config --variable=opsdir gives $opsdir, outside the stage" ;;
esac
[ -f "$includedir/popc/plugin.h" ] || fail "no staged popc/plugin.h"
[ -f "$includedir/popc/custom.h" ] || fail "no staged popc/custom.h"
[ -d "$opsdir" ] || fail "no staged ops directory $opsdir"

# 2. The plugins, built as their author builds them: a copy of each
#    installed example directory ($(docdir)/plugins/NAME) with its own
#    Makefile.
mkdir -p "$tmp/src" "$tmp/myplugins"
for p in leaky_relu cube; do
    echo "== building plugins/$p with cc + pkg-config"
    ex=$(find "$tmp/stage" -type d -path "*/doc/popc/plugins/$p" | head -n 1)
    [ -n "$ex" ] && [ -f "$ex/Makefile" ] ||
        fail "the staged install has no example plugins/$p"
    cp -R "$ex" "$tmp/src/$p"
    chmod -R u+w "$tmp/src/$p"
    rm -f "$tmp/src/$p/$p.so"
    $mk -s -C "$tmp/src/$p" CC="$cc" PKG_CONFIG="$PKG_CONFIG" \
        CFLAGS="-O2 -g -Werror" ||
        fail "building plugins/$p"
    $mk -s -C "$tmp/src/$p" CC="$cc" PKG_CONFIG="$PKG_CONFIG" \
        install OPSDIR="$tmp/myplugins" ||
        fail "make install OPSDIR=... for plugins/$p"
    [ -f "$tmp/myplugins/$p.so" ] || fail "$p.so was not installed"
    if command -v ldd >/dev/null 2>&1 &&
        ldd "$tmp/myplugins/$p.so" | grep -q libpopc; then
        fail "$p.so links libpopc; plugins must only use the host table"
    fi
    # the plain `make install` goes to the staged ops directory
    $mk -s -C "$tmp/src/$p" CC="$cc" PKG_CONFIG="$PKG_CONFIG" install ||
        fail "make install for plugins/$p"
    [ -f "$opsdir/$p.so" ] || fail "$p.so is not in $opsdir"
    rm -f "$opsdir/$p.so"
done

# 3. The author's program against the staged headers and libpopc.
echo "== compiling tests/oot_plugins.c against the staged install"
# shellcheck disable=SC2046
$cc -std=c11 -O1 -g $test_cflags -Wall -Wextra -Werror \
    $($PKG_CONFIG --cflags popc) -I"$srcdir" -I"$builddir" \
    -o "$tmp/oot_plugins" "$srcdir/tests/oot_plugins.c" \
    "$srcdir/tests/harness/fd_check.c" \
    $test_ldflags $($PKG_CONFIG --libs popc) -lm ||
    fail "compiling tests/oot_plugins.c"

# 4. Run it: the staged plugins (ops, optimizers, backends) and the
#    author's directory, nothing from the build tree.
echo "== running with POPC_PLUGIN_PATH=$plugindir:$tmp/myplugins"
POPC_PLUGIN_PATH="$plugindir:$tmp/myplugins" \
    LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tmp/oot_plugins" || fail "tests/oot_plugins.c"

# 5. The Python package where make install put it (docs/python.md): it
#    names the final libdir, and with the staged libraries and plugins it
#    runs a model as PyTorch does.
paths=$(find "$tmp/stage" -path '*/popc/_paths.py' | head -n 1)
if [ -n "${POPC_PYTHON:-}" ]; then
    [ -n "$paths" ] || fail "the staged install has no Python package"
    echo "== the Python package in ${paths%/popc/_paths.py}"
    final_libdir=${libdir#"$tmp/stage"}
    rc=0
    POPC_PACKAGE_DIR=${paths%/popc/_paths.py} \
    POPC_LIBRARY_DIR=$libdir POPC_PLUGIN_PATH="$plugindir" \
    POPC_FINAL_LIBDIR=$final_libdir \
        sh "$srcdir/tests/python/run.sh" "$srcdir/tests/python/installed.py" ||
        rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "the installed Python package"
else
    echo "(configured without Python: no package to check)"
fi
echo "PASS: out-of-tree plugins built, loaded, trained and checked"
