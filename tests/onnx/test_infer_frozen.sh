#!/bin/sh
# test_infer_frozen.sh - `popc infer` with an input popc needs at compile
# time (tests/onnx/models/gen_shape_input.py: a Reshape's target shape
# given as the graph input 'shape', through an Identity): the value of its
# .npy is compiled in, so two files give two output shapes, each equal to
# NumPy's; the model is read once (the import freezes what the graph
# needs), and the errors about inputs still name them.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
M="$POPC_SRCDIR/tests/onnx/models"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

for backend in cpu ipumodel; do
    for s in "" 43; do
        expect 0 "shape [$s] frozen on $backend" "$POPC" infer \
            "$M/shape_input.onnx" -i "x=$M/shape_input.x.npy" \
            -i "shape=$M/shape_input.shape$s.npy" -o "out/$backend$s" \
            --backend "$backend"
        if "$CLOSE" "out/$backend$s/y.npy" "$M/shape_input.y$s.npy" 0 \
            >diff.txt; then
            pass "shape$s on $backend equals NumPy's: $(cat diff.txt)"
        else
            fail "shape$s on $backend differs from NumPy's: $(cat diff.txt)"
        fi
    done
done
# the frozen input given first: the order of -i does not matter
expect 0 "frozen input given first" "$POPC" infer "$M/shape_input.onnx" \
    -i "shape=$M/shape_input.shape43.npy" -i "x=$M/shape_input.x.npy" \
    -o out/first
"$CLOSE" out/first/y.npy "$M/shape_input.y43.npy" 0 >diff.txt &&
    pass "frozen input first: $(cat diff.txt)" ||
    fail "frozen input first: $(cat diff.txt)"

expect 2 "compile-time input missing" "$POPC" infer "$M/shape_input.onnx" \
    -i "x=$M/shape_input.x.npy" -o out/x
contains err.txt "node 'reshape' (Reshape)" \
    "a compile-time input left out: the node that needs it is named"
contains err.txt "must be a constant or initializer known at compile time" \
    "and why it needs it"
expect 2 "unknown input beside a frozen one" "$POPC" infer \
    "$M/shape_input.onnx" -i "x=$M/shape_input.x.npy" \
    -i "shape=$M/shape_input.shape.npy" -i "nope=$M/shape_input.x.npy" \
    -o out/x
contains err.txt "no graph input named 'nope'; its inputs are 'x', 'shape'" \
    "the frozen input is listed among the model's inputs"
expect 2 "a float32 file as the shape" "$POPC" infer "$M/shape_input.onnx" \
    -i "x=$M/shape_input.x.npy" -i "shape=$M/shape_input.x.npy" -o out/x
contains err.txt "must be int64 or int32, got float32" \
    "the frozen value's dtype is checked by the node"
[ ! -e out/x ] && pass "nothing written on errors" ||
    fail "out/x written although every run failed"

finish
