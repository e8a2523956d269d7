#!/bin/sh
# bench_models.sh - popc (ipumodel and cpu backends) next to PyTorch on
# real models exported from Debian's python3-torch and
# python3-torchvision, in one session on one machine.
#
#   bench/bench_models.sh [OPTIONS]
#
# The models (bench/torch_models.py builds them with a fixed seed, exports
# them to ONNX and writes random data): ResNet-18 at 64x64 and
# MobileNetV2 at 64x64 (batch 32), a 4-layer nn.TransformerEncoder
# (d_model 256, 4 heads, sequence 128, batch 16) and a 2-layer LSTM
# (hidden 256, sequence 64, batch 32), 10 classes, cross entropy; and,
# with --models mlp, the Fashion-MNIST MLP of examples/ (784-512-512-10,
# batch 100), and with --models resnet18_224, ResNet-18 at 224x224
# (batch 8).
#
# Modes: sgdm (SGD lr 0.01, momentum 0.9), adam (Adam lr 1e-3) and infer.
# Training runs `popc train` on the TRAINING export for EPOCHS epochs of
# 4 batches and takes its rate from the epochs after the first (the first
# holds the compile); PyTorch (torch_models.py run) times the same number
# of steps after 2 warm-up steps. Inference runs `popc infer` on the EVAL
# export (BatchNorm folded) over 4 and over 20 batches and takes the rate
# from the difference (compile and start-up cancel); PyTorch times 16
# no_grad batches after 2 warm-up batches. Every runner of a model and
# mode runs once per repeat, interleaved, and the median of the repeats
# is kept.
#
# Peak RSS is the whole process's (popc: /usr/bin/time; PyTorch:
# getrusage) in the training runs and the 4-batch inference run; both
# sides hold the same 4 batches of float32 data (6 MB for the CNNs).
# Compile time is popc's own log line of a training compile, and of the
# same compile hitting the executable cache (enableExecutableCaching).
#
# Options:
#   --models LIST      default "resnet18 mobilenet_v2 transformer lstm"
#   --modes LIST       default "sgdm adam infer"
#   --runners LIST     default "ipumodel cpu pytorch"
#   --repeat N         runs per runner, median kept (default 3)
#   --epochs N         training epochs of 4 steps (default 4)
#   --threads N        popc ipumodel workers and torch threads (default:
#                      the cores)
#   --blas N           OPENBLAS_NUM_THREADS for PyTorch (default 1, its
#                      best on this machine; see --sweep)
#   --sweep            first time PyTorch's sgdm training at every
#                      OPENBLAS_NUM_THREADS x torch threads in {1, cores}
#                      and use the fastest setting per model
#   --data DIR         where the exports go (default BUILD/bench-models;
#                      reused when present)
#   --builddir DIR     configured build tree (default: the current dir)
#   --tsv FILE         also write every run as a tab-separated line
#   --no-build         use the build tree's popc and plugins as they are
set -eu

usage() {
    sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
    exit "${1:-0}"
}

die() {
    echo "bench_models.sh: $*" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
build=.
models="resnet18 mobilenet_v2 transformer lstm"
modes="sgdm adam infer"
runners="ipumodel cpu pytorch"
repeat=3
epochs=4
threads=0
blas=1
sweep=0
data=
tsv=
build_it=1
while [ $# -gt 0 ]; do
    case "$1" in
    --models) [ $# -ge 2 ] || die "--models needs a value"; models=$2; shift ;;
    --modes) [ $# -ge 2 ] || die "--modes needs a value"; modes=$2; shift ;;
    --runners) [ $# -ge 2 ] || die "--runners needs a value"; runners=$2; shift ;;
    --repeat) [ $# -ge 2 ] || die "--repeat needs a value"; repeat=$2; shift ;;
    --epochs) [ $# -ge 2 ] || die "--epochs needs a value"; epochs=$2; shift ;;
    --threads) [ $# -ge 2 ] || die "--threads needs a value"; threads=$2; shift ;;
    --blas) [ $# -ge 2 ] || die "--blas needs a value"; blas=$2; shift ;;
    --sweep) sweep=1 ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data=$2; shift ;;
    --builddir) [ $# -ge 2 ] || die "--builddir needs a value"; build=$2; shift ;;
    --tsv) [ $# -ge 2 ] || die "--tsv needs a value"; tsv=$2; shift ;;
    --no-build) build_it=0 ;;
    -h | --help) usage 0 ;;
    *) echo "bench_models.sh: unknown option '$1'" >&2; usage 2 >&2 ;;
    esac
    shift
