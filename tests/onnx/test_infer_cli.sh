#!/bin/sh
# test_infer_cli.sh - `popc infer MODEL.onnx`: PyTorch-exported models (a
# CNN, a TransformerEncoder, an LSTM and a GRU classifier; see
# tests/onnx/models/gen_models.py) give PyTorch's outputs on cpu and
# ipumodel; inputs of every dtype popc has (float64 included) are taken
# as their files hold them and outputs written in their own dtype; bad
# models, inputs and arguments get clear errors with exit status 2.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
M="$POPC_SRCDIR/tests/onnx/models"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

# ---- PyTorch models: outputs equal PyTorch's within 1e-4 -------------------------

for model in small_cnn tiny_transformer lstm_classifier gru_classifier; do
    for backend in cpu ipumodel; do
        expect 0 "$model on $backend" "$POPC" infer "$M/$model.onnx" \
            -i "input=$M/$model.input.npy" -o "out/$model.$backend" \
            --backend "$backend"
        if "$CLOSE" "out/$model.$backend/output.npy" \
            "$M/$model.output.npy" 1e-4 >diff.txt; then
            pass "$model on $backend matches PyTorch: $(cat diff.txt)"
        else
            fail "$model on $backend differs from PyTorch: $(cat diff.txt)"
        fi
    done
done

# ---- every dtype: each input keeps its file's dtype, each output its own ----------
# (tests/onnx/dtypes/gen_dtypes.py: x_T doubled into y_T for every dtype;
# bfloat16 files hold its uint16 bits)

D="$POPC_SRCDIR/tests/onnx/dtypes"
dtypes="float32 float64 float16 bfloat16 int8 int16 int32 int64 uint8 uint16
uint32 uint64 bool"
set --
for t in $dtypes; do
    set -- "$@" -i "x_$t=$D/in_$t.npy"
done
for backend in cpu ipumodel; do
    expect 0 "every dtype on $backend" "$POPC" infer "$D/every_dtype.onnx" \
        "$@" -o "out/dtypes.$backend" --backend "$backend"
    for t in $dtypes; do
        if "$CLOSE" "out/dtypes.$backend/y_$t.npy" "$D/out_$t.npy" 0 \
            >diff.txt; then
            pass "$t through popc infer on $backend: $(cat diff.txt)"
        else
            fail "$t through popc infer on $backend: $(cat diff.txt)"
        fi
    done
done
contains out.txt "y_bfloat16.npy (bfloat16 as uint16 bits)" \
    "a bfloat16 output is written as its bits, and says so"

# ---- errors ------------------------------------------------------------------------

expect 2 "missing input" "$POPC" infer "$M/small_cnn.onnx" -o out/x
contains err.txt "graph input 'input'" "missing input is named"
contains err.txt "add -i input=FILE.npy" "missing input says how to give it"
expect 2 "unknown input name" "$POPC" infer "$M/small_cnn.onnx" \
    -i "input=$M/small_cnn.input.npy" -i "nope=$M/small_cnn.input.npy" \
    -o out/x
contains err.txt "no graph input named 'nope'; its inputs are 'input'" \
    "unknown input is named and the model's inputs listed"
expect 2 "no output folder" "$POPC" infer "$M/small_cnn.onnx" \
    -i "input=$M/small_cnn.input.npy"
head -c 1000 "$M/tiny_transformer.onnx" >truncated.onnx
expect 2 "truncated model" "$POPC" infer truncated.onnx \
    -i "input=$M/tiny_transformer.input.npy" -o out/x
contains err.txt "truncated.onnx: not a valid ONNX model" \
    "truncated model is named"
printf 'not a model' >junk.onnx
expect 2 "not a model" "$POPC" infer junk.onnx -i "x=$M/small_cnn.input.npy" \
    -o out/x
contains err.txt "junk.onnx" "junk file is named"
expect 2 "unsupported ops" "$POPC" infer "$M/unsupported_ops.onnx" \
    -i "x=$M/lstm_classifier.output.npy" -o out/x
contains err.txt "2 nodes use ops popc does not have" \
    "every unsupported op is counted"
contains err.txt "node 'frob_a': op FrobnicateA, domain com.example, opset 1" \
    "first unsupported op listed with node, op, domain and opset"
contains err.txt "node 'frob_b': op FrobnicateB" \
    "second unsupported op listed in the same error"
expect 2 "input of the wrong rank" "$POPC" infer "$M/small_cnn.onnx" \
    -i "input=$M/small_cnn.output.npy" -o out/x
contains err.txt "input" "wrong-rank input is named"
[ ! -e out/x ] && pass "nothing written on errors" ||
    fail "out/x written although every run failed"

finish
