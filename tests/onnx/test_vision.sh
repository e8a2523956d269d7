#!/bin/sh
# test_vision.sh - torchvision classification models (ResNet-18,
# MobileNetV2, SqueezeNet, ShuffleNetV2, EfficientNet-B0; random weights,
# exported with torch.onnx.export at opset 13 by
# tests/onnx/vision/gen_vision.py at test time: they are too large to
# commit) run with `popc infer` on cpu and ipumodel and give PyTorch's
# outputs within 1e-4.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
PY=/usr/bin/python3
if ! $PY -c "import torch, torchvision" 2>/dev/null; then
    echo "SKIP: PyTorch and torchvision are needed to export the models (scripts/install-deps --with-reference installs python3-torch and python3-torchvision)"
    exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
checks=0
failures=0
pass() { checks=$((checks + 1)); echo "ok: $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

if ! $PY "$POPC_SRCDIR/tests/onnx/vision/gen_vision.py" "$tmp" >"$tmp/gen.log" 2>&1; then
    tail -20 "$tmp/gen.log"
    echo "FAIL: exporting the torchvision models"
    exit 1
fi
for model in resnet18 mobilenet_v2 squeezenet1_0 shufflenet_v2_x0_5 efficientnet_b0; do
    for backend in cpu ipumodel; do
        out="$tmp/out.$model.$backend"
        if ! "$POPC" infer "$tmp/$model.onnx" -i "input=$tmp/$model.input.npy" \
            -o "$out" --backend "$backend" >"$tmp/err.txt" 2>&1; then
            fail "$model on $backend: popc infer failed"
            head -5 "$tmp/err.txt"
        elif "$CLOSE" "$out/output.npy" "$tmp/$model.output.npy" 1e-4 >"$tmp/diff.txt"; then
            pass "$model on $backend matches PyTorch: $(cat "$tmp/diff.txt")"
        else
            fail "$model on $backend differs from PyTorch: $(cat "$tmp/diff.txt")"
        fi
    done
done
echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