done
for n in "$repeat" "$epochs" "$threads" "$blas"; do
    case "$n" in
    '' | *[!0-9]*) die "'$n' is not a whole number" ;;
    esac
done
[ "$repeat" -ge 1 ] || die "--repeat must be at least 1"
[ "$epochs" -ge 2 ] || die "--epochs must be at least 2 (the first holds the compile)"
for m in $models; do
    case "$m" in
    resnet18 | resnet18_224 | mobilenet_v2 | transformer | lstm | mlp) ;;
    *) die "unknown model '$m' (resnet18 resnet18_224 mobilenet_v2 transformer lstm mlp)" ;;
    esac
done
for m in $modes; do
    case "$m" in
    sgdm | adam | infer) ;;
    *) die "unknown mode '$m' (sgdm adam infer)" ;;
    esac
done
for r in $runners; do
    case "$r" in
    ipumodel | cpu | pytorch) ;;
    *) die "unknown runner '$r' (ipumodel cpu pytorch)" ;;
    esac
done
if [ "$threads" -eq 0 ]; then
    threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
fi

build=$(cd "$build" 2>/dev/null && pwd) || die "no build tree '$build'"
[ -f "$build/Makefile" ] ||
    die "$build is not a configured build tree (run configure there)"
if [ "$build_it" -eq 1 ]; then
    make -s -C "$build" tools/popc ops/math.la ops/tensor.la ops/nn.la \
        ops/loss.la optim/sgd.la optim/adam.la backends/cpu.la \
        backends/ipumodel.la >/dev/null || die "building popc in $build failed"
fi
[ -x "$build/tools/popc" ] || die "no $build/tools/popc; build it first"
POPC_PLUGIN_PATH="$build/ops:$build/optim:$build/backends"
export POPC_PLUGIN_PATH
popc="$build/tools/popc"
/usr/bin/python3 -c 'import torch, torchvision, onnx' >/dev/null 2>&1 ||
    die "/usr/bin/python3 needs torch, torchvision and onnx (scripts/install-deps --with-reference)"
/usr/bin/time -f %M true >/dev/null 2>&1 ||
    die "/usr/bin/time is missing (Debian package time)"

[ -n "$data" ] || data="$build/bench-models"
mkdir -p "$data"
data=$(cd "$data" && pwd)
for m in $models; do
    if [ ! -f "$data/${m}_xl.npy" ]; then
        echo "exporting $m to $data" >&2
        /usr/bin/python3 "$here/torch_models.py" export "$data" "$m" \
            >"$data/export.log" 2>&1 ||
            { tail -5 "$data/export.log" >&2; die "exporting $m failed"; }
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_models.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
all="$work/all.tsv"
: >"$all"

# Value of "key": number in a JSON object.
json_num() {
    sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -n 1
}

# model -> "batch input-shape"
geometry() {
    case "$1" in
    transformer) echo "16 128, 256" ;;
    lstm) echo "32 64, 64" ;;
    mlp) echo "100 784" ;;
    resnet18_224) echo "8 3, 224, 224" ;;
    *) echo "32 3, 64, 64" ;;
    esac
}

# run_file MODEL MODE BACKEND FILE: a run file for popc train or infer
run_file() {
    g=$(geometry "$1")
    {
        printf '[options]\nbackend = %s\nthreads = %s\n' "$3" "$threads"
        if [ "$2" = infer ]; then
            printf '[model]\nonnx = %s/%s_infer.onnx\n' "$data" "$1"
        else
            printf '[model]\nonnx = %s/%s_train.onnx\n' "$data" "$1"
        fi
        printf 'input = %s\nclasses = 10\n' "${g#* }"
        printf '[data]\ntrain = %s/%s_x.npy\ntrain_labels = %s/%s_y.npy\n' \
            "$data" "$1" "$data" "$1"
        printf 'test = %s/%s_x.npy\ntest_labels = %s/%s_y.npy\n' \
            "$data" "$1" "$data" "$1"
        printf 'batch_size = %s\nshuffle = false\n' "${g%% *}"
        case "$2" in
        sgdm) printf '[optimizer]\nname = sgd\nlr = 0.01\nmomentum = 0.9\n' ;;
        adam) printf '[optimizer]\nname = adam\nlr = 0.001\n' ;;
        esac
        printf '[train]\nepochs = %s\nevaluate = false\n' "$epochs"
        printf 'weights = %s/w\nmodel = %s/m.ini\n[infer]\n' "$work" "$work"
    } >"$4"
}

