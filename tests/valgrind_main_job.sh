#!/bin/sh
# valgrind_main_job.sh BUILDDIR - the main job leaks nothing and touches no
# memory it should not: `popc train` on the main job's run file
# (examples/fashion-mnist-mlp.ini, the MLP on the IPU model) cut to one
# epoch of 128 images, under valgrind's memcheck. Any invalid access or
# definite or indirect leak fails, with no suppression. .ci/run calls it
# after the plain build: valgrind cannot run the sanitizer builds.
set -u
b=${1:?usage: valgrind_main_job.sh BUILDDIR}
b=$(cd "$b" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null 2>&1 || {
    echo "FAIL: valgrind is not installed (scripts/install-deps installs it)"
    exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-valgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
POPC_PLUGIN_PATH="$b/ops:$b/optim:$b/backends:$b/collectives"
export POPC_PLUGIN_PATH
"$b/libtool" --mode=execute valgrind --quiet --leak-check=full \
    --errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
    --num-callers=30 \
    "$b/tools/popc" train "$src/examples/fashion-mnist-mlp.ini" \
    --set train.epochs=1 --set data.limit=128 --set data.test_limit=64 \
    >out.txt 2>err.txt
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: popc train under valgrind exited $rc:"
    tail -60 err.txt
    exit 1
fi
grep -q "test accuracy" out.txt || {
    echo "FAIL: the run printed no result:"
    cat out.txt err.txt
    exit 1
}
echo "PASS: the main job (1 epoch, 128 images) under valgrind: no invalid" \
    "access, no leak"
