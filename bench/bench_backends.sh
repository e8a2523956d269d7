#!/bin/sh
# bench_backends.sh - training-step and inference times of the
# Fashion-MNIST-sized models on the cpu backend and on ipumodel with 1 and
# 2 worker threads, with the ratios.
#
#   bench/bench_backends.sh [BUILDDIR] [STEPS]
#
# BUILDDIR is a configured build tree (default: the current directory); the
# program bench/bench_train_step and the plugins are built there first.
# Ratios above 1 mean the second is faster: cpu/ipumodel-N is the speed-up
# over the reference backend, ipumodel-1/ipumodel-2 the scaling from one
# worker to two. Times are the fastest of STEPS runs after a compile run
# (steadier than the median when other work shares the cores).
set -eu
build=$(cd "${1:-.}" && pwd)
steps=${2:-20}
cd "$build"
make -s bench/bench_train_step backends/cpu.la backends/ipumodel.la \
    ops/math.la ops/tensor.la ops/nn.la ops/loss.la optim/adam.la >/dev/null
POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends"
export POPC_PLUGIN_PATH

run() { # model backend threads -> fastest ms per step
    "$build/bench/bench_train_step" "$1" "$2" "$3" "$steps" | cut -d' ' -f5
}

printf '%-11s %9s %9s %9s %12s %12s\n' model cpu ipu-1 ipu-2 cpu/ipu-2 \
    ipu-1/ipu-2
for model in mlp cnn wide mlp-infer cnn-infer wide-infer; do
    c=$(run "$model" cpu 1)
    i1=$(run "$model" ipumodel 1)
    i2=$(run "$model" ipumodel 2)
    awk -v m="$model" -v c="$c" -v a="$i1" -v b="$i2" 'BEGIN {
        printf "%-11s %7.2fms %7.2fms %7.2fms %12.2f %12.2f\n",
               m, c, a, b, c / b, a / b }'
done
