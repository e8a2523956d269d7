#!/bin/sh
# test_headers.sh - every public header compiles on its own (C11, -Wall
# -Wextra, no warnings), and graph.h, which programs include to build
# graphs, does not pull in the plugin ABI (popc/plugin.h); helpers/ uses
# only the core's public headers and the core never includes helpers/.
#
# Environment (set by make check): POPC_SRCDIR; CC (default cc).
set -u

: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
cc=${CC:-cc}
inc=$POPC_SRCDIR/core/include
tmp=$(mktemp -d "${TMPDIR:-/tmp}/popc-headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0

helpers=$POPC_SRCDIR/helpers/include
for h in "$inc"/popc/*.h "$helpers"/popc/*.h; do
    name=popc/$(basename "$h")
    printf '#include "%s"\nint main(void) { return 0; }\n' "$name" \
        >"$tmp/one.c"
    if ! $cc -std=c11 -Wall -Wextra -Werror -I"$inc" -I"$helpers" \
        -c "$tmp/one.c" \
        -o "$tmp/one.o" 2>"$tmp/err"; then
        echo "FAIL: $name does not compile on its own:"
        cat "$tmp/err"
        fail=1
    fi
    n=$((n + 1))
done
printf '#include "popc/graph.h"\n#ifdef POPC_PLUGIN_H\n#error plugin.h\n#endif\n' \
    >"$tmp/graph.c"
if ! $cc -std=c11 -I"$inc" -c "$tmp/graph.c" -o "$tmp/graph.o" 2>/dev/null
then
    echo "FAIL: popc/graph.h includes the plugin ABI (popc/plugin.h)"
    fail=1
fi
[ "$n" -gt 10 ] || { echo "FAIL: only $n headers found in $inc"; fail=1; }
# layering: helpers/ sits on the core's public API; the core never reads it
if grep -l '#include "core/' "$POPC_SRCDIR"/helpers/*.c \
        "$POPC_SRCDIR"/helpers/*.h 2>/dev/null | grep .; then
    echo "FAIL: helpers/ includes private core headers (above)"
    fail=1
fi
if grep -l 'popc/helpers.h\|popc/module.h' "$POPC_SRCDIR"/core/*.c \
        "$POPC_SRCDIR"/core/*.h "$inc"/popc/*.h 2>/dev/null | grep .; then
    echo "FAIL: the core includes the helpers layer (above)"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $n public headers compile alone; graph.h" \
    "stays clear of plugin.h; helpers/ and core/ keep their layers"
exit $fail
