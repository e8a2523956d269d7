#!/bin/sh
# test_distributed.sh - distributed training over Open MPI (mpirun with
# --oversubscribe: CI machines have fewer cores than ranks).
#
# - Parity: N ranks x R replicas train the same global batches as one
#   process with N x R replicas (tests/dist_train): bitwise on cpu and
#   within 1e-6 on ipumodel, for an MLP with dropout, a CNN and a CNN with
#   BatchNorm, N = 2 and 4. A negative control shows the comparison sees
#   a difference.
# - The CLI: `popc launch -n 2 train` of examples/fashion-mnist-mlp.ini
#   reaches the accuracy of one process with the same global batch (2
#   replicas); rank 0 alone writes outputs.
# - Checkpoints: a 2-rank run killed with SIGKILL resumes to the weights of
#   an uninterrupted 2-rank run; resuming with another process count is
#   refused.
# - Faults: a rank killed, a rank failing, a rank hanging (SIGSTOP) stop
#   every rank within seconds with a message naming the rank; ranks that
#   compile different models are refused; outside mpirun or without the MPI
#   plugin the error says what distributed runs need.
#
# Environment (set by make check): POPC, MAKE_IDX, DIST_TRAIN, MPIRUN,
# POPC_PLUGIN_PATH (with the collectives directory), POPC_SRCDIR.
set -u

