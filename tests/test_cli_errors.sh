#!/bin/sh
# test_cli_errors.sh - bad values through the popc command: each exits 2
# (usage or configuration error, docs/ini-format.md "Exit status") and
# says what is valid; an error about a file names the file.
#   - an unknown backend lists the registered ones (train, infer);
#   - useIpuId=99 lists the device ids;
#   - an unknown [optimizer] key suggests the closest attribute;
#   - popc infer MODEL.onnx: a wrong input name lists the model's inputs,
#     and a file of the wrong shape or dtype is named;
#   - a missing data file, weights folder or input file is named.
set -u
: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"
M="$POPC_SRCDIR/tests/onnx/models"
D="$POPC_SRCDIR/tests/onnx/dtypes"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-cli-errors-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

"$MAKE_IDX" . 64 32 || { echo "make_idx failed"; exit 99; }
mlp_run run.ini 8 1 1

# ---- option values ------------------------------------------------------------

expect 2 "train: unknown backend" "$POPC" train run.ini \
    --set options.backend=nosuch
contains err.txt "backend 'nosuch' is not registered" "unknown backend named"
contains err.txt "the registered backends are 'cpu'" \
    "unknown backend: the registered backends are listed"
contains err.txt "'ipumodel'" "the list holds ipumodel too"
expect 2 "infer MODEL.onnx: unknown backend" "$POPC" infer \
    "$M/small_cnn.onnx" -i "input=$M/small_cnn.input.npy" -o out \
    --backend nosuch
contains err.txt "the registered backends are 'cpu'" \
    "infer: the registered backends are listed"

expect 2 "useIpuId=99" "$POPC" train run.ini \
    --set options.backend=ipumodel --set options.useIpuId=99
contains err.txt "useIpuId(99): the ipumodel backend has no device 99" \
    "useIpuId=99 is named"
contains err.txt "ids 0-15 are single IPUs" "useIpuId=99: valid ids listed"
expect 2 "useIpuId on the cpu backend" "$POPC" train run.ini \
    --set options.useIpuId=0
contains err.txt "the cpu backend models no IPU device" \
    "useIpuId on cpu says why"

expect 2 "unknown [optimizer] key" "$POPC" train run.ini \
    --set optimizer.betas1=0.9
contains err.txt "Unknown attribute betas1" "unknown optimizer key named"
contains err.txt "did you mean 'beta1'?" "unknown optimizer key: did you mean"
contains err.txt "allowed values: ['lr'" "unknown optimizer key: valid keys"

expect 2 "misspelt option" "$POPC" train run.ini \
    --set options.deviceIteration=2
contains err.txt "did you mean 'deviceIterations'" "misspelt option: did you mean"
expect 2 "misspelt [data] key" "$POPC" train run.ini --set data.batch_sz=4
contains err.txt "did you mean 'batch_size'" "misspelt key: did you mean"
contains err.txt "valid keys:" "misspelt key: the valid keys are listed"

# ---- popc infer MODEL.onnx -i NAME=FILE.npy ------------------------------------

expect 2 "wrong input name" "$POPC" infer "$M/small_cnn.onnx" \
    -i "image=$M/small_cnn.input.npy" -o out
contains err.txt "has no graph input named 'image'; its inputs are 'input'" \
    "wrong input name: the model's inputs are listed"
contains err.txt "-i image=$M/small_cnn.input.npy" \
    "wrong input name: the argument is quoted"
expect 2 "input file of the wrong shape" "$POPC" infer "$M/small_cnn.onnx" \
    -i "input=$M/small_cnn.output.npy" -o out
contains err.txt "-i input=$M/small_cnn.output.npy" \
    "shape mismatch names the file"
contains err.txt "has rank 4" "shape mismatch says the model's rank"
expect 2 "input file of the wrong dtype" "$POPC" infer \
    "$D/every_dtype.onnx" -i "x_float32=$D/in_float64.npy" -o out
contains err.txt "-i x_float32=$D/in_float64.npy: the file holds float64 but graph input 'x_float32' is float32" \
    "dtype mismatch names the file and both dtypes"
expect 2 "missing input file" "$POPC" infer "$M/small_cnn.onnx" \
    -i "input=nothere.npy" -o out
contains err.txt "nothere.npy" "missing input file named"
[ ! -e out ] && pass "nothing written on errors" ||
    fail "out/ written although every run failed"

# ---- files of run files ----------------------------------------------------------

expect 1 "missing data file" "$POPC" train run.ini \
    --set data.train=nothere-images
contains err.txt "nothere-images" "missing data file named"
expect 1 "weights folder that cannot be made" "$POPC" train run.ini \
    --set train.weights=no/such/dir/w
contains err.txt "no/such/dir/w: cannot create it" \
    "the weights folder is named as given"
expect 1 "--json file that cannot be written" "$POPC" train run.ini \
    --json no/such/dir/t.json
contains err.txt "no/such/dir/t.json" "the --json file is named"
cat >infer.ini <<'INI'
[options]
backend = cpu
[data]
test = t10k-images-idx3-ubyte.gz
test_labels = t10k-labels-idx1-ubyte
batch_size = 8
[model]
input = 64
classes = 4
layers = fc1
[layer fc1]
type = linear
out_features = 4
[infer]
weights = nothere.weights
INI
expect 1 "missing weights folder" "$POPC" infer infer.ini
contains err.txt "nothere.weights" "missing weights folder named"

finish
