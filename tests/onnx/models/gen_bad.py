#!/usr/bin/python3
"""Broken and unsupported ONNX models for the CLI error tests.

unsupported_ops.onnx: a valid model whose two nodes use ops no popc plugin
provides, so the import must list both at once.

Usage: /usr/bin/python3 tests/onnx/models/gen_bad.py [OUTDIR]
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
nodes = [
    helper.make_node("Relu", ["x"], ["a"], name="relu"),
    helper.make_node("FrobnicateA", ["a"], ["b"], name="frob_a",
                     domain="com.example"),
    helper.make_node("FrobnicateB", ["b"], ["y"], name="frob_b",
                     domain="com.example"),
]
graph = helper.make_graph(nodes, "unsupported", [x], [y])
model = helper.make_model(graph, opset_imports=[
    helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
onnx.save(model, os.path.join(out, "unsupported_ops.onnx"))
