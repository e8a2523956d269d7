#!/bin/sh
# run.sh - mutation check: does each feature's test notice when its central
# branch is broken?
#
# Usage: tests/mutants/run.sh [-b BUILDDIR] [-l LIST] [NAME...]
#        make check-mutants            (from the build directory)
#
# For each mutation of LIST (default tests/mutants/mutations.txt; the
# format is described at its top), or only those NAMEd: replace its text
# in its file, rebuild (make all, then the test program), run its test
# alone (make check-TESTS TESTS=...; its log is kept in
# BUILDDIR/tests/mutants.logs/NAME.log), and put the file back. A mutation
# the test fails on is killed; one it passes is survived. Prints one line
# per mutation and a table; exits 1 when one survived, its text was not
# found exactly once, or the build failed, and 0 when all were killed.
#
# The file is edited in place and restored by a trap on exit; a copy of
# the original is kept under BUILDDIR/tests/mutants.state until then, and
# a run that finds copies left by a killed run restores them first. The
# build is brought back to the real sources at the end. Not part of make
# check nor of CI: each mutation rebuilds, so a full run takes minutes.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${POPC_BUILDDIR:-$top/build}
list=$top/tests/mutants/mutations.txt
while getopts b:l: opt; do
    case $opt in
    b) build=$OPTARG ;;
    l) list=$OPTARG ;;
    *) echo "usage: $0 [-b BUILDDIR] [-l LIST] [NAME...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ -f "$build/Makefile" ] || {
    echo "run.sh: $build/Makefile: no configured build there; configure" \
        "one or give it with -b BUILDDIR" >&2
    exit 2
}
[ -f "$list" ] || { echo "run.sh: $list: no such mutation list" >&2; exit 2; }
command -v python3 >/dev/null || {
    echo "run.sh: python3 is needed to apply the mutations (Debian package" \
        "python3)" >&2
    exit 2
}
build=$(cd "$build" && pwd)
state=$build/tests/mutants.state
logs=$build/tests/mutants.logs
mkdir -p "$state" "$logs" || exit 2

# Put back every file a run (this one or a killed one) left mutated.
restore() {
    for saved in "$state"/*.orig; do
        [ -f "$saved" ] || continue
        target=$(cat "${saved%.orig}.path")
        # cat, not cp -p: a new mtime makes make rebuild from the original
        cat "$saved" >"$top/$target" && rm -f "$saved" "${saved%.orig}.path"
    done
}
restore
trap restore EXIT
trap 'exit 130' INT TERM HUP

# replace FILE FROM TO: FROM must occur exactly once.
replace() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1:]
with open(path, encoding="utf-8") as f:
    text = f.read()
n = text.count(old)
if n != 1:
    print("found %d times, not once" % n)
    sys.exit(1)
with open(path, "w", encoding="utf-8") as f:
    f.write(text.replace(old, new))
EOF
}

wanted() {
    [ $# -eq 0 ] && return 0
    for w in "$@"; do [ "$w" = "$name" ] && return 0; done
    return 1
}

killed=0 survived=0 broken=0
table=$(mktemp) || exit 2
trap 'restore; rm -f "$table"' EXIT

# build_for TEST: the libraries and plugins, then TEST's program.
build_for() {
    nice make -C "$build" -j2 all || return 1
    case $1 in
    *.sh) ;;
    *) nice make -C "$build" "$1" ;;
    esac
}

# run_one: the current block (name, file, from, to, test, why).
run_one() {
    wanted "$@" || return 0
    log=$logs/$name
    printf '%-28s %-34s ' "$name" "$test"
    cp "$top/$file" "$state/$name.orig" && echo "$file" >"$state/$name.path"
    if ! why_not=$(replace "$top/$file" "$from" "$to"); then
        rm -f "$state/$name.orig" "$state/$name.path"
        result="BROKEN (text in $file $why_not)"
        broken=$((broken + 1))
    elif ! build_for "$test" >"$log.build" 2>&1; then
        result="BROKEN (does not build: $log.build)"
        broken=$((broken + 1))
    elif nice make -C "$build" check-TESTS TESTS="$test" >"$log.test" 2>&1
    then
        result="SURVIVED ($why)"
        survived=$((survived + 1))
    else
        result="killed"
        killed=$((killed + 1))
    fi
    # the test's own log says which assertion killed the mutation
    [ -f "$build/$test.log" ] && cp "$build/$test.log" "$log.log"
    restore
    echo "$result"
    printf '%-28s %-30s %s\n' "$name" "$file" "$result" >>"$table"
}

name='' file='' from='' to='' test='' why='' n=0
while IFS= read -r line || [ -n "$line" ]; do
    case $line in
    '#'*) continue ;;
    'name: '*) name=${line#name: } ;;
    'file: '*) file=${line#file: } ;;
    'from: '*) from=${line#from: } ;;
    'to: '*) to=${line#to: } ;;
    'test: '*) test=${line#test: } ;;
    'why: '*) why=${line#why: } ;;
    '')
        if [ -n "$name" ]; then
            n=$((n + 1))
            run_one "$@"
        fi
        name='' file='' from='' to='' test='' why=''
        ;;
    *) echo "run.sh: $list: cannot read the line: $line" >&2; exit 2 ;;
    esac
done <"$list"
if [ -n "$name" ]; then
    n=$((n + 1))
    run_one "$@"
fi

# back to the real sources (the test programs relink when next built)
nice make -C "$build" -j2 all >"$logs/rebuild" 2>&1 ||
    echo "run.sh: rebuilding the real sources failed: $logs/rebuild"
echo
echo "mutation                     file                           result"
cat "$table"
echo "$((killed + survived + broken)) run of $n listed: $killed killed," \
    "$survived survived, $broken broken"
[ $((killed + survived + broken)) -gt 0 ] || {
    echo "run.sh: no mutation matched: nothing was checked"
    exit 1
}
[ $survived -eq 0 ] && [ $broken -eq 0 ]
