#!/bin/sh
# test_examples.sh - the C example programs on a 2000-image subset of
# Fashion-MNIST: examples/train_mlp (one epoch, cpu and ipumodel) and
# examples/infer_cnn with weights from `popc train fashion-mnist-cnn.ini`
# (one epoch), and examples/modules_mlp (one epoch of 6400 images). Each
# must exit 0 and print a plausible test accuracy (> 50%; chance is 10%,
# one short epoch gives about 65%); infer_cnn must
# also report every output mode agreeing with All.
#
# Environment (set by make check): POPC (the built popc), POPC_BUILDDIR,
# POPC_SRCDIR, POPC_PLUGIN_PATH. Skipped (77) without the dataset.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${POPC_BUILDDIR:?set POPC_BUILDDIR to the build tree}"
: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"

data=/usr/share/datasets/fashion-mnist
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
         t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -r "$data/$f" ] || { echo "SKIP: $data/$f is missing"; exit 77; }
done

train_mlp=$POPC_BUILDDIR/examples/train_mlp
infer_cnn=$POPC_BUILDDIR/examples/infer_cnn

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-examples-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

# shellcheck source=tests/testlib.sh
. "$POPC_SRCDIR/tests/testlib.sh"

# run DESCRIPTION COMMAND...: exit status 0, output in out.txt
run() {
    what=$1
    shift
    "$@" >out.txt 2>err.txt
    got=$?
    sed 's/^/    | /' out.txt
    if [ "$got" -eq 0 ]; then
        pass "$what (exit 0)"
    else
        fail "$what: exit $got"
        sed 's/^/    stderr: /' err.txt | head -5
    fi
}

# accuracy DESCRIPTION: the last "test accuracy NN.NN%" of out.txt > 50
accuracy() {
    acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' out.txt | tail -n 1)
    if [ -z "$acc" ]; then
        fail "$1: no test accuracy printed"
    elif awk -v a="$acc" 'BEGIN { exit !(a > 50) }'; then
        pass "$1: test accuracy $acc% > 50%"
    else
        fail "$1: test accuracy $acc% is not above 50%"
    fi
}

for backend in cpu ipumodel; do
    run "train_mlp on $backend" "$train_mlp" --backend "$backend" \
        --epochs 1 --limit 2000 --test-limit 2000
    accuracy "train_mlp on $backend"
done

run "popc train fashion-mnist-cnn.ini (2000 images, 1 epoch)" \
    "$POPC" train "$POPC_SRCDIR/examples/fashion-mnist-cnn.ini" \
    --set options.backend=cpu --set data.limit=2000 \
    --set data.test_limit=500 --set train.epochs=1 \
    --set train.weights=cnn.weights --set train.model=cnn.model.ini
run "infer_cnn with those weights" "$infer_cnn" --weights cnn.weights \
    --test-limit 2000 --backend cpu
accuracy "infer_cnn"
for mode in Final EveryN Sum; do
    if grep -q "^$mode: \[.*max difference from All" out.txt; then
        pass "infer_cnn: $mode output checked against All"
    else
        fail "infer_cnn: no $mode line"
    fi
done

# modules_mlp: the explicit program learns, and the IPU model's report
# lists the hidden module as one outlined body with two calls (forward)
# and its backward body with two calls
modules_mlp=$POPC_BUILDDIR/examples/modules_mlp
run "modules_mlp on ipumodel" "$modules_mlp" --epochs 1 --limit 6400 \
    --profile prof
accuracy "modules_mlp"
flat=$(tr -d ' \n' <prof/training/profile.json)
if printf '%s' "$flat" |
        grep -q '"body":"hidden#[0-9]*","ops":\[[0-9]*,[0-9]*\],"calls":2' &&
    printf '%s' "$flat" |
        grep -q '"body":"hidden/grad#[0-9]*","ops":\[[0-9]*,[0-9]*\],"calls":2'
then
    pass "modules_mlp: the two hidden layers are one outlined body (and one backward body)"
else
    fail "modules_mlp: the report's outlined list has no hidden body of 2 calls"
fi

"$train_mlp" --epochs 0 >/dev/null 2>&1
got=$?
[ "$got" -eq 2 ] && pass "train_mlp --epochs 0: usage error (exit 2)" ||
    fail "train_mlp --epochs 0: exit $got, want 2"

finish
