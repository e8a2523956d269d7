#!/bin/sh
# bench_modes.sh - Fashion-MNIST training throughput of the example models
# on the cpu and ipumodel backends: plain, with replication 2, as a
# 2-stage pipeline (the last linear layer on IPU 1, gradient accumulation
# 4), in half precision ([model] half) and in half precision with float16
# partial sums (Precision.setPartialsType=half), through `popc train`
# (train.evaluate = false, so the figure is the training loop's own).
#
#   bench/bench_modes.sh [POPC] [SAMPLES]
#
# POPC: the popc command (default: build/inst/bin/popc, else `popc`);
# SAMPLES: training samples per run (default 19200, i.e. 300 steps of 64).
# Prints samples/s per (model, backend, mode) and the ratio to cpu plain.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
popc=${1:-}
if [ -z "$popc" ]; then
    if [ -x "$top/build/inst/bin/popc" ]; then
        popc=$top/build/inst/bin/popc
    else
        popc=popc
    fi
fi
samples=${2:-19200}

rate() { # model backend extra-args...
    model=$1; backend=$2; shift 2
    "$popc" train "$top/examples/fashion-mnist-$model.ini" \
        --set data.limit="$samples" --set train.epochs=1 \
        --set train.evaluate=false --set options.backend="$backend" \
        "$@" 2>&1 |
        sed -n 's/.* \([0-9][0-9]*\) samples\/s.*/\1/p' | tail -1
}

printf '%-5s %-9s %-12s %10s %9s\n' model backend mode samples/s "vs cpu"
for model in mlp cnn; do
    last=fc3
    [ "$model" = cnn ] && last=fc
    base=
    for backend in cpu ipumodel; do
        for mode in plain replicas2 pipeline2 half half_partials; do
            case $mode in
            plain) r=$(rate "$model" "$backend") ;;
            replicas2) r=$(rate "$model" "$backend" \
                --set options.replicationFactor=2) ;;
            pipeline2) r=$(rate "$model" "$backend" \
                --set options.Training.gradientAccumulation=4 \
                --set layer.$last.ipu=1) ;;
            half) r=$(rate "$model" "$backend" --set model.half=true) ;;
            half_partials) r=$(rate "$model" "$backend" --set model.half=true \
                --set options.Precision.setPartialsType=half) ;;
            esac
            [ -n "$base" ] || base=$r
            printf '%-5s %-9s %-12s %10s %9s\n' "$model" "$backend" "$mode" \
                "${r:-failed}" \
                "$(awk -v a="${r:-0}" -v b="$base" 'BEGIN{printf "%.2f", a/b}')"
        done
    done
done
