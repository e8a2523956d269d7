#!/bin/sh
# test_hostile.sh - hostile but well-formed files (tests/hostile/gen_onnx.py,
# tests/hostile/gen_exe.py, and the options, JSON, .npy and gzip IDX
# inputs tests/hostile/hostile.c writes) give a clean error naming the file and the limit, or the correct
# result: through `popc infer` (exit status 2, the limits raised by their
# POPC_MAX_* variables) and in process (popc_limit_set), once with the
# default stack, once with a 1 MiB stack (ulimit -s 1024), and on 4
# threads at once. CI runs it under ASan/UBSan and ThreadSanitizer too.
POPC="$POPC_BUILDDIR/tools/popc"
CLOSE="$POPC_BUILDDIR/tests/onnx/npy_close"
HOSTILE="$POPC_BUILDDIR/tests/hostile/hostile"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"
H="$tmp/h"
python3 "$POPC_SRCDIR/tests/hostile/gen_onnx.py" "$H" || exit 99
# executables: a real one (popc compile), its graph section replaced
cat >run.ini <<'EOF'
[options]
backend = cpu
[data]
batch_size = 2
[model]
input = 4
classes = 2
layers = fc
[layer fc]
type = linear
out_features = 2
EOF
"$POPC" compile run.ini -o tiny.popc >/dev/null &&
    python3 "$POPC_SRCDIR/tests/hostile/gen_exe.py" tiny.popc "$H" || exit 99

# refused NAME FILE TEXT [VAR=VALUE...]: popc infer exits 2 naming FILE
# and TEXT
refused() {
    what=$1 file=$2 text=$3
    shift 3
    expect 2 "$what" env "$@" "$POPC" infer "$H/$file" -o "out/$file"
    contains err.txt "$H/$file: " "$what: the error names the file"
    contains err.txt "$text" "$what: the error says why"
}

# correct NAME MODEL [VAR=VALUE...]: popc infer (with input x from
# MODEL.x.npy when there is one) writes y.npy equal to the generator's
# hand-computed MODEL.y.npy
correct() {
    what=$1 model=$2
    shift 2
    set -- "$@" "$POPC" infer "$H/$model.onnx" -o "out/$model" --backend cpu
    [ -f "$H/$model.x.npy" ] && set -- "$@" -i "x=$H/$model.x.npy"
    expect 0 "$what" env "$@"
    if "$CLOSE" "out/$model/y.npy" "$H/$model.y.npy" 0 >diff.txt 2>&1; then
        pass "$what: y is right ($(cat diff.txt))"
    else
        fail "$what: y differs: $(cat diff.txt)"
    fi
}

