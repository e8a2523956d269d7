#!/bin/sh
# test_cli_profile.sh - enableProfiling through the popc command, in the
# forms README.md's "Performance and profiling" gives: [options]
# enableProfiling = DIR in a run file, --set options.enableProfiling=DIR,
# and popc infer MODEL.onnx --option enableProfiling=DIR. Each run prints
# where it wrote each model's profile ("profile: DIR/NAME/profile.html",
# NAME being modelName: "training", "inference"), and the file is there.
set -u
: "${POPC:?set POPC to the popc binary}"
: "${MAKE_IDX:?set MAKE_IDX to tests/make_idx}"
M="$POPC_SRCDIR/tests/onnx/models"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-test-cli-profile-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
. "$POPC_SRCDIR/tests/testlib.sh"

"$MAKE_IDX" . 64 32 || { echo "make_idx failed"; exit 99; }
mlp_run run.ini 8 1 1
# the INI form, as README.md shows it
sed -i 's/^backend = cpu$/backend = ipumodel\nenableProfiling = prof/' run.ini
grep -q '^enableProfiling = prof$' run.ini || { echo "run.ini not edited"; exit 99; }

expect 0 "train with [options] enableProfiling" "$POPC" train run.ini
for name in training inference; do
    contains out.txt "profile: prof/$name/profile.html" \
        "train prints where the $name model's profile is"
    [ -s "prof/$name/profile.html" ] && pass "prof/$name/profile.html written" ||
        fail "prof/$name/profile.html missing"
done
expect 0 "train with --set options.enableProfiling" "$POPC" train run.ini \
    --set options.enableProfiling=prof2 --set train.evaluate=false
contains out.txt "profile: prof2/training/profile.html" \
    "--set form: the profile's path is printed"
grep -q "prof/" out.txt && fail "an older profile of another folder printed" ||
    pass "only this run's profiles are printed"
expect 0 "infer a run's model with enableProfiling" "$POPC" infer \
    run.model.ini --set options.enableProfiling=prof3 \
    --set data.test=t10k-images-idx3-ubyte.gz \
    --set data.test_labels=t10k-labels-idx1-ubyte
contains out.txt "profile: prof3/inference/profile.html" \
    "popc infer RUN.ini prints the profile's path"
expect 0 "infer MODEL.onnx with enableProfiling" "$POPC" infer \
    "$M/small_cnn.onnx" -i "input=$M/small_cnn.input.npy" -o out \
    --backend ipumodel --option enableProfiling=prof4
contains out.txt "profile: prof4/inference/profile.html" \
    "popc infer MODEL.onnx prints the profile's path"
expect 0 "no enableProfiling" "$POPC" train run.ini \
    --set options.enableProfiling=None --set train.evaluate=false
grep -q "^profile:" out.txt && fail "a profile printed without enableProfiling" ||
    pass "nothing printed without enableProfiling"

finish
