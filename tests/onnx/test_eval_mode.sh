#!/bin/sh
# test_eval_mode.sh - PyTorch's model.eval() wherever `popc train`
# evaluates or deploys a model exported for training. MobileNetV2
# (BatchNorm and Dropout, 4 classes, 32x32) exported with
# TrainingMode.TRAINING by tests/onnx/vision/gen_eval.py at test time
# trains from a run file on cpu and ipumodel; then, against torch's module
# holding popc's weights directory in eval():
#   - one step updates every running mean and variance as PyTorch does;
#   - the file [train] export_onnx writes has BatchNormalization with
#     training_mode 0 and Dropout without training_mode, and run by
#     `popc infer` gives torch's eval() logits within 1e-4;
#   - `popc infer` on the run's model INI gives torch's eval() classes;
#   - the test accuracy of `popc train`'s evaluation is torch's;
#   - sample 0 gives the same output whatever the rest of its batch,
#     bitwise, where the training export (ONNX's batch statistics)
#     moves it.
POPC="$POPC_BUILDDIR/tools/popc"
PY=/usr/bin/python3
GEN="$POPC_SRCDIR/tests/onnx/vision/gen_eval.py"
if ! $PY -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "SKIP: PyTorch, torchvision and onnx are needed to export the model and check popc's results (scripts/install-deps --with-reference installs python3-torch and python3-torchvision; scripts/install-deps installs python3-onnx)"
    exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
. "$POPC_SRCDIR/tests/testlib.sh"

if ! $PY "$GEN" gen "$tmp" >"$tmp/gen.log" 2>&1; then
    tail -20 "$tmp/gen.log"
    echo "FAIL: exporting the model"
    exit 1
fi

# run BACKEND NAME X Y EPOCHS: a run file $tmp/NAME/run.ini training the
# export with SGD (lr 0.1, batches of 8, in file order), evaluating on
# test_x, exporting NAME/exported.onnx
run() {
    d="$tmp/$2"
    mkdir -p "$d"
    cat >"$d/run.ini" <<INI
[options]
backend = $1
[model]
onnx = $tmp/model_train.onnx
input = 3, 32, 32
classes = 4
[data]
train = $3
train_labels = $4
test = $tmp/test_x.npy
test_labels = $tmp/test_y.npy
batch_size = 8
shuffle = false
[optimizer]
name = sgd
lr = 0.1
[train]
epochs = $5
weights = $d/trained.weights
model = $d/trained.ini
export_onnx = $d/exported.onnx
INI
    "$POPC" train "$d/run.ini" --quiet --json "$d/train.json" \
        >"$d/err.txt" 2>&1
}

for backend in cpu ipumodel; do
    if ! run "$backend" "one.$backend" "$tmp/train_x8.npy" \
        "$tmp/train_y8.npy" 1; then
        fail "one training step on $backend failed"
        head -5 "$tmp/one.$backend/err.txt"
    elif $PY "$GEN" running "$tmp" "$tmp/one.$backend/trained.weights" \
        >"$tmp/check.txt" 2>&1; then
        pass "$backend: $(cat "$tmp/check.txt")"
    else
        fail "$backend: $(cat "$tmp/check.txt")"
    fi

    d="$tmp/full.$backend"
    if ! run "$backend" "full.$backend" "$tmp/train_x.npy" \
        "$tmp/train_y.npy" 2; then
        fail "training on $backend failed"
        head -5 "$d/err.txt"
        continue
    fi
    if ! "$POPC" infer "$d/exported.onnx" -i "input=$tmp/test_x.npy" \
        -o "$d/out" --backend "$backend" >"$d/err.txt" 2>&1 ||
        ! "$POPC" infer "$d/trained.ini" \
            --set "infer.predictions=$d/pred.npy" >>"$d/err.txt" 2>&1; then
        fail "$backend: popc infer failed"
        head -5 "$d/err.txt"
        continue
    fi
    acc=$(json_value "$d/train.json" test_accuracy)
    if $PY "$GEN" eval "$tmp" "$d/trained.weights" "$d/out/output.npy" \
        "$d/pred.npy" "$acc" >"$tmp/check.txt" 2>&1; then
        pass "$backend: $(tr '\n' ';' <"$tmp/check.txt")"
    else
        fail "$backend: $(tr '\n' ';' <"$tmp/check.txt")"
    fi
    if $PY "$GEN" exported "$d/exported.onnx" >"$tmp/check.txt" 2>&1; then
        pass "$backend: $(cat "$tmp/check.txt")"
    else
        fail "$backend: $(tail -3 "$tmp/check.txt")"
    fi
    # the exported file in eval mode: a sample is its own
    for b in a b; do
        "$POPC" infer "$d/exported.onnx" -i "input=$tmp/batch_$b.npy" \
            -o "$d/batch_$b" --backend "$backend" >/dev/null 2>&1
        "$POPC" infer "$tmp/model_train.onnx" -i "input=$tmp/batch_$b.npy" \
            -o "$d/trainmode_$b" --backend "$backend" >/dev/null 2>&1
    done
    if $PY "$GEN" batch "$d/batch_a/output.npy" "$d/batch_b/output.npy" \
        0 >"$tmp/check.txt" 2>&1; then
        pass "$backend, exported model: $(cat "$tmp/check.txt")"
    else
        fail "$backend, exported model: $(cat "$tmp/check.txt")"
    fi
    # the training export keeps ONNX's meaning: the batch's statistics
    if $PY "$GEN" batch "$d/trainmode_a/output.npy" \
        "$d/trainmode_b/output.npy" 1e-2 >"$tmp/check.txt" 2>&1; then
        fail "$backend, training export: expected sample 0 to move with its batch: $(cat "$tmp/check.txt")"
    else
        pass "$backend, training export (batch statistics, as ONNX says): $(head -1 "$tmp/check.txt")"
    fi
done

finish
