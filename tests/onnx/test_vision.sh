#!/bin/sh
# test_vision.sh - torchvision classification models (ResNet-18,
# MobileNetV2, SqueezeNet, ShuffleNetV2, EfficientNet-B0; random weights,
# exported with torch.onnx.export at opset 13 by
# tests/onnx/vision/gen_vision.py at test time: they are too large to
# commit) run with `popc infer` on cpu and ipumodel and give PyTorch's
# outputs within 1e-4; ResNet-18 and MobileNetV2 exported for training
# train from a run file with SGD, following torch.optim.SGD's losses (see
# below for the tolerance).
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
PY=/usr/bin/python3
if ! $PY -c "import torch, torchvision" 2>/dev/null; then
    echo "SKIP: PyTorch and torchvision are needed to export the models (scripts/install-deps --with-reference installs python3-torch and python3-torchvision)"
    exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
. "$POPC_SRCDIR/tests/testlib.sh"

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
# The graph optimizer (docs/optimizer.md) is on by default (level 2:
# fused convolutions, BatchNorm folding): the runs above used it. Level 0
# runs the graphs as exported, and must match PyTorch too; so must level 2
# with blocked NCHWc layouts of 8 channels (POPC_NCHWC_BLOCK=8; the runs
# above used this machine's, 16 with AVX-512) and with none (0). Level 3
# is refused with a message.
for model in resnet18 mobilenet_v2; do
    for level in 0 2/8 2/0; do
        out="$tmp/out.$model.level$(echo $level | tr / _)"
        blk=; [ "$level" != 0 ] && blk=${level#2/}
        if ! env ${blk:+POPC_NCHWC_BLOCK=$blk} "$POPC" infer "$tmp/$model.onnx" \
            -i "input=$tmp/$model.input.npy" -o "$out" --backend cpu \
            --option optimizationLevel=${level%/*} >"$tmp/err.txt" 2>&1; then
            fail "$model at optimizationLevel $level: popc infer failed"
            head -5 "$tmp/err.txt"
        elif "$CLOSE" "$out/output.npy" "$tmp/$model.output.npy" 1e-4 >"$tmp/diff.txt"; then
            pass "$model at optimizationLevel $level matches PyTorch: $(cat "$tmp/diff.txt")"
        else
            fail "$model at optimizationLevel $level differs from PyTorch: $(cat "$tmp/diff.txt")"
        fi
    done
done
"$POPC" infer "$tmp/resnet18.onnx" -i "input=$tmp/resnet18.input.npy" \
    -o "$tmp/out.level3" --option optimizationLevel=3 >"$tmp/err.txt" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "not supported yet" "$tmp/err.txt"; then
    pass "optimizationLevel 3 is refused as not supported yet (exit $rc)"
else
    fail "optimizationLevel 3: exit $rc, $(head -2 "$tmp/err.txt")"
fi
# ResNet-18 and MobileNetV2 exported for training, and MobileNetV2 with its
# BatchNorms folded into the convolutions (eval export: depthwise
# convolutions, ReLU6 and residuals without batch statistics), trained
# from a run file with SGD for 4 steps. The first loss (a training-mode forward: batch
# statistics) must be within 1e-4 of PyTorch's. Every loss must be within
# 1e-4, or within twice the distance between PyTorch's own float32 and
# float64 runs when that is larger: random-init MobileNetV2 training is so
# ill-conditioned that float32 rounding alone moves PyTorch's fourth loss
# by about 2e-2 (gen_vision.py writes NET_train_spread.txt), while
# ResNet-18's and the folded MobileNetV2's spreads are under 1e-6, so they
# are held to 1e-4.
for net in resnet18 mobilenet_v2 mobilenet_v2_folded; do
    spread=$(cat "$tmp/${net}_train_spread.txt")
    tol=$(awk -v s="$spread" 'BEGIN { t = 2 * s; print (t > 1e-4 ? t : 1e-4) }')
    head -1 "$tmp/${net}_train_losses.txt" >"$tmp/first_ref.txt"
    for backend in cpu ipumodel; do
        onnx_sgd_run "$tmp/train.ini" "$backend" "$tmp/${net}_train.onnx" \
            "3, 64, 64" 4 "$tmp/train_x.npy" "$tmp/train_y.npy" 0.01 "$tmp"
        if ! "$POPC" train "$tmp/train.ini" --quiet --json "$tmp/train.json" \
            >"$tmp/err.txt" 2>&1; then
            fail "$net training on $backend failed"
            head -5 "$tmp/err.txt"
            continue
        fi
        sed 's/"losses": \[\([^],]*\)[^]]*\]/"losses": [\1]/' \
            "$tmp/train.json" >"$tmp/first.json"
        if losses_close "$tmp/first.json" "$tmp/first_ref.txt" 1e-4 \
            >"$tmp/diff.txt"; then
            pass "$net on $backend: first training loss matches PyTorch's ($(cat "$tmp/diff.txt"))"
        else
            fail "$net on $backend: first training loss differs from PyTorch's: $(cat "$tmp/diff.txt")"
        fi
        if losses_close "$tmp/train.json" "$tmp/${net}_train_losses.txt" \
            "$tol" >"$tmp/diff.txt"; then
            pass "$net trains on $backend with PyTorch's losses within $tol ($(cat "$tmp/diff.txt"); PyTorch float32 vs float64: $spread)"
        else
            fail "$net losses on $backend differ from PyTorch's by more than $tol: $(cat "$tmp/diff.txt")"
        fi
    done
done

finish
