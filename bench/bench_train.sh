#!/bin/sh
# bench_train.sh - Fashion-MNIST training throughput of popc (ipumodel and
# cpu backends) next to PyTorch, in one session on one machine.
#
#   bench/bench_train.sh [OPTIONS]
#
# Trains the MLP (784-512-512-10) and the CNN (conv 32, pool, conv 64,
# pool, linear) of examples/ for one epoch each (batch 64, Adam lr 1e-3,
# cross entropy) with `popc train` on every backend asked for, and, when
# /usr/bin/python3 can import torch, with bench/torch_fmnist.py (the same
# models, batch, optimizer and data). Prints samples/s, milliseconds per
# step and peak RSS of each run, and the ratio popc / PyTorch (above 1:
# popc is faster).
#
# Options:
#   --quick            100 steps per model instead of a whole epoch
#   --steps N          N steps per model (batches of 64)
#   --builddir DIR     configured build tree (default: the current
#                      directory); tools/popc and the plugins are built
#                      there first
#   --models LIST      "mlp cnn" (default)
#   --backends LIST    "ipumodel cpu" (default)
#   --threads N        worker threads for popc ipumodel and PyTorch
#                      (default: the number of cores)
#   --repeat N         run everything N times and keep each run's best
#                      (steadier on a shared machine; default 1)
#   --no-torch         skip PyTorch
#   --no-build         use the build tree's popc and plugins as they are
#
# Timing excludes start-up, data loading and compilation on both sides:
# popc's figure is `popc train`'s own (train.evaluate = false, so no test
# pass inside the timed loop), PyTorch's that of torch_fmnist.py's loop.
# PyTorch runs with OPENBLAS_NUM_THREADS=1 and torch.set_num_threads(N),
# its fastest setting on small machines. Peak RSS of popc comes from
# /usr/bin/time -v (blank when that is missing).
set -eu

usage() {
    sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
    exit "${1:-0}"
}

die() {
    echo "bench_train.sh: $*" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=.
steps=0
models="mlp cnn"
backends="ipumodel cpu"
threads=0
repeat=1
torch=1
build_it=1
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) steps=100 ;;
    --steps) [ $# -ge 2 ] || die "--steps needs a value"; steps=$2; shift ;;
    --builddir) [ $# -ge 2 ] || die "--builddir needs a value"; build=$2; shift ;;
    --models) [ $# -ge 2 ] || die "--models needs a value"; models=$2; shift ;;
    --backends) [ $# -ge 2 ] || die "--backends needs a value"; backends=$2; shift ;;
    --threads) [ $# -ge 2 ] || die "--threads needs a value"; threads=$2; shift ;;
    --repeat) [ $# -ge 2 ] || die "--repeat needs a value"; repeat=$2; shift ;;
    --no-torch) torch=0 ;;
    --no-build) build_it=0 ;;
    -h | --help) usage 0 ;;
    *) echo "bench_train.sh: unknown option '$1'" >&2; usage 2 >&2 ;;
    esac
    shift
done
for n in "$steps" "$threads" "$repeat"; do
    case "$n" in
    '' | *[!0-9]*) die "'$n' is not a whole number" ;;
    esac
done
[ "$repeat" -ge 1 ] || die "--repeat must be at least 1"
for m in $models; do
    [ -f "$src/examples/fashion-mnist-$m.ini" ] ||
        die "no model '$m' (examples/fashion-mnist-$m.ini); use mlp or cnn"
done
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
    die "Fashion-MNIST is not in $data"
if [ "$threads" -eq 0 ]; then
    threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
fi

build=$(cd "$build" 2>/dev/null && pwd) || die "no build tree '$build'"
[ -f "$build/Makefile" ] ||
    die "$build is not a configured build tree (run configure there)"
if [ "$build_it" -eq 1 ]; then
    make -s -C "$build" tools/popc ops/math.la ops/tensor.la ops/nn.la \
        ops/loss.la optim/adam.la backends/cpu.la backends/ipumodel.la \
        >/dev/null || die "building popc in $build failed"
fi
[ -x "$build/tools/popc" ] || die "no $build/tools/popc; build it first"
POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends"
export POPC_PLUGIN_PATH
popc="$build/tools/popc"

if [ "$torch" -eq 1 ] &&
    ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
    echo "bench_train.sh: /usr/bin/python3 has no torch; PyTorch skipped" >&2
    torch=0
