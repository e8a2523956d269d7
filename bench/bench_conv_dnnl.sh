#!/bin/sh
# bench_conv_dnnl.sh - oneDNN's convolutions against popc's on the shapes
# of ResNet-18 and MobileNetV2 (bench_conv_dnnl.c says what it times),
# with the machine and its load before and after, since the machine may be
# shared and its load moves every wall-clock figure.
#
#   cd BUILD && /path/to/src/bench/bench_conv_dnnl.sh [bench_conv_dnnl args]
#
# Needs a build configured with oneDNN (Debian libdnnl-dev): configure
# builds bench/bench_conv_dnnl only when it finds it.
set -eu
build=$(pwd)
[ -x "$build/bench/bench_conv_dnnl" ] || {
    echo "bench_conv_dnnl.sh: no bench/bench_conv_dnnl here: run it in a" \
         "build tree configured with oneDNN (apt-get install libdnnl-dev," \
         "then configure and make)" >&2
    exit 2
}
export POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends:$build/collectives"
# oneDNN runs on OpenMP (libgomp), whose idle workers spin by default: on
# a machine with more runnable threads than cores a spinning worker holds
# a core its partner needs, and a 0.1 ms convolution takes a scheduler
# slice (10 ms and more). Passive workers sleep at once, as popc's own pool
# does after a short spin. OMP_WAIT_POLICY=default measures libgomp's
# default (spin a while, then sleep); active and passive are passed on.
case ${OMP_WAIT_POLICY:-passive} in
default) unset OMP_WAIT_POLICY ;;
*) export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" ;;
esac
echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)," \
     "$(grep -o 'avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "start: $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)," \
     "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(default)}"
nice "$build/bench/bench_conv_dnnl" "$@"
echo "end: $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
