#!/bin/sh
# test_headers.sh - every public header compiles on its own (C11, -Wall
# -Wextra, no warnings), and graph.h, which programs include to build
# graphs, does not pull in the plugin ABI (popc/plugin.h); the layers of
# libpopc (core, tensorops, random, optread, strategy, fileio, encode, compat, optfmt, opt, dist, extend, exe, profile, helpers, data, run, onnx)
# include only downward (lib/, the assembly above them all, names the
# layers it lists),
# helpers/ uses only the core's public headers, and no file outside core/
# includes a core *_priv.h (core/layer/ holds what the layers may use).
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

# the layers of libpopc, lowest first: a layer includes only its own and
# lower layers' headers (docs/architecture.md)
layers="core tensorops random optread strategy fileio encode compat optfmt opt dist extend exe profile helpers data run onnx"
incs=""
for l in $layers; do incs="$incs -I$POPC_SRCDIR/$l/include"; done
for l in $layers; do
    for h in "$POPC_SRCDIR/$l"/include/popc/*.h; do
        [ -e "$h" ] || continue # a layer without public headers
        name=popc/$(basename "$h")
        printf '#include "%s"\nint main(void) { return 0; }\n' "$name" \
            >"$tmp/one.c"
        # shellcheck disable=SC2086
        if ! $cc -std=c11 -Wall -Wextra -Werror $incs -c "$tmp/one.c" \
            -o "$tmp/one.o" 2>"$tmp/err"; then
            echo "FAIL: $name does not compile on its own:"
            cat "$tmp/err"
            fail=1
        fi
        n=$((n + 1))
    done
done
printf '#include "popc/graph.h"\n#ifdef POPC_PLUGIN_H\n#error plugin.h\n#endif\n' \
    >"$tmp/graph.c"
if ! $cc -std=c11 -I"$inc" -c "$tmp/graph.c" -o "$tmp/graph.o" 2>/dev/null
then
    echo "FAIL: popc/graph.h includes the plugin ABI (popc/plugin.h)"
    fail=1
fi
[ "$n" -gt 10 ] || { echo "FAIL: only $n headers found"; fail=1; }
# layering: no layer includes a header of a layer above it
above=$layers
for l in $layers; do
    above=${above#"$l"}
    above=${above# }
    for u in $above; do
        pats="#include \"$u/"
        for h in "$POPC_SRCDIR/$u"/include/popc/*.h; do
            [ -e "$h" ] || continue
            pats="$pats
include \"popc/$(basename "$h")\"
include <popc/$(basename "$h")>"
        done
        files=$(find "$POPC_SRCDIR/$l" -name '*.[ch]' 2>/dev/null)
        [ -n "$files" ] || continue
        # shellcheck disable=SC2086
        if grep -lF "$pats" $files | grep .; then
            echo "FAIL: $l/ includes the $u layer above it (files above)"
            fail=1
        fi
    done
done
# every public header with functions states their version and points to
# the conventions of popc/status.h (ownership, status codes, threads)
for l in $layers; do
    for h in "$POPC_SRCDIR/$l"/include/popc/*.h; do
        [ -e "$h" ] || continue
        grep -q '^POPC_API' "$h" || continue
        head=$(sed -n '1,/\*\//p' "$h")
        if ! printf '%s' "$head" | grep -q '[Ss]ince [0-9]' ||
            ! printf '%s' "$head" | grep -q 'popc/status.h\|Conventions'; then
            echo "FAIL: $h: its first comment must give the version of its"\
                 "functions (Since X.Y.Z) and cite popc/status.h's conventions"
            fail=1
        fi
    done
done
# helpers/ builds graphs through the public API only
if grep -l '#include "core/' "$POPC_SRCDIR"/helpers/*.c \
        "$POPC_SRCDIR"/helpers/*.h 2>/dev/null | grep .; then
    echo "FAIL: helpers/ includes private core headers (above)"
    fail=1
fi
# no file outside core/ includes a private header of the core (a
# core/**/*_priv.h): the layers use the narrow interfaces of core/layer/.
priv_pending=""
for d in "$POPC_SRCDIR"/*/; do
    d=${d%/}
    name=$(basename "$d")
    case $name in core | build | build-* | autom4te.cache) continue ;; esac
    offenders=$(grep -rlE '#[[:space:]]*include[[:space:]]*"core/([^"]*/)?[^"/]*_priv\.h"' \
        --include='*.[ch]' "$d" 2>/dev/null)
    [ -n "$offenders" ] || continue
    case " $priv_pending " in
    *" $name "*)
        for f in $offenders; do echo "TODO: ${f#"$POPC_SRCDIR"/} includes a core *_priv.h"; done
        ;;
    *)
        for f in $offenders; do echo "FAIL: ${f#"$POPC_SRCDIR"/} includes a core *_priv.h (use core/layer/)"; done
        fail=1
        ;;
    esac
done
[ $fail -eq 0 ] && echo "PASS: $n public headers compile alone; graph.h" \
    "stays clear of plugin.h; the layers $layers include only downward"
exit $fail