# record MODEL MODE RUNNER SAMPLES/S MS/STEP RSS_MB
record() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$all"
}

# popc training MODEL MODE BACKEND
popc_train() {
    run_file "$1" "$2" "$3" "$work/run.ini"
    if ! /usr/bin/time -f %M -o "$work/rss" "$popc" train "$work/run.ini" \
        --quiet --json "$work/run.json" >"$work/out.txt" 2>"$work/err.txt"; then
        cat "$work/out.txt" "$work/err.txt" >&2
        die "popc train $1 ($2) on $3 failed"
    fi
    b=$(geometry "$1")
    # the epochs after the first: 4 steps each
    /usr/bin/python3 - "$work/run.json" "${b%% *}" "$(cat "$work/rss")" <<'EOF' >"$work/res"
import json, sys
d = json.load(open(sys.argv[1]))
secs = sum(e["seconds"] for e in d["epoch_results"][1:])
steps = 4 * (len(d["epoch_results"]) - 1)
print("%.2f %.2f %.0f" % (steps * int(sys.argv[2]) / secs,
                          1000 * secs / steps, int(sys.argv[3]) / 1024))
EOF
    # shellcheck disable=SC2046 # three numbers
    record "$1" "$2" "$3" $(cat "$work/res")
}

# popc inference MODEL BACKEND: 4 and 20 batches, rate from the difference
popc_infer() {
    run_file "$1" infer "$2" "$work/run.ini"
    for n in x xl; do
        if ! /usr/bin/time -f %M -o "$work/rss.$n" "$popc" infer \
            "$work/run.ini" --set "data.test=$data/${1}_$n.npy" \
            --set "data.test_labels=$data/${1}_y$(echo "$n" | cut -c2-).npy" \
            --json "$work/inf.$n.json" >"$work/out.txt" 2>"$work/err.txt"; then
            cat "$work/out.txt" "$work/err.txt" >&2
            die "popc infer $1 on $2 failed"
        fi
    done
    b=$(geometry "$1")
    awk -v t1="$(json_num seconds "$work/inf.x.json")" \
        -v n1="$(json_num samples "$work/inf.x.json")" \
        -v t2="$(json_num seconds "$work/inf.xl.json")" \
        -v n2="$(json_num samples "$work/inf.xl.json")" \
        -v b="${b%% *}" -v r="$(cat "$work/rss.x")" 'BEGIN {
        s = (n2 - n1) / (t2 - t1)
        printf "%.2f %.2f %.0f\n", s, 1000 * b / s, r / 1024 }' >"$work/res"
    # shellcheck disable=SC2046 # three numbers
    record "$1" infer "$2" $(cat "$work/res")
}

# PyTorch MODEL MODE BLAS THREADS [LABEL]
torch_run() {
    steps=$((4 * (epochs - 1)))
    [ "$2" = infer ] && steps=16
    if ! OPENBLAS_NUM_THREADS=$3 /usr/bin/python3 "$here/torch_models.py" \
        run "$data" "$1" "$2" "$steps" "$4" >"$work/t.json" 2>"$work/err.txt"
    then
        cat "$work/err.txt" >&2
        die "torch_models.py run $1 $2 failed"
    fi
    # shellcheck disable=SC2046 # three numbers
    record "$1" "$2" "${5:-pytorch}" $(awk \
        -v s="$(json_num samples_per_s "$work/t.json")" \
        -v t="$(json_num ms_per_step "$work/t.json")" \
        -v r="$(json_num peak_rss_mb "$work/t.json")" \
        'BEGIN { printf "%.2f %.2f %.0f\n", s, t, r }')
}

