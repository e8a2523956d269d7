#!/bin/sh
# test_export.sh - ONNX export: models exported by popc import again and
# compute bitwise the same outputs (export_roundtrip), and every file popc
# writes passes onnx.checker.check_model (python3-onnx; scripts/install-deps
# installs it).
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$POPC_BUILDDIR/tests/onnx/export_roundtrip" "$tmp" \
    "$POPC_SRCDIR/tests/onnx/models" "$POPC_SRCDIR/tests/onnx/flow" || exit 1
if ! /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    echo "FAIL: python3-onnx is needed to check the exported files (apt-get install python3-onnx)"
    exit 1
fi
/usr/bin/python3 - "$tmp" <<'PY'
import glob, os, sys
import onnx
files = sorted(glob.glob(os.path.join(sys.argv[1], "*.onnx")))
assert files, "no exported files"
for f in files:
    onnx.checker.check_model(onnx.load(f), full_check=True)
    print("ok: onnx.checker accepts", os.path.basename(f))
PY
