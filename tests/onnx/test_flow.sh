#!/bin/sh
# test_flow.sh - ONNX control flow (tests/onnx/flow/gen_flow.py builds the
# models with onnx.helper and computes their outputs with NumPy): a Loop
# whose trip count is an input given at compile, carrying a value and
# stacking a scan output, with an If inside reading an outer initializer
# two levels down; a Scan over axis 1, reversed, with two states and a
# scan output on axis -2; both give NumPy's outputs on cpu and ipumodel.
# If branches of different shapes, and a Loop stopped early while its scan
# outputs were compiled for the full trip count, fail naming the node;
# a model with a Loop compiles to an executable that runs to the same
# logits; a model whose weight is read inside a Loop trains with SGD, its
# losses those of the gradient derived by hand in gen_flow.py.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
F="$POPC_SRCDIR/tests/onnx/flow"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

# close MODEL OUTPUT...: outputs of the last run equal NumPy's within 1e-5
close() {
    model=$1
    shift
    for o in "$@"; do
        if "$CLOSE" "out/$o.npy" "$F/$model.$o.npy" 1e-5 >diff.txt; then
            pass "$model on $backend: $o matches NumPy ($(cat diff.txt))"
        else
            fail "$model on $backend: $o differs from NumPy: $(cat diff.txt)"
        fi
    done
}

for backend in cpu ipumodel; do
    rm -rf out
    expect 0 "$backend: Loop with a nested If" "$POPC" infer \
        "$F/loop_if.onnx" -i "m=$F/loop_if.m.npy" -i "h0=$F/loop_if.h0.npy" \
        -o out --backend "$backend"
    close loop_if h_final stacked
    rm -rf out
    expect 0 "$backend: Scan over axis 1, reversed" "$POPC" infer \
        "$F/scan_axes.onnx" -i "s0=$F/scan_axes.s0.npy" \
        -i "m0=$F/scan_axes.m0.npy" -i "x=$F/scan_axes.x.npy" -o out \
        --backend "$backend"
    close scan_axes s mx ys
    rm -rf out
    expect 0 "$backend: a Loop reading an initializer" "$POPC" infer \
        "$F/loop_classifier.onnx" -i "x=$F/loop_classifier.x.npy" -o out \
        --backend "$backend"
    close loop_classifier logits
done

expect 2 "If branches of different shapes are refused" "$POPC" infer \
    "$F/if_shapes.onnx" -i "c=$F/if_shapes.c.npy" -o out
contains err.txt "If 'pick': output 0 is float32[2, 3] in then_branch but float32[3, 2] in else_branch" \
    "the error names the node and both shapes"
expect 1 "a Loop stopped early fails at run time" "$POPC" infer \
    "$F/loop_early.onnx" -i "v=$F/loop_early.v.npy" -o out
contains err.txt "Loop 'early': its condition stopped it after 2 of 4 iterations" \
    "the error names the node and the iteration"
[ ! -e out/v_final.npy ] && pass "no output is written when the run fails" ||
    fail "an output was written by a failed run"

cat >run.ini <<INI
[model]
onnx = $F/loop_classifier.onnx
input = 4
classes = 4
[data]
train = $F/loop_classifier.x.npy
train_labels = $F/loop_classifier.y.npy
batch_size = 8
shuffle = false
[optimizer]
name = sgd
lr = 0.1
[train]
epochs = 1
evaluate = false
INI
sed 's/batch_size = 8/batch_size = 16/' run.ini >infer.ini
expect 0 "compile the Loop model into an executable" "$POPC" compile \
    infer.ini -o loop.popc
expect 0 "run the executable (its bodies were saved with it)" "$POPC" run \
    loop.popc "$F/loop_classifier.x.npy" -o exe_out
if "$CLOSE" exe_out/logits.npy "$F/loop_classifier.logits.npy" 1e-5 \
    >diff.txt; then
    pass "the executable gives NumPy's logits ($(cat diff.txt))"
else
    fail "the executable's logits differ from NumPy's: $(cat diff.txt)"
fi
for backend in cpu ipumodel; do
    sed "s/^\[model\]/[options]\nbackend = $backend\n[model]/" run.ini \
        >train.ini
    if ! "$POPC" train train.ini --quiet --json train.json >err.txt 2>&1; then
        fail "$backend: training through a Loop failed"
        head -5 err.txt
    elif losses_close train.json "$F/loop_classifier_losses.txt" 1e-5 \
        >diff.txt; then
        pass "$backend: training through a Loop follows the hand-derived SGD losses ($(cat diff.txt))"
    else
        fail "$backend: losses through the Loop differ: $(cat diff.txt)"
    fi
done
# the gradient unrolls the Loop's 2 steps: a limit of 1 refuses it
expect 1 "POPC_MAX_UNROLLED_STEPS=1 refuses the 2-step gradient" \
    env POPC_MAX_UNROLLED_STEPS=1 "$POPC" train train.ini --quiet
contains err.txt "Loop 'twice': its gradient unrolls 2 steps; popc unrolls up to 1 (POPC_MAX_UNROLLED_STEPS" \
    "the error names the node, the steps and the limit"

finish
