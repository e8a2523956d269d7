#!/bin/sh
# scaling_model.sh - project distributed training to many hosts from
# figures measured on one machine (docs/distributed.md explains the model).
#
#   bench/scaling_model.sh [--hosts H] [--replicas R] [--latency-us A]
#                          [--membw GBPS] [--gbits "10 100"]
#                          [--model NAME:PARAMS:BATCH:COMPUTE_MS] ...
#
# Each --model gives a model's trainable parameters, its micro-batch and
# the measured time of one optimizer step of one replica (compute, in ms;
# bench/bench_distributed.sh's "1 process" ms/step, or bench_models.sh's
# samples/s turned into ms per batch). Without --model the table uses the
# figures of docs/distributed.md: the Fashion-MNIST MLP and CNN of
# examples/ and ResNet-18 imported from torchvision (64x64, batch 32).
#
# Per step, with S = 4 x PARAMS gradient bytes, H hosts of R replicas,
# link bandwidth B (bytes/s) and per-message latency A:
#   local   (R - 1) S / MEMBW          the replicas of one host, summed
#   ring    2 (H-1)/H S/B + 2 (H-1) A  a ring all-reduce (reference)
#   chain   2 (H - 2 + C) (A + c/B)    popc's ordered reduction: a
#                                      pipelined chain of C chunks of c
#                                      bytes (c = S / (4 (H-1)), clamped to
#                                      64 KiB..1 MiB), then a pipelined
#                                      broadcast of the same cost
#   step    compute + local + chain    no overlap with the backward pass
# and prints samples/s of the H x R replicas, the scaling efficiency
# (compute / step) and the chain's cost against the ring's.
set -eu

hosts=16 replicas=4 latency_us=10 membw=10 gbits="10 100" models=
while [ $# -gt 0 ]; do
    case $1 in
    --hosts) hosts=$2; shift ;;
    --replicas) replicas=$2; shift ;;
    --latency-us) latency_us=$2; shift ;;
    --membw) membw=$2; shift ;;
    --gbits) gbits=$2; shift ;;
    --model) models="$models $2"; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling_model.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
# measured on a 2-core VM: see docs/distributed.md for where each comes from
[ -n "$models" ] || models="mlp:669706:64:2.38 cnn:50186:64:15.27 resnet18:11181642:32:211"

echo "$hosts hosts x $replicas replicas, latency ${latency_us} us per message," \
     "host memory ${membw} GB/s"
printf '%-9s %9s %6s %10s %8s %8s %8s %12s %6s %10s\n' model "grad MB" Gbit/s \
    "compute ms" "local ms" "ring ms" "chain ms" "samples/s" eff chain/ring
for m in $models; do
    for g in $gbits; do
        echo "$m $g"
    done
done | awk -v H="$hosts" -v R="$replicas" -v A="$latency_us" -v M="$membw" '
{
    split($1, f, ":"); name = f[1]; params = f[2]; batch = f[3]; comp = f[4] / 1000
    S = 4 * params; B = $2 * 1e9 / 8; a = A * 1e-6
    local_t = (R - 1) * S / (M * 1e9)
    ring = H > 1 ? 2 * (H - 1) / H * S / B + 2 * (H - 1) * a : 0
    c = H > 1 ? S / (4 * (H - 1)) : S
    if (c < 65536) c = 65536
    if (c > 1048576) c = 1048576
    C = int((S + c - 1) / c); if (c > S) c = S
    chain = H > 1 ? 2 * (H - 2 + C) * (a + c / B) : 0
    step = comp + local_t + chain
    printf "%-9s %9.1f %6d %10.1f %8.2f %8.2f %8.2f %12.0f %5.0f%% %9.2fx\n",
        name, S / 1e6, $2, comp * 1000, local_t * 1000, ring * 1000,
        chain * 1000, H * R * batch / step, 100 * comp / step,
        (ring > 0 ? chain / ring : 1)
}'
