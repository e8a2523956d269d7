#!/bin/sh
# test_concurrency.sh - processes sharing files: two runs training into
# the same output names at once each leave complete files (the weights
# directory is one run's or the other's, never a mix, and no temporary is
# left); a second run using a checkpoint that a live run holds is refused;
# processes compiling the same model into one executable cache at once
# all succeed and leave one valid entry that later runs hit.
#
# Environment (set by make check): POPC, MAKE_IDX, POPC_PLUGIN_PATH,
# POPC_SRCDIR.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-concurrency-XXXXXX") || exit 99
pids=
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 99

. "$POPC_SRCDIR/tests/testlib.sh"
"$MAKE_IDX" . 256 64 || { echo "make_idx failed"; exit 99; }
mlp_run run.ini 4 4 1

no_temps() {
    [ "$(ls -a | grep -c '\.tmp-\|\.old-')" -eq 0 ]
}

# ---- the same output names ---------------------------------------------------
"$POPC" train run.ini --quiet --set data.seed=1 --set train.weights=a.weights \
    --set train.model=a.ini >/dev/null 2>&1 || fail "reference run a"
"$POPC" train run.ini --quiet --set data.seed=2 --set train.weights=b.weights \
    --set train.model=b.ini >/dev/null 2>&1 || fail "reference run b"
same_weights a.weights b.weights && fail "the two seeds train the same weights"

rounds=10 mixed=0 broken=0
i=0
while [ "$i" -lt "$rounds" ]; do
    i=$((i + 1))
    for seed in 1 2; do
        "$POPC" train run.ini --quiet --set data.seed=$seed \
            --set train.weights=out.weights --set train.model=out.ini \
            >"run$seed.log" 2>&1 &
        eval "pid$seed=\$!"
    done
    pids="$pid1 $pid2"
    wait "$pid1" || broken=$((broken + 1))
    wait "$pid2" || broken=$((broken + 1))
    pids=
    if ! same_weights out.weights a.weights &&
        ! same_weights out.weights b.weights; then
        mixed=$((mixed + 1))
    fi
    no_temps || broken=$((broken + 1))
    grep -q "^weights = " out.ini || broken=$((broken + 1))
done
[ "$broken" -eq 0 ] && pass "$rounds rounds of two runs into the same outputs: all succeed, complete files, no temporaries" ||
    fail "$broken failed runs or broken outputs in $rounds rounds"
[ "$mixed" -eq 0 ] && pass "the weights directory is always one run's, never a mix" ||
    fail "$mixed of $rounds weights directories mix the two runs"

# ---- a checkpoint in use -----------------------------------------------------
"$POPC" train run.ini --quiet --set train.epochs=40 --set train.weights=c.weights \
    --set train.model=c.ini --set train.checkpoint=c.ckpt --checkpoint-every 2 \
    >c1.log 2>&1 &
first=$!
pids=$first
while [ ! -e c.ckpt/state.ini ] && kill -0 "$first" 2>/dev/null; do
    sleep 0.02
done
"$POPC" train run.ini --quiet --set train.epochs=40 --set train.weights=d.weights \
    --set train.model=d.ini --set train.checkpoint=c.ckpt --checkpoint-every 2 \
    --resume >c2.log 2>&1
rc=$?
if kill -0 "$first" 2>/dev/null; then
    [ "$rc" -ne 0 ] && pass "a second run on a checkpoint in use is refused (exit $rc)" ||
        fail "a second run on a checkpoint in use was allowed"
    grep -q "another popc process is using this training checkpoint" c2.log &&
        pass "the refusal says why" || { fail "the refusal says why"; cat c2.log; }
    [ ! -e d.weights ] && pass "the refused run wrote nothing" ||
        fail "the refused run wrote d.weights"
else
    fail "the first run ended before the second started (machine too fast?)"
fi
kill -TERM "$first" 2>/dev/null
wait "$first"
pids=
"$POPC" train run.ini --quiet --set train.epochs=40 --set train.weights=c.weights \
    --set train.model=c.ini --set train.checkpoint=c.ckpt --checkpoint-every 2 \
    --set train.epochs=1 --resume >c3.log 2>&1
grep -q "another popc process" c3.log &&
    fail "the checkpoint stays locked after its run ended" ||
    pass "the checkpoint is free once its run ended"

# ---- one executable cache ----------------------------------------------------
misses=0 hits=0 bad=0
for round in 1 2 3; do
    rm -rf cache
    for k in 1 2 3; do
        POPC_LOG_LEVEL=info "$POPC" train run.ini --quiet --set train.epochs=1 \
            --set options.enableExecutableCaching=cache \
            --set train.weights=e$k.weights --set train.model=e$k.ini \
            >"e$k.log" 2>&1 &
        eval "e$k=\$!"
    done
    pids="$e1 $e2 $e3"
    for p in $e1 $e2 $e3; do wait "$p" || bad=$((bad + 1)); done
    pids=
    misses=$((misses + $(cat e1.log e2.log e3.log | grep -c "executable cache miss")))
    hits=$((hits + $(cat e1.log e2.log e3.log | grep -c "executable cache hit")))
    same_weights e1.weights e2.weights && same_weights e1.weights e3.weights ||
        bad=$((bad + 1))
    [ "$(ls cache | grep -c '\.tmp-')" -eq 0 ] || bad=$((bad + 1))
done
[ "$bad" -eq 0 ] && pass "3 rounds of 3 processes sharing one cache: all succeed, same weights, no temporaries" ||
    fail "$bad failures with a shared executable cache"
# each model is compiled by one process; the others wait for it and hit
[ "$hits" -gt 0 ] && pass "processes waiting on the cache hit the entry ($misses misses, $hits hits)" ||
    { fail "no cache hits ($misses misses)"; cat e1.log; }
POPC_LOG_LEVEL=info "$POPC" train run.ini --quiet --set train.epochs=1 \
    --set options.enableExecutableCaching=cache --set train.weights=f.weights \
    --set train.model=f.ini >f.log 2>&1 &&
    grep -q "executable cache hit" f.log && pass "a later run hits the shared entries" ||
    { fail "a later run does not hit the shared cache"; cat f.log; }

finish
