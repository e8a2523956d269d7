#!/bin/sh
# test_exe_cli.sh - `popc compile`, `popc run` and `popc inspect`: export a
# run file's model (inference and training, and for the offline target),
# describe it, run it on zeros and on .npy inputs, continue training from a
# saved file with the same losses as an uninterrupted run (cpu backend),
# the executable cache through POPC_CACHE_DIR, and the errors (exit 2 for
# usage and inputs that do not fit, 1 for missing or corrupt files).
#
# Environment (set by make check): POPC (the built popc), MAKE_IDX (the
# dataset writer), POPC_PLUGIN_PATH.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-exe-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"

# same FILE1 FILE2 DESCRIPTION: byte for byte
same() {
    if cmp -s "$1" "$2"; then
        pass "$3"
    else
        fail "$3: $1 and $2 differ"
    fi
}

# npy_f32 FILE ROWS COLS BYTE4: a float32 .npy (version 1.0) filled with
# one little-endian 4-byte pattern, e.g. '\000\000\200\077' for 1.0
npy_f32() {
    header="{'descr': '<f4', 'fortran_order': False, 'shape': ($2, $3), }"
    # magic (6) + version (2) + length (2) + header + '\n', padded to 64
    total=$((10 + ${#header} + 1))
    pad=$(( (64 - total % 64) % 64 ))
    len=$(( ${#header} + pad + 1 ))
    {
        printf '\223NUMPY\001\000'
        printf "\\$(printf '%03o' $((len % 256)))\\$(printf '%03o' $((len / 256)))"
        printf '%s' "$header"
        printf "%${pad}s\n" ""
        n=$(($2 * $3))
        i=0
        while [ $i -lt $n ]; do
            printf "$4"
            i=$((i + 1))
        done
    } >"$1"
}

# The loss a run prints for run N: "  <name>: float32[] mean X (value X)"
loss_of() {
    awk -v want="run $2:" '$0 == want { getline; sub(/\)$/, "", $NF);
        print $NF; exit }' "$1"
}

"$MAKE_IDX" . 256 64 || { echo "make_idx failed"; exit 99; }

cat >run.ini <<'EOF'
# a small MLP on the synthetic 4-class 8x8 dataset
[options]
backend = cpu
deviceIterations = 2

[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
test = t10k-images-idx3-ubyte.gz
test_labels = t10k-labels-idx1-ubyte
batch_size = 8

[optimizer]
name = adam
lr = 0.01

[model]
input = 64
classes = 4
seed = 5
layers = fc1, relu, fc2

[layer fc1]
type = linear
out_features = 16

[layer fc2]
type = linear
out_features = 4
EOF

# ---- usage ------------------------------------------------------------------

expect 0 "compile --help" "$POPC" compile --help
contains out.txt "compileAndExport" "compile --help says what it is"
expect 0 "help run" "$POPC" help run
contains out.txt "--save FILE" "run --help lists its options"
expect 0 "inspect --help" "$POPC" inspect --help
expect 2 "compile without -o" "$POPC" compile run.ini
contains err.txt "-o FILE" "compile without -o says how"
expect 2 "compile without run file" "$POPC" compile -o x.popc
expect 2 "run without file" "$POPC" run
expect 2 "inspect without file" "$POPC" inspect
expect 2 "bad --runs" "$POPC" run x.popc --runs 0

# ---- inference: compile, inspect, run ----------------------------------------

expect 0 "compile (inference)" "$POPC" compile run.ini -o out/model.popc
contains out.txt "for inference on backend cpu" "compile reports the backend"
contains out.txt "wrote out/model.popc" "compile names the file"
[ -s out/model.popc ] && pass "the executable exists" ||
    fail "out/model.popc was not written"

expect 0 "inspect" "$POPC" inspect out/model.popc
contains out.txt "format version 1, written by popc" "inspect: versions"
contains out.txt ", inference," "inspect: inference model"
contains out.txt "x: float32[16, 64]" "inspect: combined-batch input shape"
contains out.txt "backend: cpu" "inspect: backend"
contains out.txt "memory on IPU0" "inspect: memory per IPU"
contains out.txt "fc1.weight float32[16, 64]" "inspect: weights"
contains out.txt "deviceIterations=2" "inspect: options set"
contains out.txt "WGHT" "inspect: section table"

expect 0 "run on zeros" "$POPC" run out/model.popc -o zeros
contains out.txt "run 1:" "run prints the run"
contains out.txt "float32[16, 4]" "run: output shape (combined batch)"
out_npy=$(ls zeros/*.npy 2>/dev/null | head -n 1)
[ -n "$out_npy" ] && pass "run -o writes the output" ||
    fail "run -o wrote no .npy"

npy_f32 zero.npy 16 64 '\000\000\000\000'
expect 0 "run on a zero .npy" "$POPC" run out/model.popc zero.npy -o given
same "$out_npy" "given/$(basename "$out_npy")" \
    "explicit zero input gives the same output as the default zeros"
npy_f32 ones.npy 16 64 '\000\000\200\077'
expect 0 "run on ones" "$POPC" run out/model.popc ones.npy -o ones
cmp -s "$out_npy" "ones/$(basename "$out_npy")" &&
    fail "the output does not depend on the input" ||
    pass "other inputs give other outputs"
npy_f32 wrong.npy 8 64 '\000\000\000\000'
expect 2 "input of the wrong shape" "$POPC" run out/model.popc wrong.npy
contains err.txt "compiled for float32[16, 64]" "wrong shape names both shapes"
expect 2 "too many inputs" "$POPC" run out/model.popc zero.npy zero.npy
expect 0 "run on ipumodel" "$POPC" run out/model.popc ones.npy \
    --backend ipumodel -o ipu
expect 2 "bad --option" "$POPC" run out/model.popc --option nonsense
expect 2 "unknown --option" "$POPC" run out/model.popc --option noSuch=1

# ---- the offline target -------------------------------------------------------

expect 0 "compile for the offline target" "$POPC" compile run.ini \
    -o off.popc --set options.useOfflineIpuTarget=2
expect 0 "inspect offline" "$POPC" inspect off.popc
contains out.txt "backend: offline, IPU version 2" "offline plan is described"
expect 0 "run an offline executable on cpu" "$POPC" run off.popc ones.npy \
    --backend cpu -o offcpu
same "ones/$(basename "$out_npy")" "offcpu/$(basename "$out_npy")" \
    "offline export runs like the cpu compile"
expect 0 "run an offline executable (ipumodel)" "$POPC" run off.popc

# ---- training: continue from a saved file ------------------------------------

expect 0 "compile (training)" "$POPC" compile run.ini -o train.popc --train
expect 0 "inspect training" "$POPC" inspect train.popc
contains out.txt ", training," "inspect: training model"
contains out.txt "optimizer: adam" "inspect: optimizer"
contains out.txt "labels: int32[16]" "inspect: labels input"
expect 0 "train 3 runs" "$POPC" run train.popc --runs 3
cp out.txt three.txt
expect 0 "train 1 run and save" "$POPC" run train.popc --save step1.popc
expect 0 "continue 2 runs from the saved file" "$POPC" run step1.popc --runs 2
cp out.txt cont.txt
l3=$(loss_of three.txt 3)
c2=$(loss_of cont.txt 2)
[ -n "$l3" ] && [ "$l3" = "$c2" ] &&
    pass "continued training gives the uninterrupted loss ($l3)" ||
    fail "continued training: loss '$c2', uninterrupted '$l3'"
expect 0 "inspect the trained file" "$POPC" inspect step1.popc
contains out.txt "random state: 1 runs done" "the run counter is saved"

# ---- damaged and missing files --------------------------------------------------

expect 1 "missing executable" "$POPC" run nope.popc
contains err.txt "nope.popc" "missing file is named"
cp out/model.popc bad.popc
size=$(wc -c <bad.popc)
printf '\377' | dd of=bad.popc bs=1 seek=$((size / 2)) conv=notrunc \
    2>/dev/null
expect 1 "corrupt executable" "$POPC" run bad.popc
contains err.txt "CRC32" "corruption is found by the CRC"
expect 1 "inspect a corrupt executable" "$POPC" inspect bad.popc
head -c 200 out/model.popc >short.popc
expect 1 "truncated executable" "$POPC" inspect short.popc
contains err.txt "truncated" "truncation is reported"
expect 1 "not an executable" "$POPC" inspect run.ini
contains err.txt "not a popc executable" "a foreign file is recognised"

# ---- the executable cache ---------------------------------------------------------

expect 0 "compile with a cold cache" env POPC_CACHE_DIR="$tmp/cache" \
    POPC_LOG_LEVEL=INFO "$POPC" compile run.ini -o c1.popc
contains err.txt "executable cache miss" "cold cache misses"
expect 0 "compile with a warm cache" env POPC_CACHE_DIR="$tmp/cache" \
    POPC_LOG_LEVEL=INFO "$POPC" compile run.ini -o c2.popc
contains err.txt "executable cache hit: $tmp/cache/" "warm cache hits"
expect 0 "run the executable compiled from the cache" "$POPC" run c2.popc \
    ones.npy -o cached
same "ones/$(basename "$out_npy")" "cached/$(basename "$out_npy")" \
    "the cache hit runs like a fresh compile"
# two processes at once: the entry's lock makes one compile and one hit
env POPC_CACHE_DIR="$tmp/cache2" POPC_LOG_LEVEL=INFO "$POPC" compile \
    run.ini -o p1.popc >p1.out 2>p1.err &
env POPC_CACHE_DIR="$tmp/cache2" POPC_LOG_LEVEL=INFO "$POPC" compile \
    run.ini -o p2.popc >p2.out 2>p2.err &
wait
n_miss=$(cat p1.err p2.err | grep -c "executable cache miss")
n_hit=$(cat p1.err p2.err | grep -c "executable cache hit")
[ "$n_miss" -eq 1 ] && [ "$n_hit" -eq 1 ] &&
    pass "concurrent compiles: one miss, one hit" ||
    fail "concurrent compiles: $n_miss misses and $n_hit hits, want 1 and 1"
entry=$(ls cache/*.popcexe | head -n 1)
expect 0 "inspect a cache entry" "$POPC" inspect "$entry"
contains out.txt "a cache entry" "a cache entry is labelled"
expect 1 "a cache entry is not loadable alone" "$POPC" run "$entry"
contains err.txt "popc_model_load_executable" \
    "loading a cache entry says what to do instead"

finish
