#!/bin/sh
# test_replay.sh - every committed fuzz input (fuzz/corpus/<reader>/ seeds
# and fuzz/regressions/<reader>/ crashes found before) goes through the
# reader's harness once; a crash, a sanitizer report or a hang fails.
status=0
for name in npy idx csv ini options exe weights checkpoint onnx; do
    set -- "$POPC_SRCDIR/fuzz/corpus/$name"
    [ -d "$POPC_SRCDIR/fuzz/regressions/$name" ] &&
        set -- "$@" "$POPC_SRCDIR/fuzz/regressions/$name"
    if timeout 300 "$POPC_BUILDDIR/fuzz/replay_$name" "$@" >replay.out 2>&1; then
        echo "ok: $name: $(tail -1 replay.out)"
    else
        echo "FAIL: $name"
        tail -20 replay.out
        status=1
    fi
done
rm -f replay.out
exit $status
