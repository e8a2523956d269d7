#!/bin/sh
# test_kernels_cli.sh - kernels chosen per node at compile, through the
# popc command (docs/kernels.md): an ONNX CNN whose convolutions suit
# different kernels (tests/onnx/kernels/gen_kernel_mix.py) gives PyTorch's
# outputs with kernelSelection=score (the default) and =reference, on cpu
# and ipumodel, and the two agree; the profile names each node's kernel
# (several nn kernels with score, only "reference" with reference) and
# so does the log;
# popc plugins lists the kernels with their provider; popc options
# documents the switch; a bad value is refused, naming the values.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
M="$POPC_SRCDIR/tests/onnx/kernels"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

close() { # what got want tol
    if "$CLOSE" "$2" "$3" "$4" >diff.txt; then
        pass "$1: $(cat diff.txt)"
    else
        fail "$1: $(cat diff.txt)"
    fi
}

for backend in cpu ipumodel; do
    for sel in score reference; do
        expect 0 "kernel_mix, kernelSelection=$sel on $backend" "$POPC" \
            infer "$M/kernel_mix.onnx" -i "input=$M/kernel_mix.input.npy" \
            -o "out.$sel.$backend" --backend "$backend" \
            --option "kernelSelection=$sel" \
            --option "enableProfiling=prof.$sel.$backend"
        close "$sel on $backend matches PyTorch" \
            "out.$sel.$backend/output.npy" "$M/kernel_mix.output.npy" 1e-4
    done
    close "score and reference agree on $backend" \
        "out.score.$backend/output.npy" "out.reference.$backend/output.npy" \
        1e-4
done

# the ipumodel profile names the kernel of every node
prof=$(find prof.score.ipumodel -name profile.json | head -n 1)
ref=$(find prof.reference.ipumodel -name profile.json | head -n 1)
if [ -n "$prof" ] && [ -n "$ref" ]; then
    kinds=$(grep -o '"kernel": "nn:[a-z_0-9]*"' "$prof" | sort -u | wc -l)
    if [ "$kinds" -ge 3 ]; then
        pass "the profile names $kinds different nn kernels"
    else
        fail "the profile names $kinds nn kernels (want 3 or more): " \
            "$(grep -o '"kernel": "[^"]*"' "$prof" | sort | uniq -c)"
    fi
    if grep -q '"kernel": "nn:' "$ref"; then
        fail "kernelSelection=reference still runs nn kernels"
    elif grep -q '"kernel": "reference"' "$ref"; then
        pass "kernelSelection=reference: every node on its reference"
    else
        fail "the reference profile names no kernel"
    fi
else
    fail "no profile.json under prof.score.ipumodel or prof.reference.ipumodel"
fi

# POPC_LOG_LEVEL=debug logs each choice with its score, trace each candidate
POPC_LOG_LEVEL=trace
export POPC_LOG_LEVEL
expect 0 "kernel_mix with POPC_LOG_LEVEL=trace" "$POPC" infer \
    "$M/kernel_mix.onnx" -i "input=$M/kernel_mix.input.npy" -o out.log
unset POPC_LOG_LEVEL
if grep -q "runs kernel nn:[a-z_0-9]* (score [0-9.]*)" err.txt &&
    grep -q "kernel choice of '.*': nn:[a-z_0-9]* scores" err.txt; then
    pass "the log names each choice and each candidate's score"
else
    fail "no kernel choices in the log: $(grep -i kernel err.txt | head -3)"
fi

# popc plugins lists kernels with their provider and op
expect 0 "popc plugins" "$POPC" plugins
if grep -q 'kernels (8): nn:depthwise (ai.onnx::Conv), nn:winograd_f2' out.txt
then
    pass "popc plugins lists the nn kernels"
else
    fail "popc plugins does not list the nn kernels: $(grep kernels out.txt)"
fi
expect 0 "popc plugins --json" "$POPC" plugins --json plugins.json
if tr -d ' \n' <plugins.json |
    grep -q '"kernels":\["nn:depthwise(ai.onnx::Conv)"'; then
    pass "popc plugins --json lists the kernels"
else
    fail "popc plugins --json has no kernels list"
fi

# popc options documents the switch
expect 0 "popc options" "$POPC" options
if grep -A2 '^kernelSelection (enum, default score)' out.txt |
    grep -q 'values: score | reference'; then
    pass "popc options documents kernelSelection"
else
    fail "popc options: kernelSelection missing or undocumented"
fi

# a bad value is refused, naming the option and its values
expect 2 "kernelSelection=fastest" "$POPC" infer "$M/kernel_mix.onnx" \
    -i "input=$M/kernel_mix.input.npy" -o out.bad \
    --option kernelSelection=fastest
if grep -q "kernelSelection" err.txt && grep -q "reference" err.txt; then
    pass "the refusal names kernelSelection and its values"
else
    fail "the refusal does not explain: $(cat err.txt)"
fi
[ -e out.bad/output.npy ] && fail "a refused run wrote an output"
finish
