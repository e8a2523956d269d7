#!/bin/sh
# bench_infer.sh - inference latency of real models, popc against ONNX
# Runtime (the inference anchor), interleaved, same threads, median of
# repeats.
#
#   cd BUILD && /path/to/src/bench/bench_infer.sh [--repeat N] [--runs N]
#       [--threads N] [--models "resnet18 mobilenet_v2 transformer"]
#       [--levels "0 2"] [--metric median_ms|cpu_ms] [--no-ort] [--dir DIR]
#
# Exports the models with Debian's PyTorch (bench/infer_models.py: eval
# mode, opset 13, BatchNorm folded by the exporter) into DIR (default
# bench-infer-models/), installs onnxruntime-node from the npm registry
# into DIR/ort (npm install --ignore-scripts onnxruntime-node; Node 20),
# then for every model and batch runs, in turn and REPEAT times over: popc
# at each optimizationLevel (bench_infer: C API import, compile, median of
# RUNS runs) and ONNX Runtime (ort_infer.js: intraOpNumThreads THREADS,
# graph optimization "all", median of RUNS runs). Prints one line per
# model, batch and runner with the median over repeats of the medians,
# and popc / ORT as a speed ratio (above 1: popc is faster). A level may
# carry environment settings after commas ("2,POPC_NCHWC_BLOCK=0": level 2
# without blocked layouts); --metric cpu_ms compares the processes' CPU
# time per run instead of the wall time.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(pwd)
repeat=3
runs=20
threads=$(nproc)
models="resnet18 mobilenet_v2 transformer"
levels="0 2"
metric=median_ms
ort=1
dir=$build/bench-infer-models
while [ $# -gt 0 ]; do
    case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --metric) metric=$2; shift 2 ;;
    --no-ort) ort=0; shift ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "bench_infer.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -x "$build/bench/bench_infer" ] || {
    echo "bench_infer.sh: run it in a build tree (make first)" >&2; exit 2; }
export POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends:$build/collectives"
export POPC_THREADS="$threads"
mkdir -p "$dir"
for m in $models; do
    [ -f "$dir/$m.onnx" ] || /usr/bin/python3 "$src/bench/infer_models.py" "$dir" "$m"
done
if [ "$ort" = 1 ] && [ ! -d "$dir/ort/node_modules/onnxruntime-node" ]; then
    (cd "$dir" && mkdir -p ort && cd ort &&
        npm install --silent --ignore-scripts onnxruntime-node >/dev/null)
fi
results=$(mktemp)
trap 'rm -f "$results"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p"; }

for r in $(seq "$repeat"); do
    for m in $models; do
        for x in "$dir/${m}"_b*.npy; do
            b=$(basename "$x" .npy); b=${b##*_b}
            for l in $levels; do
                lv=${l%%,*} ev=
                [ "$l" = "$lv" ] || ev=$(echo "${l#*,}" | tr , ' ')
                # shellcheck disable=SC2086 # ev: VAR=VALUE words
                ms=$(env $ev "$build/bench/bench_infer" "$dir/$m.onnx" "$x" \
                     "$runs" "optimizationLevel=$lv" | field "$metric")
                echo "$m $b popc-L$l $ms" >>"$results"
            done
            if [ "$ort" = 1 ]; then
                ms=$(NODE_PATH="$dir/ort/node_modules" node \
                     "$src/bench/ort_infer.js" "$dir/$m.onnx" "$x" "$runs" \
                     "$threads" | field "$metric")
                echo "$m $b ort $ms" >>"$results"
            fi
        done
    done
done
printf '%-14s %5s %-10s %10s %8s\n' model batch runner ms "vs ORT"
for m in $models; do
    for b in $(awk -v m="$m" '$1 == m { print $2 }' "$results" | sort -un); do
        o=$(awk -v m="$m" -v b="$b" '$1 == m && $2 == b && $3 == "ort" { print $4 }' \
            "$results" | median)
        for who in $(awk -v m="$m" -v b="$b" '$1 == m && $2 == b { print $3 }' \
                     "$results" | sort -u); do
            v=$(awk -v m="$m" -v b="$b" -v w="$who" \
                '$1 == m && $2 == b && $3 == w { print $4 }' "$results" | median)
            ratio=-
            [ -n "$o" ] && ratio=$(awk -v o="$o" -v v="$v" 'BEGIN { printf "%.2fx", o / v }')
            printf '%-14s %5s %-10s %10.2f %8s\n' "$m" "$b" "$who" "$v" "$ratio"
        done
    done
done