cli_cases() {
    refused "If nested 3000 deep" if_3000.onnx \
        "subgraphs (If, Loop or Scan bodies) nested too deep: 33, over popc's limit of 32 (POPC_MAX_NESTING)"
    refused "If nested 40 deep" if_40.onnx "POPC_MAX_NESTING=N"
    correct "If nested 40 deep, POPC_MAX_NESTING=64" if_40 POPC_MAX_NESTING=64
    refused "GRAPHS nested 3000 deep" graphs_3000.onnx "(POPC_MAX_NESTING)"
    refused "type nested 100000 deep" type_100000.onnx \
        "over popc's limit of 128 (POPC_MAX_MESSAGE_DEPTH)"
    correct "2000-node chain" chain_2000
    correct "20000 initializers on a 20000-node chain" chain_20000
    correct "20000-node chain kept whole (x is an input)" chain_input_20000
    refused "2000-node chain, POPC_MAX_NODES=1000" chain_2000.onnx \
        "too many nodes: 1001, over popc's limit of 1000 (POPC_MAX_NODES)" \
        POPC_MAX_NODES=1000
    refused "POPC_MAX_NESTING=abc" if_40.onnx \
        "POPC_MAX_NESTING='abc' is not a positive integer, so the default applies" \
        POPC_MAX_NESTING=abc
    refused "POPC_MAX_MESSAGES=1000" chain_2000.onnx "(POPC_MAX_MESSAGES)" \
        POPC_MAX_MESSAGES=1000
    refused "POPC_MAX_INITIALIZER_BYTES=1000" chain_20000.onnx \
        "(POPC_MAX_INITIALIZER_BYTES)" POPC_MAX_INITIALIZER_BYTES=1000
    refused "POPC_MAX_ATTRIBUTE_ELEMENTS=100" attr_200.onnx \
        "an attribute list with too many values: 200" \
        POPC_MAX_ATTRIBUTE_ELEMENTS=100
    correct "100 KiB names" names_100k
    correct "100000 unknown fields" unknown_fields
    refused "100000 unknown fields, POPC_MAX_MESSAGES=1000" \
        unknown_fields.onnx "unknown fields: 1001, over popc's limit of 1000" \
        POPC_MAX_MESSAGES=1000
    refused "2 MiB name" name_2m.onnx "(POPC_MAX_STRING_BYTES)"
    refused "dims claiming 2^40 values" dims_huge.onnx \
        "initializer 'big': its shape needs 4398046511104 bytes of float data but 4 are present"
    refused "cycle" cycle.onnx "reads 'b'"
    refused "external data through a symlinked folder" ext_link_dir.onnx \
        "through a symbolic link"
    refused "external data at /dev/zero" ext_devzero.onnx \
        "leaves the model's folder"
    correct "external data inside the folder" ext_ok
    correct "Loop of 10 trips" loop_10
    refused "Loop that never stops, POPC_MAX_LOOP_TRIPS=1000" \
        loop_forever.onnx "still running after 1000 iterations" \
        POPC_MAX_LOOP_TRIPS=1000
    refused "Loop with 2^40 scan values" loop_scan_huge.onnx \
        "M = 1099511627776 iterations, over popc's limit of 1048576 (POPC_MAX_LOOP_TRIPS)"
}

exe_cases() {
    expect 1 "executable nested 3000 deep" "$POPC" run "$H/exe_nest_3000.popc" -o out/e
    contains err.txt "exe_nest_3000.popc': section 'GRPH', at byte 2739: subgraphs are nested deeper than popc's limit (POPC_MAX_NESTING" \
        "executable nested 3000 deep: the error names the file and the limit"
    expect 1 "executable of 2000 nodes, POPC_MAX_NODES=1000" \
        env POPC_MAX_NODES=1000 "$POPC" run "$H/exe_nodes_2000.popc" -o out/e
    contains err.txt "a graph has more nodes than popc's limit (POPC_MAX_NODES" \
        "executable of 2000 nodes: the error names the limit"
    expect 1 "executable claiming 2^32-1 values" "$POPC" run "$H/exe_values_claim.popc" -o out/e
    contains err.txt "a count is larger than the data that follows" \
        "executable claiming 2^32-1 values: the error says why"
    expect 0 "executable reassembled unchanged runs" "$POPC" run "$H/exe_same.popc" -o out/same
}

cli_cases
exe_cases
if "$HOSTILE" "$H" 4 >hostile.txt 2>&1; then
    pass "in process, 4 threads: $(grep -c '^ok' hostile.txt) checks"
else
    fail "in process"
fi
cat hostile.txt

# The same with a 1 MiB stack: nothing recurses once per level of input.
# (The stack limit is set in a subshell, for popc and hostile only.)
if (ulimit -s 1024 && "$HOSTILE" "$H" >small.txt 2>&1); then
    pass "in process, 1 MiB stack: $(grep -c '^ok' small.txt) checks"
else
    fail "in process, 1 MiB stack"
    grep -v '^ok' small.txt | head -20
fi
for f in if_3000.onnx graphs_3000.onnx type_100000.onnx name_2m.onnx \
    chain_20000.onnx chain_input_20000.onnx exe_nest_3000.popc; do
    case $f in
    chain_input*) set -- infer "$H/$f" --backend cpu \
        -i "x=$H/${f%.onnx}.x.npy" ;;
    *.onnx) set -- infer "$H/$f" --backend cpu ;;
    *) set -- run "$H/$f" ;;
    esac
    (ulimit -s 1024 && "$POPC" "$@" -o "small/$f" >small.out 2>small.err)
    rc=$?
    if [ "$rc" -le 2 ]; then
        pass "1 MiB stack: popc $1 $f exits $rc"
    else
        fail "1 MiB stack: popc $1 $f exits $rc: $(head -c 300 small.err)"
    fi
done
finish
