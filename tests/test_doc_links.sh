#!/bin/sh
# test_doc_links.sh - what the documentation and the code cite is in the
# repository: every document under docs/ and man/ named in the
# README, docs/ and source comments exists, and nothing cites the files
# outside the tree that the project was specified from. Then
# tests/cited_in_comments.py reads the comments of every source file: each
# file path and .md name there names a file of the tree, and each §N or
# rule id (here and in README.md and docs/) is one of docs/semantics.md.
# Each part counts what it checked and fails on nothing checked.
#
# Environment (set by make check): POPC_SRCDIR.
set -u

: "${POPC_SRCDIR:?set POPC_SRCDIR to the source tree}"
cd "$POPC_SRCDIR" || exit 1
fail=0
files=$(find README.md docs core helpers data run onnx ops optim backends \
    collectives tools examples plugins bench tests fuzz man python exe \
    profile opt lib scripts strategy \
    \( -name '*.c' -o -name '*.h' -o -name '*.md' -o -name '*.sh' \
    -o -name '*.mk' -o -name '*.py' -o -name '*.1' -o -name '*.5' \) \
    -type f 2>/dev/null | grep -v '^tests/data/')
# shellcheck disable=SC2086
outside=$(grep -n 'poptorch-semantics\.md\|\.\./shared/' $files |
    grep -v '^tests/test_doc_links\.sh:')
if [ -n "$outside" ]; then
    echo "FAIL: citations of files outside the repository:"
    echo "$outside"
    fail=1
fi
n=0
# shellcheck disable=SC2086
for ref in $(grep -oh '\(docs\|man\)/[A-Za-z0-9_.-]*\.\(md\|png\|[15]\)' \
        $files | sort -u); do
    n=$((n + 1))
    [ -e "$ref" ] || { echo "FAIL: $ref is cited but missing"; fail=1; }
done
[ "$n" -gt 0 ] || { echo "FAIL: no cited document found: nothing checked"; \
    fail=1; }
if ! command -v python3 >/dev/null; then
    echo "FAIL: python3 is needed to read the comments (Debian package" \
        "python3, which scripts/install-deps installs)"
    exit 1
fi
python3 tests/cited_in_comments.py . || fail=1
[ $fail -eq 0 ] && echo "PASS: $n cited documents exist; nothing cites" \
    "files outside the repository; every citation in comments resolves"
exit $fail
