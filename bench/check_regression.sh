#!/bin/sh
# check_regression.sh - rerun bench_models.sh and compare each popc/PyTorch
# ratio with the one recorded in bench/ratios.txt, then bench_infer.sh and
# each popc/ONNX Runtime inference ratio (ResNet-18, MobileNetV2 and the
# transformer encoder at batch 1 and 16 or 8) with bench/ratios_ort.txt;
# any more than 10% below its record is flagged and the exit status is 1. Ratios rather than rates,
# because both sides run in the same session on the same machine; still,
# these machines are noisy, so this is not part of CI: run it by hand on a
# quiet machine before and after a change that touches a hot path.
#
#   bench/check_regression.sh [--builddir DIR] [--repeat N] [--tolerance F]
#                             [bench_models.sh options...]
#
# --tolerance F   flag ratios below (1 - F) x the record (default 0.10)
# --no-ort        skip the ONNX Runtime part
# Other options go to bench_models.sh (--models, --modes, --repeat, ...);
# without any, it runs as the record was made (--sweep --repeat 3
# --epochs 3).
# bench/ratios.txt holds "model mode runner ratio" lines (# comments), as
# bench/README.md's table; rewrite it when a change moves a ratio on
# purpose.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
tol=0.10
pass=
ort=1
while [ $# -gt 0 ]; do
    case "$1" in
    --no-ort) ort=0 ;;
    --tolerance)
        [ $# -ge 2 ] || { echo "check_regression.sh: --tolerance needs a value" >&2; exit 2; }
        tol=$2
        shift
        ;;
    -h | --help)
        sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *) pass="$pass $1" ;;
    esac
    shift
done
case "$tol" in
'' | *[!0-9.]* | .*[!0-9]* | *.*.*)
    echo "check_regression.sh: tolerance '$tol' is not a fraction like 0.10" >&2
    exit 2
    ;;
esac
# the recorded run's settings unless told otherwise
[ -n "$pass" ] || pass="--sweep --repeat 3 --epochs 3"
ratios="$here/ratios.txt"
[ -f "$ratios" ] || { echo "check_regression.sh: no $ratios" >&2; exit 2; }
out=$(mktemp "${TMPDIR:-/tmp}/check_regression.XXXXXX")
trap 'rm -f "$out"' EXIT INT TERM

status=0
# shellcheck disable=SC2086 # $pass is a word list of options
"$here/bench_models.sh" $pass | tee "$out"
echo
echo "ratios against $ratios (flagged below $(awk -v t="$tol" 'BEGIN { print 1 - t }') x the record):"
awk -v tol="$tol" '
    NR == FNR {
        if ($0 ~ /^#/ || NF < 4) next
        want[$1 " " $2 " " $3] = $4
        next
    }
    NF == 7 && ($3 == "ipumodel" || $3 == "cpu") {
        key = $1 " " $2 " " $3
        if (!(key in want)) next
        seen[key] = 1
        bad = $7 + 0 < (1 - tol) * want[key]
        printf "%-32s now %5.2f  recorded %5.2f  %s\n", key, $7, want[key],
               bad ? "REGRESSED" : "ok"
        if (bad) flagged++
    }
    END {
        for (k in want)
            if (!(k in seen)) missing++
        if (missing)
            printf "(%d recorded ratios were not measured in this run)\n", missing
        if (flagged) {
            printf "%d ratio(s) more than %d%% below the record\n", flagged, 100 * tol
            exit 1
        }
        print "no ratio more than " 100 * tol "% below its record"
    }' "$ratios" "$out" || status=1
[ "$ort" = 1 ] || exit $status
# the inference anchor: popc (optimizationLevel 2) / ONNX Runtime speed
"$here/bench_infer.sh" --levels 2 | tee "$out"
echo
echo "ratios against $here/ratios_ort.txt:"
awk -v tol="$tol" '
    NR == FNR {
        if ($0 ~ /^#/ || NF < 3) next
        want[$1 " " $2] = $3
        next
    }
    $3 == "popc-L2" {
        key = $1 " " $2
        if (!(key in want)) next
        now = $5 + 0
        bad = now < (1 - tol) * want[key]
        printf "%-24s now %5.2f  recorded %5.2f  %s\n", key, now, want[key],
               bad ? "REGRESSED" : "ok"
        if (bad) flagged++
    }
    END { if (flagged) exit 1 }' "$here/ratios_ort.txt" "$out" || status=1
exit $status