# median FIELD MODEL MODE RUNNER (field 4 samples/s, 5 ms, 6 MB)
median() {
    awk -F '\t' -v m="$2" -v o="$3" -v r="$4" -v f="$1" \
        '$1 == m && $2 == o && $3 == r { print $f }' "$all" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "-";
             else if (NR % 2) print v[(NR + 1) / 2];
             else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# PyTorch's thread setting per model: "BLAS THREADS"
for m in $models; do
    eval "setting_$m=\"\$blas \$threads\""
done
if [ "$sweep" -eq 1 ] && echo " $runners " | grep -q ' pytorch '; then
    for m in $models; do
        best=
        bestv=0
        for b in 1 "$threads"; do
            for t in 1 "$threads"; do
                i=0
                while [ "$i" -lt "$repeat" ]; do
                    torch_run "$m" sgdm "$b" "$t" "sweep-$b-$t"
                    i=$((i + 1))
                done
                v=$(median 4 "$m" sgdm "sweep-$b-$t")
                echo "sweep: $m sgdm OPENBLAS_NUM_THREADS=$b torch threads $t:" \
                    "$v samples/s" >&2
                if awk -v a="$v" -v b="$bestv" 'BEGIN { exit !(a > b) }'; then
                    best="$b $t"
                    bestv=$v
                fi
                [ "$threads" -eq 1 ] && break
            done
            [ "$threads" -eq 1 ] && break
        done
        eval "setting_$m=\$best"
    done
fi

for m in $models; do
    for o in $modes; do
        i=0
        while [ "$i" -lt "$repeat" ]; do
            for r in $runners; do
                case "$r" in
                pytorch)
                    eval "s=\$setting_$m"
                    # shellcheck disable=SC2086,SC2154 # "BLAS THREADS"
                    torch_run "$m" "$o" $s
                    ;;
                *)
                    if [ "$o" = infer ]; then
                        popc_infer "$m" "$r"
                    else
                        popc_train "$m" "$o" "$r"
                    fi
                    ;;
                esac
            done
            i=$((i + 1))
        done
    done
done

# compile time of a training compile, then of the same compile hitting
# the executable cache
compile_ms() {
    run_file "$1" sgdm ipumodel "$work/run.ini"
    POPC_LOG_LEVEL=INFO "$popc" train "$work/run.ini" --quiet \
        --set train.epochs=1 --set "options.enableExecutableCaching=$2" \
        >/dev/null 2>"$work/log.txt" || die "popc train $1 (compile) failed"
    sed -n "s/.*Compiling '[^']*': done in \([0-9.]*\) s.*/\1/p" \
        "$work/log.txt" | head -n 1 | awk '{ printf "%.0f", 1000 * $1 }'
}

cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "popc vs PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)');" \
    "$(getconf _NPROCESSORS_ONLN) cores ($cpu); popc ipumodel $threads workers;" \
    "median of $repeat"
printf '%-13s %-6s %-9s %11s %10s %8s %12s\n' model mode runner samples/s \
    ms/step "peak MB" "popc/PyTorch"
for m in $models; do
    eval "s=\$setting_$m"
    # shellcheck disable=SC2154 # set by eval
    echo "$m: PyTorch at OPENBLAS_NUM_THREADS=${s% *}, torch threads ${s#* }"
done
for m in $models; do
    for o in $modes; do
        tv=$(median 4 "$m" "$o" pytorch)
        for r in $runners; do
            v=$(median 4 "$m" "$o" "$r")
            ratio=
            if [ "$r" != pytorch ] && [ "$tv" != - ] && [ "$v" != - ]; then
                ratio=$(awk -v a="$v" -v b="$tv" 'BEGIN { printf "%.2f", a / b }')
            fi
            printf '%-13s %-6s %-9s %11s %10s %8s %12s\n' "$m" "$o" "$r" "$v" \
                "$(median 5 "$m" "$o" "$r")" "$(median 6 "$m" "$o" "$r")" \
                "$ratio"
        done
    done
done
if echo " $runners " | grep -q ' ipumodel '; then
    for m in $models; do
        rm -rf "$work/cache"
        first=$(compile_ms "$m" "$work/cache")
        hit=$(compile_ms "$m" "$work/cache")
        echo "compile $m (training, ipumodel): $first ms; cache hit: $hit ms"
    done
fi
[ -z "$tsv" ] || cp "$all" "$tsv"
