#!/bin/sh
# test_op_sources.sh - the op plugins build on the host, not on the core's
# sources: no build fragment of ops/ or plugins/ compiles a file of core/,
# no source there includes a core header ("core/..."), one op utility
# library serves them all (prefix opu_, in ops/util/; the former opsu_
# library is gone), and float16 conversion is not written again outside
# the core (the plugins get it from the host's services, popc/services.h).
#
# Environment (set by make check): POPC_SRCDIR.
set -u

: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
cd "$POPC_SRCDIR" || exit 1
fail=0

bad() {
    echo "FAIL: $1"
    printf '%s\n' "$2" | sed 's/^/    /'
    fail=1
}

# sources of core/ listed in an ops or plugins build fragment
hits=$(grep -n 'core/' ops/*.mk plugins/local.mk 2>/dev/null |
    grep -v '^[^:]*:[0-9]*:#')
[ -z "$hits" ] || bad "op build fragments compile core sources; use the \
host's services (popc/services.h) instead" "$hits"

# core headers included by op or example plugin sources
hits=$(grep -rn '#include "core/' ops plugins --include='*.c' --include='*.h')
[ -z "$hits" ] || bad "op sources include core headers; plugins see only \
the installed popc/*.h" "$hits"

# the second op helper library's prefix
hits=$(grep -rnw -e 'opsu_[a-z_0-9]*' -e 'OPSU_[A-Z_0-9]*' ops plugins \
    --include='*.c' --include='*.h' | grep -o '^[^:]*:[0-9]*' | head -5)
[ -z "$hits" ] || bad "opsu_ helpers are back; the op utility library is \
ops/util/ (opu_)" "$hits"

# a binary16 conversion written by hand: the exponent rebias (112 << 23 or
# (e + 112)), the float16 infinity mask next to a 13-bit shift, or the
# hidden bit put back into a 10-bit fraction
f16='\+ ?112u?\)? ?<< ?23|<< 13\).*0x7c00|0x7c00.*>> 13|\| ?0x400u?\)'
hits=$(grep -rnE "$f16" ops plugins --include='*.c' --include='*.h')
[ -z "$hits" ] || bad "float16 conversion written again; look up \
popc_f16_to_f32_n / popc_f32_to_f16_n (popc/services.h) in init()" "$hits"

# the op utility library exists where the makefiles say
[ -f ops/util/oputil.h ] && grep -q 'util/libopu.la' ops/util.mk ||
    bad "ops/util/libopu.la is not built" "ops/util.mk"
for mk in ops/math.mk ops/nn.mk; do
    n=$(grep -c 'LIBADD = %reldir%/util/libopu.la' "$mk")
    [ "$n" -gt 0 ] || bad "$mk: a plugin does not link the op utility \
library" "$mk"
done

[ "$fail" -eq 0 ] && echo "PASS: op plugins use the host's services and one \
op utility library"
exit "$fail"
