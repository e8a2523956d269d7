#!/bin/sh
# test_conformance_cli.sh - the ONNX backend test suite (libonnx-testdata)
# through the command line: every case's data sets are written as .npy
# files and run with `popc infer model.onnx -i NAME=FILE.npy ... -o DIR`
# on cpu and ipumodel, and the .npy files it writes are compared with the
# expected outputs. The expected failures are the C API's
# (tests/onnx/expected-failures.txt), so the CLI passes exactly the cases
# tests/onnx/test_conformance.sh passes.
data=/usr/share/libonnx-testdata/data
if [ ! -d "$data/node" ]; then
    echo "SKIP: $data not found; install libonnx-testdata (scripts/install-deps does)"
    exit 77
fi
exec "$POPC_BUILDDIR/tests/onnx/conformance" --data "$data" --backend both \
    --cli "$POPC_BUILDDIR/tools/popc" \
    --expected "$POPC_SRCDIR/tests/onnx/expected-failures.txt"
