#!/bin/sh
# test_stage_order_cli.sh - a run file whose layers go back to an IPU
# (ipu = 0, 1, 0) under AutoStage SameAsIpu, the default: the stage ids are
# 0, 1, 0, and popc train refuses the model with the error naming the
# layers, their stages and the fix (docs/semantics.md §6). With
# AutoIncrement the same file trains.
#
# Environment (set by make check): POPC, MAKE_IDX, POPC_SRCDIR.
set -u

: "${POPC:?set POPC}"
: "${MAKE_IDX:?set MAKE_IDX}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-stage-order-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"

"$MAKE_IDX" . 64 16 || { echo "make_idx failed"; exit 99; }
cat >run.ini <<INI
[options]
backend = cpu
Training.gradientAccumulation = 8
[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
batch_size = 2
[train]
epochs = 1
[model]
input = 64
classes = 4
layers = fc1, relu, fc2
[layer fc1]
type = linear
out_features = 16
ipu = 0
[layer relu]
type = relu
ipu = 1
[layer fc2]
type = linear
out_features = 4
ipu = 0
INI

expect 1 "SameAsIpu with stage ids 0, 1, 0 is refused" "$POPC" train run.ini \
    --quiet
contains err.txt "popc: poptorch.AutoStage.SameAsIpu gives node 'fc2' (IPU 0) stage id 0, but it reads 'Relu_1:0' from node 'Relu_1' in the later stage 1: with SameAsIpu the stage ids must not go back along the model; use AutoStage.AutoIncrement or explicit stages to return to an IPU" \
    "the error names both layers' nodes, their stages and the fix"
[ ! -e run.weights ] && pass "no weights written" || fail "weights written"
expect 0 "AutoIncrement returns to IPU 0 in a third stage" "$POPC" train \
    run.ini --quiet --set options.setExecutionStrategy.autoStage=AutoIncrement

finish
