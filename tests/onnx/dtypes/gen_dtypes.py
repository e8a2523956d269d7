#!/usr/bin/python3
"""A model over every dtype popc has, for `popc infer -i NAME=FILE.npy`
(tests/onnx/test_infer_cli.sh): one input per dtype (float32, float64,
float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32,
uint64, bool), each doubled (Add(x, x); bool: Not(x)) into an output of
the same dtype. Writes every_dtype.onnx, in_<dtype>.npy and the expected
out_<dtype>.npy, computed with NumPy. NumPy has no bfloat16, so its
files hold the bits as uint16 (arr.view(np.uint16)), as popc reads and
writes them.

Usage: /usr/bin/python3 tests/onnx/dtypes/gen_dtypes.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
    os.path.abspath(__file__))
types = [("float32", TensorProto.FLOAT), ("float64", TensorProto.DOUBLE),
         ("float16", TensorProto.FLOAT16), ("bfloat16", TensorProto.BFLOAT16),
         ("int8", TensorProto.INT8), ("int16", TensorProto.INT16),
         ("int32", TensorProto.INT32), ("int64", TensorProto.INT64),
         ("uint8", TensorProto.UINT8), ("uint16", TensorProto.UINT16),
         ("uint32", TensorProto.UINT32), ("uint64", TensorProto.UINT64),
         ("bool", TensorProto.BOOL)]
rng = np.random.default_rng(3)
inputs, outputs, nodes = [], [], []
for name, code in types:
    x, y = "x_" + name, "y_" + name
    inputs.append(helper.make_tensor_value_info(x, code, [2, 3]))
    outputs.append(helper.make_tensor_value_info(y, code, [2, 3]))
    if name == "bool":
        nodes.append(helper.make_node("Not", [x], [y]))
    else:
        nodes.append(helper.make_node("Add", [x, x], [y]))
    if name == "bool":
        a = rng.integers(0, 2, (2, 3)).astype(np.bool_)
        want = ~a
    elif name == "bfloat16":
        # values exact in bfloat16, so doubling them is exact too
        f = rng.integers(-50, 50, (2, 3)).astype(np.float32) / 4
        a = (f.view(np.uint32) >> 16).astype(np.uint16)
        want = ((2 * f).view(np.uint32) >> 16).astype(np.uint16)
    elif name.startswith("float"):
        a = (rng.standard_normal((2, 3)) * 3).astype(name)
        if name == "float64":
            a[0, 0] = 1 + 2.0 ** -40   # not a float32 value
        want = a + a
    else:
        info = np.iinfo(name)
        a = rng.integers(max(info.min // 2, -1000),
                         min(info.max // 2, 1000), (2, 3)).astype(name)
        if name == "int64":
            a[0, 0] = 2 ** 40 + 1     # not a float32 value
        want = a + a
    np.save(os.path.join(out, "in_%s.npy" % name), a)
    np.save(os.path.join(out, "out_%s.npy" % name), want)
graph = helper.make_graph(nodes, "every_dtype", inputs, outputs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "every_dtype.onnx"))
