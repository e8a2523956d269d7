#!/bin/sh
# bench_memory.sh - where the peak memory of `popc train` goes, per model.
#
#   bench/bench_memory.sh [--models LIST] [--optimizer sgdm|adam]
#                         [--data DIR] [--builddir DIR]
#
# Trains each model of bench_models.sh (its exports; run bench_models.sh
# once, or torch_models.py export, to make them) for one epoch of 4 steps
# on the ipumodel backend and prints its peak RSS (/usr/bin/time) beside
# the parts popc knows, from the compile's debug line "memory of ...":
#   activations  the activation arena, times the frames in flight
#   weights      the device's copy of the weights; the host's copy (the
#                model's graph, which the plan shares) is as large again
#   accum        the gradient accumulators (with gradientAccumulation 1
#                the backward pass writes the gradients there)
#   state        the optimizer's state (momentum: 1 x weights, Adam: 2 x)
#   libs         the RSS of `popc plugins` (the program, its libraries
#                and every plugin, loaded)
#   data         the .npy files of the training split, read whole
#   rest         the peak minus all the above: kernel scratch, threads'
#                stacks and buffers, allocator slack, the plan's tables
# It also prints the arena's bound (the most activation bytes live at one
# node, gradients included), the activations stored for the backward pass
# and how many activations run in place. All figures in MiB (2^20 bytes;
# bench_models.sh calls them MB).
set -eu

die() {
    echo "bench_memory.sh: $*" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
build=.
models="resnet18 mobilenet_v2 transformer lstm"
optimizer=sgdm
data=
while [ $# -gt 0 ]; do
    case "$1" in
    --models) [ $# -ge 2 ] || die "--models needs a value"; models=$2; shift ;;
    --optimizer) [ $# -ge 2 ] || die "--optimizer needs a value"
        optimizer=$2; shift ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data=$2; shift ;;
    --builddir) [ $# -ge 2 ] || die "--builddir needs a value"; build=$2
        shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' \
        -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
case "$optimizer" in
sgdm) opt='name = sgd\nlr = 0.01\nmomentum = 0.9\n' ;;
adam) opt='name = adam\nlr = 0.001\n' ;;
*) die "--optimizer is '$optimizer'; use sgdm or adam" ;;
esac
build=$(cd "$build" && pwd)
popc="$build/tools/popc"
[ -x "$popc" ] || die "$popc is missing: build first, or give --builddir"
/usr/bin/time -f %M true >/dev/null 2>&1 ||
    die "/usr/bin/time is missing (Debian package time)"
[ -n "$data" ] || data="$build/bench-models"
POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends"
export POPC_PLUGIN_PATH

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_memory.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

/usr/bin/time -f %M -o "$work/libs" "$popc" plugins >/dev/null ||
    die "popc plugins failed"

geometry() {
    case "$1" in
    transformer) echo "16 128, 256" ;;
    lstm) echo "32 64, 64" ;;
    *) echo "32 3, 64, 64" ;;
    esac
}

printf '%-13s %7s %8s %8s %6s %6s %6s %5s %5s %5s | %7s %7s %8s\n' model \
    peak activ weights+h accum state libs data rest "" "bound" stored \
    in-place
for m in $models; do
    for f in "${m}_train.onnx" "${m}_x.npy" "${m}_y.npy"; do
        [ -f "$data/$f" ] || die "$data/$f is missing: run bench_models.sh \
(or torch_models.py export $data $m) first"
    done
    g=$(geometry "$m")
    printf '[options]\nbackend = ipumodel\n[model]\nonnx = %s\ninput = %s\n' \
        "$data/${m}_train.onnx" "${g#* }" >"$work/run.ini"
    printf 'classes = 10\n[data]\ntrain = %s\ntrain_labels = %s\n' \
        "$data/${m}_x.npy" "$data/${m}_y.npy" >>"$work/run.ini"
    printf 'batch_size = %s\nshuffle = false\n[optimizer]\n' "${g%% *}" \
        >>"$work/run.ini"
    # shellcheck disable=SC2059 # opt holds the \n escapes
    printf "$opt" >>"$work/run.ini"
    printf '[train]\nepochs = 1\nevaluate = false\n' >>"$work/run.ini"
    if ! POPC_LOG_LEVEL=DEBUG /usr/bin/time -f %M -o "$work/rss" "$popc" \
        train "$work/run.ini" --quiet >"$work/out" 2>"$work/log"; then
        tail -5 "$work/log" >&2
        die "popc train $m failed"
    fi
    line=$(grep "memory of" "$work/log" | head -n 1)
    [ -n "$line" ] || die "popc train $m logged no 'memory of' line"
    dsize=$(($(stat -c %s "$data/${m}_x.npy") + $(stat -c %s "$data/${m}_y.npy")))
    echo "$line" | awk -v rss="$(cat "$work/rss")" -v libs="$(cat "$work/libs")" \
        -v data="$dsize" -v m="$m" '
    function num(pat,   s) {
        if (!match($0, pat)) return 0
        s = substr($0, RSTART, RLENGTH); gsub(/[^0-9 ]/, " ", s)
        split(s, a, " "); return a[1] }
    {
        act = num("activations [0-9]+ bytes") * num("x [0-9]+ frames")
        inpl = num("[(][0-9]+ in place")
        bound = num("at most [0-9]+ bytes"); stored = num("[0-9]+ stored")
        w = num("weights [0-9]+ bytes"); acc = num("accumulators [0-9]+")
        st = num("state [0-9]+ bytes")
        peak = rss * 1024; lib = libs * 1024
        rest = peak - act - 2 * w - acc - st - lib - data
        M = 1048576
        printf "%-13s %7.1f %8.1f %8.1f %6.1f %6.1f %6.1f %5.1f %5.1f %5s | %7.1f %7.1f %8d\n",
            m, peak / M, act / M, 2 * w / M, acc / M, st / M,
            lib / M, data / M, rest / M, "", bound / M,
            stored / M, inpl
    }'
done
