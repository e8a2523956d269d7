#!/bin/sh
# test_memplan_cli.sh - in-place execution through `popc train`: the
# weights trained with it (the default) and without it (POPC_INPLACE=0)
# are bitwise equal on both backends, another value of POPC_INPLACE is
# refused naming the variable, and the compile logs the memory line that
# bench/bench_memory.sh reads.
#
# Environment (set by make check): POPC, MAKE_IDX, POPC_PLUGIN_PATH.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-memplan-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"

"$MAKE_IDX" . 256 64 || { echo "make_idx failed"; exit 99; }

cat >run.ini <<'EOF2'
[options]
backend = cpu
[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
batch_size = 8
shuffle = true
seed = 1
[optimizer]
name = sgd
lr = 0.05
momentum = 0.9
[train]
epochs = 1
evaluate = false
[model]
input = 64
classes = 4
layers = fc1, relu, fc2, sig, fc3
[layer fc1]
type = linear
out_features = 32
[layer sig]
type = sigmoid
[layer fc2]
type = linear
out_features = 32
[layer fc3]
type = linear
out_features = 4
EOF2

same_weights() {
    for f in "$1"/*.npy; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done
}

for be in cpu ipumodel; do
    expect 0 "train on $be, in place" "$POPC" train run.ini --quiet \
        --set options.backend=$be --set train.weights=on.$be
    expect 0 "train on $be, POPC_INPLACE=0" env POPC_INPLACE=0 "$POPC" train \
        run.ini --quiet --set options.backend=$be --set train.weights=off.$be
    same_weights on.$be off.$be &&
        pass "$be: weights bitwise equal with and without in-place" ||
        fail "$be: the weights differ with POPC_INPLACE=0"
done

POPC_INPLACE=yes "$POPC" train run.ini --quiet >out.txt 2>err.txt
rc=$?
[ $rc -ne 0 ] && pass "POPC_INPLACE=yes refused (exit $rc)" ||
    fail "POPC_INPLACE=yes accepted"
contains err.txt "POPC_INPLACE is 'yes'" "the error names the variable"
contains err.txt "set it to 0" "the error says what to set"

expect 0 "train with the debug log" env POPC_LOG_LEVEL=DEBUG "$POPC" train \
    run.ini --quiet --set train.weights=dbg
contains err.txt "memory of '" "the compile logs where the memory goes"
# the ReLU, the sigmoid and their gradient ops run in place
grep "memory of '" err.txt | grep -q "([1-9][0-9]* in place;" &&
    pass "the memory line counts in-place values" ||
    fail "no value ran in place: $(grep "memory of '" err.txt)"

finish
