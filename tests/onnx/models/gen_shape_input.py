#!/usr/bin/python3
"""A model with an input popc needs at compile time, for `popc infer` and
popc_onnx_import_options.candidates (tests/onnx/test_infer_cli.sh,
tests/check_onnx.c): y = Reshape(x, Identity(shape)) * 2, where the
Reshape's target shape is the graph input 'shape' (reached through an
Identity, so the importer must follow it back). x is float32 [2, 6] with
fixed dims; 'shape' is int64 [2]. Writes shape_input.onnx,
shape_input.x.npy, two target shapes (shape_input.shape.npy [3, 4],
shape_input.shape43.npy [4, 3]) and the expected outputs
shape_input.y.npy and shape_input.y43.npy, computed with NumPy.

Usage: /usr/bin/python3 tests/onnx/models/gen_shape_input.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
    os.path.abspath(__file__))
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
nodes = [
    helper.make_node("Identity", ["shape"], ["target"], name="target"),
    helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
    helper.make_node("Mul", ["r", "two"], ["y"], name="double"),
]
graph = helper.make_graph(nodes, "shape_input", [x, shape], [y],
                          initializer=[two])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "shape_input.onnx"))

xv = np.random.default_rng(7).standard_normal((2, 6)).astype(np.float32)
sv = np.array([3, 4], dtype=np.int64)
np.save(os.path.join(out, "shape_input.x.npy"), xv)
np.save(os.path.join(out, "shape_input.shape.npy"), sv)
np.save(os.path.join(out, "shape_input.y.npy"), xv.reshape(sv) * 2)
sv = np.array([4, 3], dtype=np.int64)
np.save(os.path.join(out, "shape_input.shape43.npy"), sv)
np.save(os.path.join(out, "shape_input.y43.npy"), xv.reshape(sv) * 2)
