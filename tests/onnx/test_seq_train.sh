#!/bin/sh
# test_seq_train.sh - sequence models exported from PyTorch for training
# (tests/onnx/seqtrain/gen_seqtrain.py: a 2-layer nn.TransformerEncoder
# classifier, a 2-layer LSTM and a bidirectional GRU, TrainingMode.TRAINING,
# opset 13) train from a run file with SGD on cpu and ipumodel; the loss of
# each of 4 steps follows torch.optim.SGD's within 1e-4. So does a
# transformer over token ids (tests/onnx/seqtrain/gen_tokens.py: Embedding,
# TransformerEncoder, Linear) whose int64 or int32 input [data] feeds from
# integer .npy features unchanged; float features for it are refused.
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

# ---- token ids: integer features reach an integer input unchanged ----------------

for pair in tokens.onnx:tokens_x.npy tokens_i32.onnx:tokens_x32.npy \
    tokens.onnx:tokens_x32.npy; do
    model=${pair%%:*} x=${pair##*:}
    for backend in cpu ipumodel; do
        onnx_sgd_run "$tmp/run.ini" "$backend" "$T/$model" 12 4 "$T/$x" \
            "$T/y.npy" 0.05 "$tmp"
        if ! "$POPC" train "$tmp/run.ini" --quiet --json "$tmp/train.json" \
            >"$tmp/err.txt" 2>&1; then
            fail "$model on $x ($backend) failed"
            head -5 "$tmp/err.txt"
            continue
        fi
        if losses_close "$tmp/train.json" "$T/tokens_losses.txt" 1e-4 \
            >"$tmp/diff.txt"; then
            pass "$model trains on $x ($backend) with PyTorch's losses ($(cat "$tmp/diff.txt"))"
        else
            fail "$model on $x ($backend) differs from PyTorch: $(cat "$tmp/diff.txt")"
        fi
    done
done
# the trained model classifies integer test data (evaluation and popc infer)
onnx_sgd_run "$tmp/run.ini" cpu "$T/tokens.onnx" 12 4 "$T/tokens_x.npy" \
    "$T/y.npy" 0.05 "$tmp"
cd "$tmp" || exit 99
expect 0 "token model evaluated on integer test data" "$POPC" train run.ini \
    --set data.test="$T/tokens_x.npy" --set data.test_labels="$T/y.npy" \
    --set train.evaluate=true
contains out.txt "test accuracy" "the evaluation ran"
expect 0 "popc infer of the trained token model" "$POPC" infer trained.ini \
    --set data.test="$T/tokens_x.npy" --set data.test_labels="$T/y.npy"
contains out.txt "classified 32 samples" "every sample classified"
# float features cannot be token ids (mean and std make them float)
expect 2 "float features for an int64 input" "$POPC" train run.ini \
    --set data.mean=0 --set data.std=1
contains err.txt "the data's features are float32, but the model's input is int64" \
    "float features for token ids are refused"
contains err.txt "tokens_x.npy" "the refusal names the data file"
finish
