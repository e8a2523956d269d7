#!/bin/sh
# test_train_run.sh - `popc train RUN.ini` with [model] onnx: a PyTorch MLP
# exported to ONNX (tests/onnx/train/gen_train.py) trains with SGD
# (momentum) on cpu and ipumodel, its loss at every step ("losses" of
# --json) within 1e-4 of torch.optim.SGD's; [train] export_onnx writes
# the trained model, which `popc infer` runs to PyTorch's trained logits
# and onnx.checker accepts; the model INI written by training runs with
# `popc infer`; [nodes PREFIX] sections pipeline the model over 2 IPUs
# with the same losses; bad [model] settings get exit status 2 and say
# why.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
T="$POPC_SRCDIR/tests/onnx/train"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

# run.ini with [model] extra lines from $1 ("key = value" lines)
write_run() {
    cat >run.ini <<INI
[options]
backend = $backend
[model]
onnx = $T/mlp.onnx
input = 16
classes = 3
$1
[data]
train = $T/x.npy
train_labels = $T/y.npy
batch_size = 8
shuffle = false
[optimizer]
name = sgd
lr = 0.1
momentum = 0.9
[train]
epochs = 2
evaluate = false
export_onnx = trained.onnx
INI
}

for backend in cpu ipumodel; do
    write_run ""
    expect 0 "train the ONNX MLP on $backend" "$POPC" train run.ini \
        --json train.json --quiet
    if losses_close train.json "$T/ref_losses.txt" 1e-4 >diff.txt; then
        pass "$backend: the loss of all 6 steps follows torch.optim.SGD ($(cat diff.txt))"
    else
        fail "$backend: losses differ from PyTorch's: $(cat diff.txt)"
    fi
    expect 0 "$backend: infer the exported ONNX model" "$POPC" infer \
        trained.onnx -i "features=$T/x8.npy" -o "out.$backend"
    if "$CLOSE" "out.$backend/logits.npy" "$T/ref_logits.npy" 1e-4 >diff.txt; then
        pass "$backend: the exported model gives PyTorch's trained logits ($(cat diff.txt))"
    else
        fail "$backend: exported model differs from PyTorch's: $(cat diff.txt)"
    fi
done

if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    /usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" \
        trained.onnx >checker.txt 2>&1 &&
        pass "onnx.checker accepts the exported model" ||
        { fail "onnx.checker rejects the exported model"; head -5 checker.txt; }
else
    fail "python3-onnx is needed to check the exported model (apt-get install python3-onnx)"
fi

contains run.model.ini "onnx = $T/mlp.onnx" "the model INI names the ONNX file"
expect 0 "popc infer runs the model INI" "$POPC" infer run.model.ini \
    --set data.test="$T/x.npy" --set data.test_labels="$T/y.npy"

# ---- pipelined over 2 IPUs by node-name prefix ([nodes PREFIX]) ---------------------

backend=ipumodel
write_run "[nodes *]
ipu = 0
[nodes /2]
ipu = 1"
sed -i 's/^backend = ipumodel$/backend = ipumodel\nTraining.gradientAccumulation = 3/; s/^export_onnx = trained.onnx$/export_onnx = pipe.onnx/' run.ini
expect 0 "train the ONNX MLP pipelined over 2 IPUs" env POPC_LOG_LEVEL=info \
    "$POPC" train run.ini --json pipe.json --quiet
contains err.txt "2 IPUs per replica" "the [nodes] sections place the model on 2 IPUs"
contains run.model.ini "[nodes /2]" "the model INI keeps the [nodes] sections"
backend=cpu
write_run ""
sed -i 's/^backend = cpu$/backend = cpu\nTraining.gradientAccumulation = 3/; s/^export_onnx = trained.onnx$/export_onnx = flat.onnx/' run.ini
expect 0 "the same training on one IPU" "$POPC" train run.ini --json flat.json --quiet
pl=$(sed -n 's/.*"losses": \(\[[^]]*\]\).*/\1/p' pipe.json)
fl=$(sed -n 's/.*"losses": \(\[[^]]*\]\).*/\1/p' flat.json)
[ -n "$pl" ] && [ "$pl" = "$fl" ] && pass "pipelined losses equal the unpipelined ones: $pl" ||
    fail "pipelined losses $pl differ from $fl"
"$POPC" infer pipe.onnx -i "features=$T/x8.npy" -o pipe.out >/dev/null 2>&1
"$POPC" infer flat.onnx -i "features=$T/x8.npy" -o flat.out >/dev/null 2>&1
"$CLOSE" pipe.out/logits.npy flat.out/logits.npy 0 >diff.txt &&
    pass "the pipelined model exports bitwise the same weights ($(cat diff.txt))" ||
    fail "pipelined export differs: $(cat diff.txt)"

# ---- bad settings ------------------------------------------------------------------

backend=cpu
write_run "layers = fc1"
expect 2 "onnx with layers" "$POPC" train run.ini
contains err.txt "give either layers or onnx, not both" "onnx with layers says why"
write_run "output = probs"
expect 2 "an output the model does not have" "$POPC" train run.ini
contains err.txt "no output 'probs'; the model's outputs are 'logits'" \
    "the unknown output is named with the model's outputs"
sed -i 's/^input = 16$/input = 4, 4/' run.ini
sed -i 's/^output = probs$//' run.ini
expect 2 "an input shape the model does not take" "$POPC" train run.ini
contains err.txt "[model] input" "the input mismatch names [model] input"
contains err.txt "is float32 [8, 16], but the data gives float32 [8, 4, 4]" \
    "the input mismatch gives both shapes"
printf '[model]\ninput = 16\nclasses = 3\nlayers = fc1\noutput = logits\n[layer fc1]\ntype = linear\nout_features = 3\n' >layers.ini
expect 2 "output without onnx" "$POPC" train layers.ini
contains err.txt "output and labels name values of an ONNX model" \
    "output without onnx is refused, not ignored"

printf '[model]\ninput = 16\nclasses = 3\nlayers = fc1\n[layer fc1]\ntype = linear\nout_features = 3\n[nodes fc1]\nipu = 1\n' >layers.ini
expect 2 "[nodes] without onnx" "$POPC" train layers.ini
contains err.txt "[nodes fc1] places the nodes of an ONNX model" \
    "[nodes] without onnx is refused, not ignored"
write_run "[nodes /0]
ipu = 1
stage = 2
colour = red"
expect 2 "an unknown key in [nodes]" "$POPC" train run.ini
contains err.txt "colour" "the unknown [nodes] key is named"

finish
