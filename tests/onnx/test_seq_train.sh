#!/bin/sh
# test_seq_train.sh - sequence models exported from PyTorch for training
# (tests/onnx/seqtrain/gen_seqtrain.py: a 2-layer nn.TransformerEncoder
# classifier, a 2-layer LSTM and a bidirectional GRU, TrainingMode.TRAINING,
# opset 13) train from a run file with SGD on cpu and ipumodel; the loss of
# each of 4 steps follows torch.optim.SGD's within 1e-4.
POPC="$POPC_BUILDDIR/tools/popc"
T="$POPC_SRCDIR/tests/onnx/seqtrain"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
. "$POPC_SRCDIR/tests/testlib.sh"

for model in transformer lstm gru; do
    for backend in cpu ipumodel; do
        onnx_sgd_run "$tmp/run.ini" "$backend" "$T/$model.onnx" "12, 8" 4 \
            "$T/x.npy" "$T/y.npy" 0.05 "$tmp"
        if ! "$POPC" train "$tmp/run.ini" --quiet --json "$tmp/train.json" \
            >"$tmp/err.txt" 2>&1; then
            fail "$model training on $backend failed"
            head -5 "$tmp/err.txt"
            continue
        fi
        if losses_close "$tmp/train.json" "$T/${model}_losses.txt" 1e-4 \
            >"$tmp/diff.txt"; then
            pass "$model trains on $backend with PyTorch's losses ($(cat "$tmp/diff.txt"))"
        else
            fail "$model losses on $backend differ from PyTorch's: $(cat "$tmp/diff.txt")"
        fi
    done
done

finish
