#!/bin/sh
# test_core_names.sh - the core knows no backend, optimizer, collectives
# plugin or op by name: it picks backends by capabilities and scores
# (popc_registry_best_backend), builds the ops of its own passes by role
# (popc_registry_find_role) and reads its defaults from the option table
# (core/layer/options_list.h and options_table.c, the only files allowed
# to spell them). Every name a plugin of this tree registers, and every op
# `popc plugins` lists, is looked for, quoted, in the code of core/
# (comments may cite examples). Option values that share an op's name
# (outputMode "Sum") are spelled only in the option files and anchors.c.
#
# Environment (set by make check): POPC_SRCDIR; POPC (the built CLI).
set -u

: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
src=$POPC_SRCDIR
fail=0

# the names the plugins register: `.name = "..."` of their definitions
names=$(grep -ho '\.name = "[a-z0-9_]*"' "$src"/backends/*/*.c \
    "$src"/optim/*.c "$src"/collectives/*.c | sed 's/.*"\(.*\)"/\1/' |
    sort -u)
[ -n "$names" ] || { echo "FAIL: no plugin names found"; exit 1; }
: "${POPC:?set POPC to the built popc command}"
ops=$("$POPC" plugins 2>/dev/null | sed -n 's/^ *ops ([0-9]*): //p' |
    tr ',' '\n' | sed 's/.*:://; s/@.*//' | sort -u)
nops=$(printf '%s\n' "$ops" | grep -c .)
[ "$nops" -gt 150 ] || { echo "FAIL: popc plugins listed $nops ops"; exit 1; }
count=0
for n in $names $ops; do
    count=$((count + 1))
    hits=""
    for f in $(find "$src/core" -name '*.[ch]' ! -path '*/include/*'); do
        case $f in */options_table.c | */options_list.h) continue ;; esac
        case $n in [A-Z]*) case $f in */options/*.c | */anchors.c) continue
            ;; esac ;; esac
        # code only: comments (this tree's /* and ** lines) may give examples
        h=$(sed -e 's|/\*.*\*/||g' -e '/^[[:space:]]*\*\*/d' \
            -e '/^[[:space:]]*\/\*/d' "$f" | grep -n "\"$n\"")
        [ -n "$h" ] && hits="$hits$f: $h
"
    done
    if [ -n "$hits" ]; then
        echo "FAIL: the core names the plugin '$n':"
        echo "$hits"
        fail=1
    fi
done
[ $fail -eq 0 ] && echo "PASS: core/ names none of the $count plugin and" \
    "op names ($(echo $names | tr '\n' ' ') and $nops ops)"
exit $fail