: "${POPC:?set POPC}"
: "${MAKE_IDX:?set MAKE_IDX}"
: "${DIST_TRAIN:?set DIST_TRAIN}"
: "${MPIRUN:=mpirun}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-dist-XXXXXX") || exit 99
bg=
cleanup() {
    [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"

# Under AddressSanitizer (the sanitize build of .ci/run) the ranks keep
# every check but leak detection: Open MPI's components are unloaded before
# LeakSanitizer reports, and their blocks cannot be told from popc's.
# popc's own allocations are leak-checked by the single-process runs.
rank_env=
if [ -n "${ASAN_OPTIONS:-}" ]; then
    rank_env="ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"
fi
mpi() {
    env $rank_env "$MPIRUN" --oversubscribe --allow-run-as-root \
        --bind-to none -x POPC_PLUGIN_PATH -x LD_LIBRARY_PATH "$@"
}
launch() {
    env $rank_env "$POPC" launch "$@"
}

# largest absolute difference of two raw float32 files (awk prints it),
# status 0 when within $3
close_floats() {
    od -An -v -f "$1" | tr -s ' ' '\n' | grep . >a.txt
    od -An -v -f "$2" | tr -s ' ' '\n' | grep . >b.txt
    [ "$(wc -l <a.txt)" -eq "$(wc -l <b.txt)" ] && [ -s a.txt ] &&
        paste a.txt b.txt | awk -v tol="$3" '
            { d = $1 - $2; if (d < 0) d = -d; if (d > w) w = d }
            END { printf "largest difference %.3g\n", w; exit !(w <= tol) }'
}

# ---- parity ------------------------------------------------------------------

steps=6
for model in mlp cnn bn; do
    for backend in cpu ipumodel; do
        rm -f one.bin
        "$DIST_TRAIN" $model $backend 4 $steps one.bin >one.out 2>one.err ||
            { fail "$model/$backend: 1 process x 4 replicas"; cat one.err; continue; }
        for n in 2 4; do
            r=$((4 / n))
            rm -f dist.bin
            if ! mpi -np $n "$DIST_TRAIN" $model $backend $r $steps \
                    dist.bin >dist.out 2>dist.err; then
                fail "$model/$backend: $n ranks x $r replicas"
                head -5 dist.err
                continue
            fi
            if [ $backend = cpu ]; then
                cmp -s one.bin dist.bin &&
                    pass "$model/cpu: $n ranks x $r replicas == 1 process x 4 replicas, bitwise" ||
                    fail "$model/cpu: $n ranks x $r replicas differ from 1 process x 4"
            else
                d=$(close_floats one.bin dist.bin 1e-6) &&
                    pass "$model/ipumodel: $n ranks x $r replicas == 1 process x 4 replicas ($d)" ||
                    fail "$model/ipumodel: $n ranks x $r replicas: $d"
            fi
            contains dist.out "checksum" "$model/$backend: rank 0 reports the agreed checksum"
        done
    done
done
# PopTorch's other reduction rules: Sum, and Mean with the Running
# strategy (POPC_DEFAULT_OPTIONS sets them in every rank's options)
for rule in '"Training.accumulationAndReplicationReductionType": "Sum"' \
    '"Training.meanAccumulationAndReplicationReductionStrategy": "Running"'; do
    export POPC_DEFAULT_OPTIONS="{$rule}"
    rm -f one.bin dist.bin
    "$DIST_TRAIN" cnn cpu 4 $steps one.bin >/dev/null 2>one.err &&
        mpi -x POPC_DEFAULT_OPTIONS -np 2 "$DIST_TRAIN" cnn cpu 2 $steps \
            dist.bin >/dev/null 2>dist.err && cmp -s one.bin dist.bin &&
        pass "cnn/cpu with $rule: 2 ranks x 2 == 1 process x 4, bitwise" ||
        { fail "cnn/cpu with $rule"; head -3 one.err dist.err; }
    unset POPC_DEFAULT_OPTIONS
done

# negative control: 2 ranks x 1 replica see other global batches than
# 1 process x 1 replica, so the comparison above must see a difference
"$DIST_TRAIN" mlp cpu 1 $steps one1.bin >/dev/null 2>&1 &&
    mpi -np 2 "$DIST_TRAIN" mlp cpu 1 $steps two1.bin >/dev/null 2>&1 &&
    ! cmp -s one1.bin two1.bin &&
    pass "control: different global batches give different weights" ||
    fail "control: the parity comparison cannot see a difference"

# ---- the CLI on Fashion-MNIST --------------------------------------------------

mlp="$POPC_SRCDIR/examples/fashion-mnist-mlp.ini"
# the whole example (3 epochs); one epoch of 12800 images when sanitized
short=
floor=0.84 gap=0.015
if [ -n "$rank_env" ]; then
    short="--set data.limit=12800 --set train.epochs=1"
    floor=0.75 gap=0.03
fi
# one process with both ranks' replicas reads the same global batches
# ([data] distributed_batches = global)
expect 0 "popc train (1 process, 2 replicas)" "$POPC" train "$mlp" --quiet \
    $short --set options.replicationFactor=2 \
    --set train.weights=one.weights --set train.model=one.ini --json one.json
acc1=$(json_value one.json test_accuracy)
expect 0 "popc launch -n 2 train" launch -n 2 train "$mlp" --quiet $short \
    --set train.weights=two.weights --set train.model=two.ini --json two.json
acc2=$(json_value two.json test_accuracy)
contains out.txt "ranks: 2, all holding identical weights" \
    "rank 0 reports that both ranks hold identical weights"
contains err.txt "mpirun -np 2 --bind-to none" "popc launch shows its mpirun command"
awk -v a="$acc1" -v b="$acc2" -v f="$floor" -v g="$gap" 'BEGIN {
    d = a - b; if (d < 0) d = -d; exit !(a > f && b > f && d < g) }' &&
    pass "2 ranks reach the accuracy of 1 process ($acc2 against $acc1)" ||
    fail "accuracy: 2 ranks $acc2, 1 process $acc1"
[ "$(grep -c '"command"' two.json)" -eq 1 ] &&
    pass "one --json result (rank 0's)" || fail "--json written by several ranks"
[ "$(grep -c '^trained ' out.txt)" -eq 1 ] &&
    pass "one result line (rank 0's)" || fail "several ranks reported"

# ---- checkpoints and resume ------------------------------------------------

"$MAKE_IDX" . 512 128 || { echo "make_idx failed"; exit 99; }
mlp_run run.ini 1 30 3
common="--set train.checkpoint_every=200 --quiet"
expect 0 "uninterrupted 2-rank run" launch -n 2 train run.ini $common \
    --set train.weights=full.weights --set train.model=full.ini \
    --set train.checkpoint=full.ckpt
killed=
for attempt in 1 2 3; do
    rm -rf part.*
    launch -n 2 train run.ini $common --set train.weights=part.weights \
        --set train.model=part.ini --set train.checkpoint=part.ckpt \
        >killed.out 2>killed.err &
    bg=$!
    while [ ! -e part.ckpt/state.ini ] && kill -0 "$bg" 2>/dev/null; do
        sleep 0.05
    done
    sleep 0.2
    victim=$(pgrep -f "train run.ini $common --set train.weights=part" |
        grep -v "^$bg\$" | tail -n 1)
    [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
    wait "$bg"
    rc=$?
    bg=
    # mpirun may return before the ranks it killed are gone; rank 0 holds
    # the checkpoint's lock until it is, and a resume before that is
    # refused, rightly ("another popc process is using this checkpoint")
    for _ in $(seq 100); do
        pgrep -f "train run.ini $common --set train.weights=part" \
            >/dev/null || break
        sleep 0.1
    done
    if [ "$rc" -ne 0 ] && [ -e part.ckpt/state.ini ] && [ ! -e part.weights ]; then
        killed=yes
        break
    fi
done
if [ -n "$killed" ]; then
    pass "a 2-rank run killed with SIGKILL after a checkpoint stops (exit $rc)"
    contains killed.err "rank 1" "mpirun names the killed rank"
    expect 0 "--resume with 2 ranks" launch -n 2 train run.ini $common \
        --set train.weights=part.weights --set train.model=part.ini \
        --set train.checkpoint=part.ckpt --resume
    contains out.txt "resumed from step" "the resumed run says where it resumed"
    same_weights full.weights part.weights &&
        pass "resumed 2-rank weights are bitwise equal to the uninterrupted run's" ||
        fail "resumed 2-rank weights differ"
    expect 2 "--resume with 1 process is refused" "$POPC" train run.ini $common \
        --set train.weights=p1.weights --set train.model=p1.ini \
        --set train.checkpoint=part.ckpt --resume
    contains err.txt "number of processes" "the refusal names the process count"
else
    fail "could not kill a 2-rank run after its first checkpoint"
fi

# ---- faults ------------------------------------------------------------------

t0=$(date +%s)
expect 1 "a rank that fails stops the run" mpi -np 2 "$DIST_TRAIN" mlp cpu 1 \
    100000 f.bin 3
contains err.txt "rank 1" "the failing rank is named"
[ $(($(date +%s) - t0)) -lt 20 ] && pass "stopped within seconds" ||
    fail "a failing rank took $(($(date +%s) - t0)) s to stop the run"

# a hanging rank: rank 1 stopped with SIGSTOP, rank 0 times out
launch -n 2 train run.ini --set train.epochs=1000 --quiet \
    --set options.collectivesTimeout=2 --set train.weights=h.weights \
    --set train.model=h.ini >hang.out 2>hang.err &
bg=$!
sleep 3
victim=$(pgrep -f "train run.ini --set train.epochs=1000" | grep -v "^$bg\$" |
    tail -n 1)
t0=$(date +%s)
[ -n "$victim" ] && kill -STOP "$victim"
# the run must end by itself; the guard only keeps a broken build from
# hanging the suite
( sleep 60; kill -9 "$bg" 2>/dev/null ) &
guard=$!
wait "$bg"
rc=$?
bg=
kill "$guard" 2>/dev/null
[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
[ "$rc" -ne 0 ] && [ $(($(date +%s) - t0)) -lt 30 ] &&
    pass "a hanging rank stops the run ($(($(date +%s) - t0)) s, exit $rc)" ||
    fail "a hanging rank: exit $rc after $(($(date +%s) - t0)) s"
contains hang.err "rank 1 did not answer within 2 s" \
    "the timeout names the rank that hangs"

# the collectives option: a named plugin is used, an unknown one refused
expect 0 "collectives = mpi, named" launch -n 2 train run.ini --quiet \
    --set options.collectives=mpi --set train.epochs=1 \
    --set train.weights=c.weights --set train.model=c.ini
expect 1 "collectives = nccl is refused" launch -n 2 train run.ini --quiet \
    --set options.collectives=nccl --set train.epochs=1 \
    --set train.weights=c.weights --set train.model=c.ini
contains err.txt "collectives = nccl: no loaded plugin provides" \
    "the refusal names the option and the fix"

# different models on different ranks
expect 1 "ranks compiling different models are refused" mpi -np 2 sh -c \
    "exec \"\$0\" train run.ini --quiet --set train.weights=d.weights \
     --set train.model=d.ini --set data.batch_size=\$((1 + OMPI_COMM_WORLD_RANK))" \
    "$POPC"
contains err.txt "differs on rank 1 from rank 0's" "the mismatch names rank 1"

# numProcesses 2 outside mpirun (the MPI plugin does not fit) or without
# the MPI plugin: a clear error, not a hang
plain=$(printf '%s' "$POPC_PLUGIN_PATH" | tr ':' '\n' | grep -v collectives |
    paste -sd:)
for path in "$POPC_PLUGIN_PATH" "$plain"; do
    expect 1 "numProcesses 2 with no collectives that fit" env \
        POPC_PLUGIN_PATH="$path" "$POPC" train run.ini --quiet \
        --set options.Distributed.numProcesses=2 --set train.weights=n.weights \
        --set train.model=n.ini
    contains err.txt "needs a collectives plugin" "the error says what is missing"
done

finish
