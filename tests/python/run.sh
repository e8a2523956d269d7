#!/bin/sh
# run.sh TEST.py - run one popc.poptorch test with python3 (configure's
# PYTHON, else /usr/bin/python3) against the build tree: the package from
# the source tree, libpopc from the build's .libs, plugins from
# POPC_PLUGIN_PATH (tests/local.mk); POPC_PACKAGE_DIR and POPC_LIBRARY_DIR
# choose an installed package and its libraries instead. In a sanitizer build, libpopc needs
# the sanitizer runtimes loaded first, so they are preloaded; leak
# detection is off there, as the Python interpreter and torch keep memory
# until exit by design (popc's own leaks are the C tests' business).
PY=${POPC_PYTHON:-/usr/bin/python3}
[ -n "$PY" ] || PY=/usr/bin/python3
if ! "$PY" -c "import torch, numpy" 2>/dev/null; then
    echo "SKIP: $PY has no torch or numpy (scripts/install-deps --with-reference installs python3-torch and python3-numpy)"
    exit 77
fi
PYTHONPATH="${POPC_PACKAGE_DIR:-$POPC_SRCDIR/python}${PYTHONPATH:+:$PYTHONPATH}"
POPC_LIBRARY_DIR="${POPC_LIBRARY_DIR:-$POPC_BUILDDIR/.libs}"
export PYTHONPATH POPC_LIBRARY_DIR
lib="$POPC_LIBRARY_DIR/libpopc.so.0"
runtimes=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|ubsan|tsan)\.so/ {print $3}' | tr '\n' ' ')
case "$runtimes" in
*tsan*)
    echo "SKIP: a ThreadSanitizer build cannot be loaded into python3"
    exit 77 ;;
?*)
    LD_PRELOAD="$runtimes"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS ;;
esac
exec "$PY" "$1"