fi
timev=
if /usr/bin/time -v true >/dev/null 2>&1; then
    timev="/usr/bin/time -v"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_train.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"

# Value of "key": number in a one-line JSON object.
json_num() {
    sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1
}

# Larger of two numbers (awk, as they are floats); the second may be empty.
best() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b == "" || a + 0 > b + 0) print a;
                                     else print b }'
}

# popc MODEL BACKEND -> "samples/s ms/step rss_mb" of one run
run_popc() {
    limit=
    if [ "$steps" -gt 0 ]; then
        limit="--set data.limit=$((steps * 64))"
    fi
    # shellcheck disable=SC2086 # $limit and $timev are word lists
    if ! $timev "$popc" train "$src/examples/fashion-mnist-$1.ini" \
        --set train.epochs=1 --set train.evaluate=false \
        --set data.drop_last=true --set options.backend="$2" \
        --set options.threads="$threads" $limit \
        --quiet --json "$work/run.json" >"$work/out.txt" 2>"$work/err.txt"
    then
        cat "$work/out.txt" "$work/err.txt" >&2
        die "popc train $1 on $2 failed"
    fi
    sps=$(json_num samples_per_second "$work/run.json")
    secs=$(json_num seconds "$work/run.json")
    nsteps=$(json_num steps "$work/run.json")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' \
        "$work/err.txt")
    awk -v s="$sps" -v t="$secs" -v n="$nsteps" -v r="$rss" 'BEGIN {
        printf "%.1f %.3f %s\n", s, (n > 0 ? 1000 * t / n : 0),
               (r == "" ? "-" : sprintf("%.0f", r / 1024)) }'
}

# torch MODEL -> "samples/s ms/step rss_mb" of one run
run_torch() {
    if ! OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/torch_fmnist.py" \
        --model "$1" --epochs 1 --max-steps "$steps" --threads "$threads" \
        >"$work/torch.json" 2>"$work/err.txt"; then
        cat "$work/err.txt" >&2
        die "bench/torch_fmnist.py --model $1 failed"
    fi
    awk -v s="$(json_num samples_per_s "$work/torch.json")" \
        -v t="$(json_num ms_per_step "$work/torch.json")" \
        -v r="$(json_num peak_rss_mb "$work/torch.json")" \
        'BEGIN { printf "%.1f %.3f %.0f\n", s, t, r }'
}

echo "Fashion-MNIST training, batch 64, Adam; $threads thread(s);" \
    "$([ "$steps" -gt 0 ] && echo "$steps steps" || echo "one epoch")" \
    "per model; best of $repeat"
printf '%-5s %-13s %12s %10s %10s %14s\n' model runner samples/s ms/step \
    "peak MB" "popc/PyTorch"
for m in $models; do
    runners=
    for b in $backends; do
        runners="$runners popc-$b"
    done
    [ "$torch" -eq 1 ] && runners="$runners pytorch"
    # best of --repeat for every runner, runs interleaved
    for r in $runners; do
        eval "best_$(echo "$r" | tr '-' '_')="
    done
    i=0
    while [ "$i" -lt "$repeat" ]; do
        for r in $runners; do
            case "$r" in
            pytorch) res=$(run_torch "$m") ;;
            *) res=$(run_popc "$m" "${r#popc-}") ;;
            esac
            var=best_$(echo "$r" | tr '-' '_')
            eval "old=\${$var}"
            # shellcheck disable=SC2154 # old is set by eval
            if [ -z "$old" ] ||
                [ "$(best "${res%% *}" "${old%% *}")" = "${res%% *}" ]; then
                eval "$var=\$res"
            fi
        done
        i=$((i + 1))
    done
    tsps=
    # shellcheck disable=SC2154 # best_pytorch is set by eval
    [ "$torch" -eq 1 ] && tsps=$(echo "$best_pytorch" | cut -d' ' -f1)
    for r in $runners; do
        eval "res=\${best_$(echo "$r" | tr '-' '_')}"
        # shellcheck disable=SC2086 # res is "sps ms rss"
        set -- $res
        ratio=-
        if [ -n "$tsps" ] && [ "$r" != pytorch ]; then
            ratio=$(awk -v a="$1" -v b="$tsps" \
                'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        fi
        printf '%-5s %-13s %12s %10s %10s %14s\n' "$m" "$r" "$1" "$2" "$3" \
            "$ratio"
    done
done
