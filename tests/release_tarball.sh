#!/bin/sh
# release_tarball.sh BUILDDIR - the release tarball builds and runs as a
# user gets it: `make dist` in BUILDDIR, then, in the unpacked tarball,
# scripts/main-job (configure, build, install into its build/inst, train)
# cut to one epoch of 6,400 images. A file missing from the tarball fails
# the build or the run. Then, against that real install (no staging, no
# POPC_PLUGIN_PATH), README.md's "Using popc from C" as written, with
# PKG_CONFIG_PATH set as it says for a prefix of one's own. Also checks
# that every document of docs/ was installed under share/doc/popc.
# .ci/run calls it after the plain build (one count).
set -u
b=${1:?usage: release_tarball.sh BUILDDIR}
b=$(cd "$b" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-tarball.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
rm -f "$b"/popc-*.tar.gz
if ! make -C "$b" dist >"$tmp/dist.out" 2>&1; then
    echo "FAIL: make dist failed:"
    tail -30 "$tmp/dist.out"
    exit 1
fi
set -- "$b"/popc-*.tar.gz
[ -f "$1" ] || { echo "FAIL: make dist wrote no popc-*.tar.gz"; exit 1; }
tar -C "$tmp" -xzf "$1" || { echo "FAIL: cannot unpack $1"; exit 1; }
rm -f "$1"
tree=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'popc-*')
if ! "$tree/scripts/main-job" --set train.epochs=1 --set data.limit=6400 \
    --set data.test_limit=1000 >"$tmp/out.txt" 2>"$tmp/err.txt"; then
    echo "FAIL: scripts/main-job in the unpacked tarball failed:"
    tail -40 "$tmp/err.txt"
    tail -40 "$tree/build/config.log" 2>/dev/null | grep -i error | head -5
    exit 1
fi
grep -q "test accuracy" "$tmp/out.txt" || {
    echo "FAIL: the main job from the tarball printed no result:"
    tail -20 "$tmp/out.txt" "$tmp/err.txt"
    exit 1
}
# README.md's C section against the install, as a user runs it
. "$src/tests/testlib.sh"
mkdir -p "$tmp/hello"
(
    cd "$tmp/hello" || exit 1
    md_c_programs "$tree/README.md" . >/dev/null
    md_section_sh "$tree/README.md" "## Using popc from C" >commands.sh
    unset POPC_PLUGIN_PATH
    PKG_CONFIG_PATH="$tree/build/inst/lib/pkgconfig" sh -e commands.sh
) >"$tmp/hello.out" 2>&1 && grep -qE '^[0-9]+\.[0-9]{4}( [0-9.]+){3}$' \
    "$tmp/hello.out" || {
    echo "FAIL: README.md's \"Using popc from C\" against the install:"
    tail -20 "$tmp/hello.out"
    exit 1
}
missing=
for f in "$src"/docs/*.md "$src"/docs/*.png; do
    [ -f "$tree/build/inst/share/doc/popc/$(basename "$f")" ] ||
        missing="$missing $(basename "$f")"
done
[ -z "$missing" ] || {
    echo "FAIL: not installed under share/doc/popc:$missing"
    exit 1
}
echo "PASS: the tarball of make dist configures, builds, installs (with" \
    "every document of docs/), runs README's C program and the main job:" \
    "$(grep "test accuracy" "$tmp/out.txt" | tail -1)"
