#!/usr/bin/python3
"""Fixtures for tests/check_onnx.c (the ONNX reader), written with onnx.

Tensors of every dtype popc has, in the typed fields and in raw_data;
float16/bfloat16 bit patterns; a model with external data; a tensor that
claims 2^40 elements; models with a missing input, a missing initializer,
unsupported ops, and old opset forms (Reshape-1, Slice-1, Pad-2,
Softmax-11 on a middle axis).

Usage: /usr/bin/python3 tests/data/onnx/gen_fixtures.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)


def save_tensor(name, t):
    with open(os.path.join(out, name), "wb") as f:
        f.write(t.SerializeToString())


# every dtype, typed field and raw_data: values 0, 1, 2, 3, -1 (wrapped)
VALUES = [0, 1, 2, 3, -1]
for name, onnx_type, np_type in [
        ("float", TensorProto.FLOAT, np.float32),
        ("double", TensorProto.DOUBLE, np.float64),
        ("int8", TensorProto.INT8, np.int8),
        ("int16", TensorProto.INT16, np.int16),
        ("int32", TensorProto.INT32, np.int32),
        ("int64", TensorProto.INT64, np.int64),
        ("uint8", TensorProto.UINT8, np.uint8),
        ("uint16", TensorProto.UINT16, np.uint16),
        ("uint32", TensorProto.UINT32, np.uint32),
        ("uint64", TensorProto.UINT64, np.uint64),
        ("bool", TensorProto.BOOL, np.bool_)]:
    a = np.array(VALUES).astype(np_type)
    save_tensor(f"{name}_raw.pb", helper.make_tensor(
        name, onnx_type, [5], a.tobytes(), raw=True))
    vals = a.tolist()
    save_tensor(f"{name}_typed.pb", helper.make_tensor(
        name, onnx_type, [5], vals))

# float16 and bfloat16: 1.0, -2.0, 0.5 as bit patterns in int32_data
h = np.array([1.0, -2.0, 0.5], dtype=np.float16)
t = TensorProto(name="half", data_type=TensorProto.FLOAT16, dims=[3])
t.int32_data.extend(h.view(np.uint16).tolist())
save_tensor("float16_typed.pb", t)
t = TensorProto(name="bf16", data_type=TensorProto.BFLOAT16, dims=[3])
t.int32_data.extend([0x3F80, 0xC000, 0x3F00])
save_tensor("bfloat16_typed.pb", t)

# a claim of 2^40 floats over 8 bytes of raw data
t = TensorProto(name="huge", data_type=TensorProto.FLOAT,
                dims=[1 << 20, 1 << 20])
t.raw_data = b"\0" * 8
save_tensor("huge_claim.pb", t)
# fewer typed values than the shape needs
t = TensorProto(name="short", data_type=TensorProto.FLOAT, dims=[4])
t.float_data.extend([1.0, 2.0])
save_tensor("short_typed.pb", t)


def model(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


x23 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)

# external data: y = x + w, w in w.bin (offset 16)
w = np.arange(6, dtype=np.float32).reshape(2, 3)
wt = numpy_helper.from_array(w, "w")
with open(os.path.join(out, "w.bin"), "wb") as f:
    f.write(b"\xee" * 16 + w.tobytes())
wt.ClearField("raw_data")
wt.data_location = TensorProto.EXTERNAL
for k, v in [("location", "w.bin"), ("offset", "16"), ("length", "24")]:
    e = wt.external_data.add()
    e.key, e.value = k, v
model("external", [helper.make_node("Add", ["x", "w"], ["y"])], [x23], [y],
      [wt])
# the same, pointing outside the folder
wt.external_data[0].value = "../w.bin"
model("external_escape", [helper.make_node("Add", ["x", "w"], ["y"])],
      [x23], [y], [wt])

# a node reads a value nothing defines
model("missing_input", [helper.make_node("Add", ["x", "nope"], ["y"])],
      [x23], [y])
# a symbolic dimension
xs = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
model("symbolic", [helper.make_node("Relu", ["x"], ["y"])], [xs], [y])
# unsupported ops, all listed
model("unsupported", [
    helper.make_node("Relu", ["x"], ["a"], name="r"),
    helper.make_node("NoSuchOpA", ["a"], ["b"], name="na"),
    helper.make_node("NoSuchOpB", ["b"], ["y"], name="nb")], [x23], [y])

# an op of a vendor domain, served by a plugin (tests/plugins/good.c)
g = helper.make_graph([helper.make_node("Twice", ["x"], ["y"], name="tw",
                                        domain="test.vendor")],
                      "vendor", [x23], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                        helper.make_opsetid("test.vendor", 1)])
m.ir_version = 7
onnx.save(m, os.path.join(out, "vendor_domain.onnx"))

# old forms: Reshape-1 (shape attribute), Slice-1 (attributes), Pad-2,
# Softmax-11 along a middle axis (coerced to 2-D)
x234 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
model("reshape1", [helper.make_node("Reshape", ["x"], ["y"], shape=[4, 6])],
      [x234], [y], opset=1)
model("slice1", [helper.make_node("Slice", ["x"], ["y"], starts=[0, 1],
                                  ends=[2, 3], axes=[1, 2])],
      [x234], [y], opset=1)
model("pad2", [helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 0, 0, 1, 2],
                                value=5.0)], [x234], [y], opset=2)
model("softmax11", [helper.make_node("Softmax", ["x"], ["y"], axis=1,
                                    name="sm")],
      [x234], [y], opset=11)

# sequences, resolved at import: x [2, 5] split along axis 1 in pieces of
# 2 (2, 2, 1), the first erased, the rest stacked on a new last axis
# after inserting x's first 1-column slice at position -1
x25 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64),
                                              name)
model("seq_split_stack", [
    helper.make_node("SplitToSequence", ["x", "two"], ["s"], axis=1),
    helper.make_node("SequenceErase", ["s", "zero"], ["s1"]),
    helper.make_node("SequenceAt", ["s1", "minus1"], ["last"]),
    helper.make_node("SequenceInsert", ["s1", "last", "minus1"], ["s2"]),
    helper.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=1),
    helper.make_node("SequenceLength", ["s2"], ["n"]),
    helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["cat", "nf"], ["y"])],
    [x25], [y], [i64("two", 2), i64("zero", 0), i64("minus1", -1)])
# a sequence as a graph output; a position only known at run time; a
# position outside the sequence
seq_out = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT,
                                                 [2, 3])
model("seq_output", [helper.make_node("SequenceConstruct", ["x", "x"],
                                      ["s"])], [x23], [seq_out])
p = helper.make_tensor_value_info("p", TensorProto.INT64, [])
model("seq_runtime_pos", [
    helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
    helper.make_node("SequenceAt", ["s", "p"], ["y"])], [x23, p], [y])
model("seq_bad_pos", [
    helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
    helper.make_node("SequenceAt", ["s", "five"], ["y"], name="at")],
    [x23], [y], [i64("five", 5)])

# PyTorch's training export of BatchNorm2d then Dropout(0.5) (opset 13:
# BatchNormalization with its five training outputs, Dropout's ratio and
# training_mode as Constant nodes), x [3, 2, 1, 2]: eval_mode imports it
# as model.eval() would run it
x3212 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 1, 2])
f32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32),
                                              name)
model("bn_dropout_train", [
    helper.make_node("BatchNormalization",
                     ["x", "bn.weight", "bn.bias", "bn.running_mean",
                      "bn.running_var"],
                     ["bn_y", "rm", "rv", "saved_mean", "saved_var"],
                     name="bn", epsilon=1e-5, momentum=0.9),
    helper.make_node("Constant", [], ["ratio"],
                     value=numpy_helper.from_array(np.array(0.5, np.float32))),
    helper.make_node("Constant", [], ["training"],
                     value=numpy_helper.from_array(np.array(True))),
    helper.make_node("Dropout", ["bn_y", "ratio", "training"], ["y", "mask"],
                     name="drop")],
    [x3212], [y], [f32("bn.weight", [2.0, 0.5]), f32("bn.bias", [1.0, -1.0]),
                   f32("bn.running_mean", [0.5, -2.0]),
                   f32("bn.running_var", [4.0, 0.25])])
