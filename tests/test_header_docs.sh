#!/bin/sh
# test_header_docs.sh - every public function is documented where it is
# declared, in the manner of sqlite3.h: the comment block right above
# each POPC_API declaration (no blank line between them; a comment on the
# declaration's own lines counts too) states
#   the version it appeared in      "Since X.Y.Z"
#   its thread safety               a sentence with "thread"
#   its status codes                POPC_OK / POPC_E... (popc_status only)
#   who owns what it hands back     own/borrow/free/valid/copy/static/
#                                   reference (pointer results and
#                                   pointer-to-pointer outputs only)
# status.h states the shared conventions these sentences refer to.
#
# Environment (set by make check): POPC_SRCDIR.
set -u

: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
fail=0
total=0
for h in "$POPC_SRCDIR"/*/include/popc/*.h; do
    out=$(awk -v file="${h#"$POPC_SRCDIR"/}" '
    function check(decl, text,   name, miss) {
        name = decl
        sub(/\(.*/, "", name)
        sub(/.*[ *]/, "", name)
        miss = ""
        if (text !~ /Since [0-9]+\.[0-9]+/) miss = miss " version"
        if (text !~ /[Tt]hread/) miss = miss " threads"
        if (decl ~ status_decl && text !~ /POPC_(OK|E[A-Z]+)/)
            miss = miss " status"
        if ((decl ~ pointer_result || decl ~ /\*\*/) && text !~ owner_words)
            miss = miss " ownership"
        n++
        if (miss != "") printf "%s: %s lacks:%s\n", file, name, miss
    }
    BEGIN {
        block = ""; in_c = 0; in_d = 0; prev_c = 0; n = 0
        status_decl = "^[ \t]*POPC_API[ \t]+(POPC_NODISCARD[ \t]+)?" \
            "popc_status[ \t]"
        pointer_result = "\\*[ \t]*popc_[a-z0-9_]+[ \t]*\\("
        owner_words = "[Oo]wn|[Bb]orrow|[Ff]ree|[Vv]alid|[Cc]op(y|ie)|" \
            "[Ss]tatic|[Rr]eference|[Rr]elease"
    }
    in_d {
        decl = decl " " $0
        if ($0 ~ /;/) { in_d = 0; check(decl, block " " decl); block = "";
                        prev_c = 0 }
        next
    }
    in_c {
        block = block " " $0
        if ($0 ~ /\*\//) in_c = 0
        next
    }
    /^[ \t]*\/\*/ {
        if (!prev_c) block = ""
        block = block " " $0
        prev_c = 1
        if ($0 !~ /\*\//) in_c = 1
        next
    }
    /^[ \t]*POPC_API[ \t]/ {
        decl = $0
        if (!prev_c) block = ""
        if ($0 ~ /;/) { check(decl, block " " decl); block = ""; prev_c = 0 }
        else in_d = 1
        next
    }
    { block = ""; prev_c = 0 }
    END { printf "#count %d\n", n }
    ' "$h")
    c=$(printf '%s\n' "$out" | sed -n 's/^#count //p')
    total=$((total + c))
    bad=$(printf '%s\n' "$out" | grep -v '^#count ')
    if [ -n "$bad" ]; then
        printf '%s\n' "$bad"
        fail=1
    fi
done
[ "$total" -gt 300 ] ||
    { echo "FAIL: only $total declarations found"; exit 1; }
if [ $fail -eq 0 ]; then
    echo "PASS: all $total public functions state version, threads," \
        "status codes and ownership"
else
    echo "FAIL: public functions above lack documentation (see the list)"
fi
exit $fail
