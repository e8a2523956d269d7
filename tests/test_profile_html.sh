#!/bin/sh
# test_profile_html.sh - the enableProfiling page draws its charts in a
# real browser: tests/make_profile writes a profile (a pipelined training
# run on the ipumodel backend), headless Chromium loads profile.html from
# the file system with networking off, and the DOM it dumps must show
# every chart drawn (data-drawn="N" with N > 0, SVG rects, no chart
# error). The screenshot is kept (profile-html.png in the build's tests
# directory); the working
# files are removed unless the test fails.
# Exit 77 (skipped) when Chromium is not installed.
set -u

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
    echo "SKIP: $CHROMIUM is not installed"
    exit 77
fi
builddir=${POPC_BUILDDIR:-.}
make_profile=${MAKE_PROFILE:-$builddir/tests/make_profile}
shot=$builddir/tests/profile-html.png
out=$(mktemp -d "${TMPDIR:-/tmp}/popc-profile-html.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL: $*"
    trap - EXIT
    echo "files kept in $out"
    exit 1
}

"$make_profile" "$out/profile" || fail "make_profile could not write a profile"
# the training model profiles into its modelName subdirectory
prof=$out/profile/training
for f in profile.json profile.html; do
    [ -s "$prof/$f" ] || fail "$f is missing"
done
if ls "$prof" | grep -q 'tmp'; then
    fail "temporary files left behind: $(ls "$prof")"
fi
# self-contained: no external resource of any kind
if grep -Eq '<(script|link|img|iframe)[^>]+(src|href)=' "$prof/profile.html"; then
    fail "profile.html loads an external resource"
fi

chrome() {
    # no network (a dead proxy too), no first-run work, a throwaway
    # browser profile
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
        --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync \
        --user-data-dir="$out/browser" --proxy-server=127.0.0.1:9 \
        --virtual-time-budget=5000 "$@" 2>>"$out/chromium.log"
}

url="file://$(cd "$prof" && pwd)/profile.html"
chrome --dump-dom "$url" >"$out/dom.html" ||
    fail "chromium could not dump the DOM (see $out/chromium.log)"
grep -q 'data-ready="1"' "$out/dom.html" ||
    fail "the page script did not finish (see $out/dom.html)"
for chart in chart-memory chart-ops chart-stages chart-runs chart-timeline; do
    n=$(grep -o "id=\"$chart\"[^>]*data-drawn=\"[0-9]*\"" "$out/dom.html" |
        sed 's/.*data-drawn="\([0-9]*\)"/\1/')
    [ -n "$n" ] || fail "$chart has no data-drawn attribute"
    [ "$n" -gt 0 ] || fail "$chart drew nothing"
    echo "$chart: $n shapes"
done
rects=$(grep -o '<rect' "$out/dom.html" | wc -l)
[ "$rects" -gt 100 ] || fail "only $rects rect elements in the page"
echo "rects: $rects"
if grep -q 'class="chart-error"' "$out/dom.html"; then
    fail "a chart raised an error: $(grep -o 'chart failed[^<]*' "$out/dom.html")"
fi

chrome --screenshot="$out/profile.png" --window-size=1400,1800 \
    --hide-scrollbars "$url" >/dev/null ||
    fail "chromium could not take a screenshot"
[ -s "$out/profile.png" ] || fail "no screenshot"
cp "$out/profile.png" "$shot" || fail "cannot keep the screenshot as $shot"
echo "screenshot: $shot"
exit 0
