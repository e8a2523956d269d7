#!/bin/sh
# test_man.sh - the manual pages popc installs, popc(1) and popc-run(5),
# format without a warning (groff -man -ww), popc(1) describes every
# command `popc --help` lists, and popc-run(5) every section of the run
# file that docs/ini-format.md documents.
#
# Environment (set by make check): POPC, POPC_SRCDIR.
set -u

: "${POPC:?set POPC to the popc binary}"
: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
fail=0
command -v groff >/dev/null 2>&1 || {
    echo "FAIL: groff is missing (Debian package groff-base)"
    exit 1
}
for page in "$POPC_SRCDIR"/man/popc.1 "$POPC_SRCDIR"/man/popc-run.5; do
    out=$(groff -man -ww -z "$page" 2>&1)
    if [ -n "$out" ]; then
        echo "FAIL: $page has formatting warnings:"
        echo "$out"
        fail=1
    fi
done
# every command of popc --help is in popc(1)
cmds=$("$POPC" --help | awk '/^Commands:/ {on = 1; next}
    /^$/ {on = 0} on && /^  [a-z]/ {print $1}' | sort -u)
[ -n "$cmds" ] || { echo "FAIL: popc --help listed no command"; fail=1; }
for c in $cmds; do
    grep -q "^\.B $c\$" "$POPC_SRCDIR/man/popc.1" || {
        echo "FAIL: popc(1) does not describe the command '$c'"
        fail=1
    }
done
# every run-file section of docs/ini-format.md is in popc-run(5)
sections=$(sed -n 's/^## `\[\([a-z]*\).*/\1/p' \
    "$POPC_SRCDIR/docs/ini-format.md" | sort -u)
[ -n "$sections" ] || { echo "FAIL: no sections in ini-format.md"; fail=1; }
for s in $sections; do
    grep -q "^\.BI\? \"\?\[$s" "$POPC_SRCDIR/man/popc-run.5" || {
        echo "FAIL: popc-run(5) does not describe the section [$s]"
        fail=1
    }
done
[ $fail -eq 0 ] && echo "PASS: popc(1) and popc-run(5) format cleanly;" \
    "commands:" $cmds "; sections:" $sections
exit $fail
