#!/bin/sh
# test_option_readers.sh - every option `popc options` lists as supported
# is read by code outside the option layer (by name, or by its typed id
# POPCI_O_...): an option accepted but never
# read would change nothing, which the project treats as a defect. The
# option layer itself (core/options*.c, and optfmt/) parses, validates and writes
# options, so a name found only there does not count; the few options
# whose effect lives there are listed below with the place that reads
# them, and the list is checked too.
#
# Environment (set by make check): POPC, POPC_SRCDIR, POPC_PLUGIN_PATH.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"

src=$POPC_SRCDIR
fail=0

# name: where its effect is read, and a pattern that must occur there
allowed() {
    case $1 in
    maxRepeatLogs)  echo "core/options/options.c popc_log_set_max_repeats" ;;
    useIpuModel)    echo "core/options/options_table.c hook_use_ipu_model" ;;
    pluginPath)     echo "core/options/options_table.c popc_registry_load_path" ;;
    TensorLocations.set*Location.*)
                    echo "strategy/locations.c TensorLocations.set%sLocation.%s" ;;
    *)              echo "" ;;
    esac
}

supported=$("$POPC" options | awk '/^[A-Za-z]/ && !/not supported yet/ {print $1}')
[ -n "$supported" ] || { echo "FAIL: popc options listed nothing"; exit 1; }
count=0
for opt in $supported; do
    count=$((count + 1))
    # read by name (public API), or by id (POPCI_O_..., core/layer/options.h)
    id=POPCI_O_$(printf '%s' "$opt" | tr . _)
    if grep -rqF "\"$opt\"" "$src/core" "$src/helpers" "$src/data" \
        "$src/run" "$src/strategy" "$src/backends" "$src/optim" \
        "$src/ops" "$src/tools" "$src/onnx" --include='*.c' \
        --include='*.h' --exclude='options*.c' ||
        grep -rqw "$id" "$src/core" "$src/strategy" "$src/data" "$src/run" --include='*.c' \
        --exclude='options*.c'; then
        continue
    fi
    where=$(allowed "$opt")
    if [ -z "$where" ]; then
        echo "FAIL: supported option '$opt' is read nowhere outside the" \
             "option layer; build its effect or mark it not supported"
        fail=1
        continue
    fi
    file=${where%% *}
    pattern=${where#* }
    if ! grep -qF "$pattern" "$src/$file"; then
        echo "FAIL: option '$opt' should take effect through '$pattern' in" \
             "$file, which has no such code"
        fail=1
    else
        echo "ok: $opt (read in $file: $pattern)"
    fi
done
[ "$count" -gt 30 ] || { echo "FAIL: only $count supported options"; fail=1; }
echo "$count supported options checked"
exit $fail
