#!/bin/sh
# test_distributed_batches.sh - the README's promise, through `popc train`:
# N ranks x R replicas train bit for bit like one process with N x R
# replicas ([data] distributed_batches = global, the default).
#
# One run file (an MLP with dropout, Adam, shuffled, 2 device iterations x
# gradient accumulation 2, rows left over at every epoch end) trains for
# 2 epochs as 1 process x 4 replicas, 2 ranks x 2 (popc launch) and
# 4 ranks x 1 (plain mpirun), on cpu and ipumodel; every weight file must
# be byte for byte the same. So must a CNN with BatchNorm under the Sum
# reduction with asynchronous loading (1 x 4 against 2 x 2, ipumodel),
# running statistics included. A negative control: PopTorch's contiguous
# blocks (distributed_batches = blocks) read other batches, and the
# comparison sees it.
#
# Environment (set by make check): POPC, MAKE_IDX, MPIRUN,
# POPC_PLUGIN_PATH (with the collectives directory), POPC_SRCDIR.
set -u

: "${POPC:?set POPC}"
: "${MAKE_IDX:?set MAKE_IDX}"
: "${MPIRUN:=mpirun}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-dist-batches-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"

# see test_distributed.sh: Open MPI's components defeat leak detection
rank_env=
if [ -n "${ASAN_OPTIONS:-}" ]; then
    rank_env="ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"
fi
mpi() {
    env $rank_env "$MPIRUN" --oversubscribe --allow-run-as-root \
        --bind-to none -x POPC_PLUGIN_PATH -x LD_LIBRARY_PATH "$@"
}

"$MAKE_IDX" . 520 64 || { echo "make_idx failed"; exit 99; }

# 520 rows, global batch 3 x 2 x 2 x 4 = 48: 10 steps an epoch, 40 rows
# left over (PopTorch's blocks would alternate them in)
cat >run.ini <<INI
[options]
deviceIterations = 2
Training.gradientAccumulation = 2
randomSeed = 7
[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
test = t10k-images-idx3-ubyte.gz
test_labels = t10k-labels-idx1-ubyte
batch_size = 3
shuffle = true
seed = 5
[optimizer]
name = adam
lr = 0.01
[train]
epochs = 2
[model]
input = 64
classes = 4
layers = fc1, relu, drop, fc2
[layer fc1]
type = linear
out_features = 16
[layer drop]
type = dropout
p = 0.25
[layer fc2]
type = linear
out_features = 4
INI

# train NAME BACKEND RANKS REPLICAS [--set ...]: weights in NAME.weights
train() {
    name=$1 backend=$2 ranks=$3 replicas=$4
    shift 4
    set -- train run.ini --quiet --set options.backend="$backend" \
        --set options.replicationFactor="$replicas" \
        --set train.weights="$name.weights" --set train.model="$name.ini" \
        "$@"
    case $ranks in
    1) "$POPC" "$@" ;;
    2) env $rank_env "$POPC" launch -n 2 "$@" ;;
    *) mpi -np "$ranks" "$POPC" "$@" ;;
    esac >"$name.out" 2>"$name.err"
}

for backend in cpu ipumodel; do
    if ! train "one-$backend" $backend 1 4; then
        fail "$backend: 1 process x 4 replicas"
        head -5 "one-$backend.err"
        continue
    fi
    for ranks in 2 4; do
        r=$((4 / ranks))
        name="r$ranks-$backend"
        if ! train "$name" $backend $ranks $r; then
            fail "$backend: $ranks ranks x $r replicas"
            head -5 "$name.err"
            continue
        fi
        contains "$name.out" "ranks: $ranks, all holding identical weights" \
            "$backend: the $ranks ranks agree on their weights"
        same_weights "one-$backend.weights" "$name.weights" &&
            pass "$backend: popc train with $ranks ranks x $r replicas == 1 process x 4 replicas, bit for bit" ||
            fail "$backend: $ranks ranks x $r replicas train other weights than 1 process x 4"
    done
done

# every .npy of two weights folders byte for byte equal (and as many)
same_dirs() {
    [ "$(ls "$1" | wc -l)" -eq "$(ls "$2" | wc -l)" ] || return 1
    for f in "$1"/*.npy; do
        cmp -s "$f" "$2/$(basename "$f")" || return 1
    done
}

# a CNN with BatchNorm (its running statistics follow global replica 0),
# PopTorch's Sum reduction and batches prepared on worker threads, on the
# default backend
cat >cnn.ini <<INI
[options]
backend = ipumodel
Training.gradientAccumulation = 2
Training.accumulationAndReplicationReductionType = Sum
[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
batch_size = 4
shuffle = true
seed = 9
mode = async
workers = 2
[optimizer]
name = sgd
lr = 0.01
momentum = 0.9
[train]
epochs = 1
[model]
input = 1, 8, 8
classes = 4
layers = conv, bn, relu, flatten, fc
[layer conv]
type = conv2d
out_channels = 4
kernel = 3
padding = 1
[layer bn]
type = batchnorm2d
[layer fc]
type = linear
out_features = 4
INI
cnn() {
    name=$1 ranks=$2 replicas=$3
    set -- train cnn.ini --quiet --set options.replicationFactor="$replicas" \
        --set train.weights="$name.weights" --set train.model="$name.ini"
    case $ranks in
    1) "$POPC" "$@" ;;
    *) mpi -np "$ranks" "$POPC" "$@" ;;
    esac >"$name.out" 2>"$name.err"
}
if cnn cnn1 1 4 && cnn cnn2 2 2; then
    [ -e cnn1.weights/bn.running_mean.npy ] &&
        same_dirs cnn1.weights cnn2.weights &&
        pass "CNN with BatchNorm, Sum, async loading: 2 ranks x 2 == 1 process x 4, bit for bit (running statistics included)" ||
        fail "CNN with BatchNorm: 2 ranks x 2 train other weights than 1 process x 4"
else
    fail "CNN with BatchNorm: a run failed"
    head -5 cnn1.err cnn2.err
fi

# negative control: PopTorch's blocks give each rank other rows, so the
# comparison above can see a difference
if train blocks cpu 2 2 --set data.distributed_batches=blocks; then
    same_weights one-cpu.weights blocks.weights &&
        fail "control: distributed_batches = blocks gave the same weights" ||
        pass "control: distributed_batches = blocks reads other batches and trains other weights"
else
    fail "control: 2 ranks with distributed_batches = blocks"
    head -5 blocks.err
fi

expect 2 "distributed_batches takes global or blocks" "$POPC" train run.ini \
    --quiet --set data.distributed_batches=interleaved
contains err.txt "distributed_batches" "the error names the key"

finish
