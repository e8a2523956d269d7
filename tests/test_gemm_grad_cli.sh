#!/bin/sh
# test_gemm_grad_cli.sh - through the popc command: the transformer that
# torch exported for training (tests/onnx/seqtrain/transformer.onnx: its
# Linear layers are MatMul + bias Add on [batch, seq, features], its head
# a Gemm) trains on ipumodel with enableProfiling. At optimizationLevel 2
# (the default) every weight gradient with a bias is one
# popc::GemmGradWeightBias node, which the profile lists with its tiles
# and cycles, and no SumToShape is left; at level 0 the MatMul layers keep
# their SumToShape. Both levels train to PyTorch's losses, within 1e-6 of
# each other.
POPC="$POPC_BUILDDIR/tools/popc"
T="$POPC_SRCDIR/tests/onnx/seqtrain"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
. "$POPC_SRCDIR/tests/testlib.sh"

# ops of a profile, "count op" per line
ops_of() {
    grep -o '"op": *"[A-Za-z]*"' "$1" | sed 's/.*"\([A-Za-z]*\)"$/\1/' |
        sort | uniq -c
}
count_of() {
    n=$(ops_of "$1" | awk -v op="$2" '$2 == op { print $1 }')
    echo "${n:-0}"
}

onnx_sgd_run "$tmp/run.ini" ipumodel "$T/transformer.onnx" "12, 8" 4 \
    "$T/x.npy" "$T/y.npy" 0.05 "$tmp"
for level in 2 0; do
    if ! "$POPC" train "$tmp/run.ini" --quiet --json "$tmp/l$level.json" \
        --set options.optimizationLevel=$level \
        --set options.enableProfiling="$tmp/prof$level" \
        >"$tmp/err.txt" 2>&1; then
        fail "training at level $level failed"
        head -5 "$tmp/err.txt"
        continue
    fi
    if losses_close "$tmp/l$level.json" "$T/transformer_losses.txt" 1e-4 \
        >"$tmp/diff.txt"; then
        pass "level $level trains with PyTorch's losses ($(cat "$tmp/diff.txt"))"
    else
        fail "level $level losses differ from PyTorch's: $(cat "$tmp/diff.txt")"
    fi
done
p2="$tmp/prof2/training/profile.json" p0="$tmp/prof0/training/profile.json"
f2=$(count_of "$p2" GemmGradWeightBias) s2=$(count_of "$p2" SumToShape)
f0=$(count_of "$p0" GemmGradWeightBias) s0=$(count_of "$p0" SumToShape)
# 2 encoder layers x 4 Linear (attention's output, 2 feed-forward, input
# projection) and the head
[ "$f2" -ge 9 ] && [ "$s2" -eq 0 ] &&
    pass "level 2: $f2 GemmGradWeightBias nodes, no SumToShape" ||
    fail "level 2: $f2 GemmGradWeightBias nodes, $s2 SumToShape"
[ "$f0" -lt "$f2" ] && [ "$s0" -gt 0 ] &&
    pass "level 0: $f0 GemmGradWeightBias (the Gemms), $s0 SumToShape" ||
    fail "level 0: $f0 GemmGradWeightBias, $s0 SumToShape"
# the IPU model costs and maps the fused node as any matrix op
if grep -o '{[^{}]*"op": "GemmGradWeightBias"[^{}]*}' "$p2" | awk '
    { if (!match($0, /"tiles": [0-9]+/)) exit 1
      if (substr($0, RSTART + 9, RLENGTH - 9) + 0 < 1) exit 1
      if (!match($0, /"flops": [0-9.e+]+/)) exit 1
      if (substr($0, RSTART + 9, RLENGTH - 9) + 0 <= 0) exit 1
      if (!match($0, /"compute": [0-9.e+]+/)) exit 1
      if (substr($0, RSTART + 11, RLENGTH - 11) + 0 <= 0) exit 1
      n++ }
    END { exit n == 0 }'; then
    pass "each GemmGradWeightBias has tiles, flops and compute cycles"
else
    fail "a GemmGradWeightBias lacks tiles, flops or cycles in the profile"
fi
losses_of() {
    sed -n 's/.*"losses": \[\([^]]*\)\].*/\1/p' "$1" | tr ',' '\n' |
        tr -d ' ' | grep .
}
losses_of "$tmp/l2.json" >"$tmp/l2.txt"
losses_of "$tmp/l0.json" >"$tmp/l0.txt"
if paste "$tmp/l2.txt" "$tmp/l0.txt" | awk '
    { d = $1 - $2; m = $2 < 0 ? -$2 : $2
      if (d < 0) d = -d
      if ($1 == "" || $2 == "" || d > 1e-6 * m) bad = 1; n++ }
    END { exit bad || n != 4 }'; then
    pass "levels 2 and 0 give the same 4 losses within 1e-6"
else
    fail "levels 2 and 0 differ: $(tr '\n' ' ' <"$tmp/l2.txt")vs $(tr '\n' ' ' <"$tmp/l0.txt")"
fi
finish
