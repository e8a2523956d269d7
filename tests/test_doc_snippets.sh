#!/bin/sh
# test_doc_snippets.sh - the newcomer's path through the documentation,
# against a staged install (make install DESTDIR=...):
#   - every document of docs/ is installed under $(docdir), and every
#     example C program installed under $(pkgdatadir)/examples is named in
#     README.md;
#   - every complete C program of README.md and docs/*.md (a ```c block
#     with an #include, named by its first comment: "/* NAME.c - ") is
#     compiled with -Wall -Wextra -Werror against the staged headers, and
#     linked when it has a main() (plugins are compiled as objects);
#   - README.md's "Using popc from C" and docs/onnx.md's "From C" run as
#     written: their ```sh blocks, with `cc` and `pkg-config` as a user
#     has them (pkg-config pointed at the staged install; a sanitizer
#     build's flags added to cc), and the programs' output checked.
# Blocks without an #include are fragments and are not compiled.
set -u
builddir=${POPC_BUILDDIR:?run this through make check}
srcdir=${POPC_SRCDIR:?run this through make check}
mk=${POPC_MAKE:-make}
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP: pkg-config is not installed"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-doc-snippets-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$srcdir/tests/testlib.sh"

# ---- the staged install -------------------------------------------------------

if ! $mk -C "$builddir" install DESTDIR="$tmp/stage" >install.log 2>&1; then
    tail -n 30 install.log
    echo "FAIL: make install DESTDIR=$tmp/stage"
    exit 1
fi
pc=$(find "$tmp/stage" -name popc.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || { echo "FAIL: the staged install has no popc.pc"; exit 1; }
docdir=$(find "$tmp/stage" -type d -path '*/share/doc/popc' | head -n 1)
examples=$(find "$tmp/stage" -type d -path '*/share/popc/examples' | head -n 1)

for f in "$srcdir"/docs/*.md "$srcdir"/docs/*.png; do
    b=$(basename "$f")
    [ -f "$docdir/$b" ] && pass "docs/$b installed under \$(docdir)" ||
        fail "docs/$b is not installed under \$(docdir)"
done
for f in "$examples"/*.c; do
    b=$(basename "$f")
    grep -qF "\`$b\`" "$srcdir/README.md" &&
        pass "the installed example $b is named in README.md" ||
        fail "the installed example $b is not named in README.md"
done

# What a user's shell has: cc (with a sanitizer build's flags, whose
# library needs its runtime in the program) and pkg-config, here pointed
# at the staged install.
mkdir -p bin
cat >bin/cc <<CC
#!/bin/sh
exec ${POPC_CC:-cc} ${POPC_TEST_CFLAGS:-} "\$@" ${POPC_TEST_LDFLAGS:-}
CC
cat >bin/pkg-config <<PC
#!/bin/sh
exec $(command -v pkg-config) --define-prefix "\$@"
PC
chmod +x bin/cc bin/pkg-config
PATH="$tmp/bin:$PATH"
PKG_CONFIG_PATH=$(dirname "$pc")
export PATH PKG_CONFIG_PATH
POPC_PLUGIN_PATH=$(pkg-config --variable=plugindir popc)
export POPC_PLUGIN_PATH
case $POPC_PLUGIN_PATH in
"$tmp"/stage/*) ;;
*) echo "FAIL: pkg-config points outside the stage: $POPC_PLUGIN_PATH"; exit 1 ;;
esac

# ---- every complete C program of the documents ---------------------------------

mkdir -p snippets
for doc in "$srcdir/README.md" "$srcdir"/docs/*.md; do
    rel=${doc#"$srcdir"/}
    mkdir -p "snippets/$rel.d"
    for name in $(md_c_programs "$doc" "snippets/$rel.d"); do
        src="snippets/$rel.d/$name"
        libs=popc
        grep -q '<popc/onnx.h>' "$src" && libs=popc-onnx
        # shellcheck disable=SC2046
        if grep -q 'main(' "$src"; then
            cc -std=c11 -Wall -Wextra -Werror -o "${src%.c}" "$src" \
                $(pkg-config --cflags --libs $libs) -lm >cc.txt 2>&1
        else
            cc -std=c11 -Wall -Wextra -Werror -fPIC -c -o "${src%.c}.o" \
                "$src" $(pkg-config --cflags $libs) >cc.txt 2>&1
        fi
        if [ $? -eq 0 ]; then
            pass "$rel: $name compiles"
        else
            fail "$rel: $name does not compile"
            sed 's/^/    | /' cc.txt | head -10
        fi
        n=$((${n:-0} + 1))
    done
done
[ "${n:-0}" -ge 4 ] && pass "$n complete programs found in the documents" ||
    fail "only ${n:-0} complete programs found: is the extraction broken?"

# ---- the sections run as written ------------------------------------------------

mkdir -p readme && cd readme || exit 99
md_c_programs "$srcdir/README.md" . >/dev/null
md_section_sh "$srcdir/README.md" "## Using popc from C" >commands.sh
grep -q "hello.c" commands.sh || fail "README.md: no commands for hello.c"
if sh -e commands.sh >out.txt 2>err.txt; then
    pass "README.md's \"Using popc from C\" compiles, links and runs as written"
else
    fail "README.md's \"Using popc from C\" fails as written"
    sed 's/^/    | /' err.txt | head -10
fi
[ "$(grep -cE '^[0-9]+\.[0-9]{4}( [0-9]+\.[0-9]{4}){3}$' out.txt)" -eq 2 ] &&
    pass "hello prints two rows of 4 non-negative values" ||
    fail "hello printed: $(cat out.txt)"
cd .. || exit 99

mkdir -p onnx && cd onnx || exit 99
md_c_programs "$srcdir/docs/onnx.md" . >/dev/null
cp "$srcdir/tests/onnx/models/small_cnn.onnx" model.onnx
cp "$srcdir/tests/onnx/models/small_cnn.input.npy" x.npy
md_section_sh "$srcdir/docs/onnx.md" "## From C" >commands.sh
if sh -e commands.sh >out.txt 2>err.txt; then
    pass "docs/onnx.md's \"From C\" compiles, links and runs as written"
else
    fail "docs/onnx.md's \"From C\" fails as written"
    sed 's/^/    | /' err.txt | head -10
fi
contains out.txt "output: float32[2, 10]" "onnx_run prints the output's shape"
[ -s exported.onnx ] && pass "onnx_run exported the model" ||
    fail "onnx_run wrote no exported.onnx"

finish
