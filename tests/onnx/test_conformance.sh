#!/bin/sh
# test_conformance.sh - the ONNX backend test suite (libonnx-testdata) on
# the cpu and ipumodel backends. Fails when a case outside
# tests/onnx/expected-failures.txt fails, or a case in it now passes.
data=/usr/share/libonnx-testdata/data
if [ ! -d "$data/node" ]; then
    echo "SKIP: $data not found; install libonnx-testdata (scripts/install-deps does)"
    exit 77
fi
exec "$POPC_BUILDDIR/tests/onnx/conformance" --data "$data" --backend both \
    --expected "$POPC_SRCDIR/tests/onnx/expected-failures.txt"
