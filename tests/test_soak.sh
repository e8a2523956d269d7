#!/bin/sh
# test_soak.sh - training killed with SIGKILL at 50 random moments (cpu
# backend, a checkpoint every 3 steps, so most kills land in the middle of
# writing one), each run resumed with --resume to the end: the final
# weights must be bitwise equal to an uninterrupted run's every time, and
# no temporary file or directory may be left behind.
#
# Environment (set by make check): POPC, MAKE_IDX, POPC_PLUGIN_PATH,
# POPC_SRCDIR.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"
KILLS=${POPC_SOAK_KILLS:-50}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-soak-XXXXXX") || exit 99
bg=
cleanup() {
    [ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"
"$MAKE_IDX" . 256 64 || { echo "make_idx failed"; exit 99; }
mlp_run run.ini 2 3 5

# train OUT [popc train options...]
train() {
    out=$1
    shift
    "$POPC" train run.ini --quiet --set train.weights="$out.weights" \
        --set train.model="$out.model.ini" "$@"
}

train full >full.log 2>&1 || { cat full.log; echo "FAIL: uninterrupted run"; exit 1; }
train timed --set train.checkpoint=timed.ckpt --checkpoint-every 3 \
    >timed.log 2>&1 || { cat timed.log; echo "FAIL: checkpointed run"; exit 1; }
same_weights full.weights timed.weights ||
    { echo "FAIL: checkpoints change the trained weights"; exit 1; }
steps=384 # 3 epochs of 256 samples in batches of 2

# The step of the newest checkpoint in k.ckpt (0 when there is none yet).
ckpt_step() {
    s=$(sed -n 's/^step = //p' k.ckpt/state.ini 2>/dev/null)
    echo "${s:-0}"
}

# Kill moments are random points of progress, not of time, so that a
# loaded machine still kills mid-run: once the checkpoint has reached a
# random step, a random 0-30 ms more, then SIGKILL.
echo "killing $KILLS checkpointed runs of $steps steps at random moments"
failures=0 killed=0 resumed_mid=0
i=0
while [ "$i" -lt "$KILLS" ]; do
    i=$((i + 1))
    rm -rf k.weights k.ckpt k.model.ini
    target=$(awk -v s="$i" -v n="$steps" 'BEGIN { srand(s); print int(1 + rand() * (n - 10)) }')
    delay=$(awk -v s="$i" 'BEGIN { srand(s * 7 + 1); printf "%.3f", rand() * 0.03 }')
    "$POPC" train run.ini --quiet --set train.weights=k.weights \
        --set train.model=k.model.ini --set train.checkpoint=k.ckpt \
        --checkpoint-every 3 >kill.log 2>&1 &
    bg=$!
    while [ "$(ckpt_step)" -lt "$target" ] && kill -0 "$bg" 2>/dev/null; do
        sleep 0.005
    done
    sleep "$delay"
    kill -9 "$bg" 2>/dev/null
    wait "$bg" 2>/dev/null
    rc=$?
    bg=
    [ "$rc" -eq 137 ] && killed=$((killed + 1))
    if ! train k --set train.checkpoint=k.ckpt --checkpoint-every 3 \
        --resume --json resume.json >resume.log 2>&1; then
        failures=$((failures + 1))
        echo "FAIL: kill $i (step $target + ${delay} s, exit $rc): resume failed"
        sed 's/^/    | /' resume.log | head -5
        continue
    fi
    grep -q '"resumed_step": [1-9]' resume.json && resumed_mid=$((resumed_mid + 1))
    if ! same_weights full.weights k.weights; then
        failures=$((failures + 1))
        echo "FAIL: kill $i (step $target + ${delay} s): resumed weights differ"
    fi
    left=$(ls -a | grep -c '\.tmp-')
    if [ "$left" -ne 0 ]; then
        failures=$((failures + 1))
        echo "FAIL: kill $i: temporary files left behind: $(ls -a | grep '\.tmp-')"
    fi
done
echo "$KILLS runs: $killed killed mid-run, $resumed_mid resumed from a checkpoint, $failures failed"
# most kills must land while training (not before it or after it ended)
if [ "$killed" -lt $((KILLS * 3 / 4)) ] || [ "$resumed_mid" -lt $((KILLS / 2)) ]; then
    echo "FAIL: too few kills landed mid-run to mean anything"
    failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "PASS: every resumed run ended bitwise equal" 
[ "$failures" -eq 0 ]
