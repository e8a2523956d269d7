#!/bin/sh
# bench_distributed.sh - Fashion-MNIST training on 1 process against N ranks
# of a distributed run (popc launch, Open MPI) on this machine.
#
#   bench/bench_distributed.sh [OPTIONS]
#
# For each model (the MLP and the CNN of examples/, batch 64, Adam, the
# ipumodel backend) it trains STEPS steps per rank without evaluation:
#   - 1 process, replicationFactor 1, THREADS worker threads;
#   - N ranks (popc launch -n N), replicationFactor 1 each, THREADS / N
#     worker threads each (at least 1), so both use the same cores.
# It prints the run's samples/s (every rank counted), the time per
# optimizer step, and rank 0's time in the gradient reduction per step
# (`collective_seconds` of `popc train --json`: the ordered chain and the
# broadcast, waiting for the slower rank included). The N-rank run takes
# N times the samples per step (weak scaling: each rank keeps batch 64).
# bench/scaling_model.sh projects these figures to many hosts.
#
# Options:
#   --ranks N          ranks of the distributed run (default 2)
#   --steps N          optimizer steps per rank (default 300)
#   --threads N        cores to use in all (default: this machine's)
#   --models LIST      "mlp cnn" (default)
#   --repeat N         runs of each, the best kept (default 1)
#   --builddir DIR     configured build tree (default: the current dir)
set -eu

usage() {
    sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
    exit "${1:-0}"
}

ranks=2 steps=300 threads=$(nproc) models="mlp cnn" repeat=1 builddir=.
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --steps) steps=$2; shift ;;
    --threads) threads=$2; shift ;;
    --models) models=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --builddir) builddir=$2; shift ;;
    -h|--help) usage ;;
    *) echo "bench_distributed.sh: unknown option $1" >&2; usage 2 >&2 ;;
    esac
    shift
done
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$builddir" && pwd)
[ -x "$build/tools/popc" ] || {
    echo "bench_distributed.sh: no $build/tools/popc; build popc first" >&2
    exit 2
}
[ -d "$build/collectives" ] || {
    echo "bench_distributed.sh: popc was built without MPI (install" \
         "libopenmpi-dev and reconfigure)" >&2
    exit 2
}
export POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends:$build/collectives"
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d "${TMPDIR:-/tmp}/popc-bench-dist-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

value() { grep -o "\"$2\": [^,}]*" "$1" | head -n 1 | sed 's/^[^:]*: //'; }

# run NAME INI NRANKS: best samples/s of REPEAT runs; prints
# "samples/s ms-per-step reduce-ms-per-step"
run() {
    per=$((threads / $3))
    [ "$per" -ge 1 ] || per=1
    # steps per rank: each rank sees 1/N of the limited dataset
    limit=$((steps * 64 * $3))
    best=
    for _ in $(seq "$repeat"); do
        args="train $2 --quiet --json $1.json --set train.epochs=1
              --set train.evaluate=false --set data.limit=$limit
              --set options.threads=$per --set train.weights=$1.weights
              --set train.model=$1.ini"
        if [ "$3" -gt 1 ]; then
            # shellcheck disable=SC2086
            "$build/tools/popc" launch -n "$3" $args >/dev/null 2>"$1.err"
        else
            # shellcheck disable=SC2086
            "$build/tools/popc" $args >/dev/null 2>"$1.err"
        fi || { cat "$1.err" >&2; exit 1; }
        sps=$(value "$1.json" samples_per_second)
        if [ -z "$best" ] || awk -v a="$sps" -v b="$best" 'BEGIN { exit !(a > b) }'; then
            best=$sps
            secs=$(value "$1.json" seconds)
            coll=$(value "$1.json" collective_seconds)
        fi
    done
    awk -v s="$best" -v t="$secs" -v c="$coll" -v n="$steps" \
        'BEGIN { printf "%.0f %.2f %.2f\n", s, 1000 * t / n, 1000 * c / n }'
}

echo "Fashion-MNIST, ipumodel, batch 64 per rank, $steps steps per rank," \
     "$threads cores in all, best of $repeat"
printf '%-5s %-22s %12s %10s %14s\n' model run samples/s ms/step reduce-ms/step
for m in $models; do
    ini="$src/examples/fashion-mnist-$m.ini"
    one=$(run "$m-1" "$ini" 1)
    many=$(run "$m-$ranks" "$ini" "$ranks")
    set -- $one
    printf '%-5s %-22s %12s %10s %14s\n' "$m" "1 process" "$1" "$2" "-"
    s1=$1
    set -- $many
    printf '%-5s %-22s %12s %10s %14s\n' "$m" "$ranks ranks (popc launch)" \
        "$1" "$2" "$3"
    awk -v a="$1" -v b="$s1" -v n="$ranks" 'BEGIN {
        printf "%-5s %-22s %12.2fx\n", "", n " ranks / 1 process", a / b }'
done
