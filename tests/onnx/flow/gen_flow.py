#!/usr/bin/env python3
"""Control-flow models for tests/onnx/test_flow.sh, built with
onnx.helper, with outputs computed here by NumPy (hand-written
references, independent of popc):

  loop_if.onnx   Loop (trip count M from the input m.npy, given at
                 compile) carrying h and stacking one scan output; its
                 body reads the outer weight w (a capture) and holds an If
                 on the iteration's parity whose branches read w too (a
                 capture two levels down).
                 h' = tanh(h @ w) on even iterations, h' = h - 0.5 * w[0]
                 on odd ones; scan output k = h' * (k + 1).
  scan_axes.onnx Scan over axis 1 of x [2, 5, 3] (reversed), a running
                 sum state and a running max state, the scan output
                 stacked along axis 1 of [2, 5, 3].
  if_shapes.onnx If whose branches give different shapes (an error).
  loop_early.onnx Loop with a scan output whose body stops it after 2 of
                 4 iterations (an error at run time).
  loop_classifier.onnx  logits = tanh(tanh(x @ w) @ w) as a Loop of 2
                 iterations reading the initializer w; with a 16-sample
                 dataset (x, y) and the losses of 2 SGD steps (lr 0.1,
                 batches of 8, cross-entropy), derived by hand in NumPy
                 (loop_classifier_losses.txt).

Usage: /usr/bin/python3 gen_flow.py  (needs python3-onnx and numpy).
Writes next to this script: the models, their inputs NAME.<input>.npy
and outputs NAME.<output>.npy."""
import os

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def const(name, value):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(value, name))


def model(graph, opset=13):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    checker.check_model(m, full_check=True)
    return m


def loop_if(rng):
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    h0 = rng.standard_normal((3, 4)).astype(np.float32)
    m = np.array(5, dtype=np.int64)
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
         helper.make_node("Tanh", ["hw"], ["t_out"])],
        "even", [], [helper.make_tensor_value_info("t_out", F, [3, 4])])
    else_g = helper.make_graph(
        [const("half", np.array(0.5, dtype=np.float32)),
         const("zero", np.array([0], dtype=np.int64)),
         helper.make_node("Gather", ["w", "zero"], ["w0"], axis=0),
         helper.make_node("Mul", ["w0", "half"], ["hw0"]),
         helper.make_node("Sub", ["h_in", "hw0"], ["e_out"])],
        "odd", [], [helper.make_tensor_value_info("e_out", F, [3, 4])])
    body = helper.make_graph(
        [const("two", np.array(2, dtype=np.int64)),
         const("zero_i", np.array(0, dtype=np.int64)),
         const("one_i", np.array(1, dtype=np.int64)),
         helper.make_node("Mod", ["iter", "two"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero_i"], ["even"]),
         helper.make_node("If", ["even"], ["h_next"], then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Add", ["iter", "one_i"], ["k1"]),
         helper.make_node("Cast", ["k1"], ["k1f"], to=F),
         helper.make_node("Mul", ["h_next", "k1f"], ["scan"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", F, [3, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", F, [3, 4]),
         helper.make_tensor_value_info("scan", F, [3, 4])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "h0"], ["h_final", "stacked"],
                          body=body)],
        "loop_if",
        [helper.make_tensor_value_info("m", TensorProto.INT64, []),
         helper.make_tensor_value_info("h0", F, [3, 4])],
        [helper.make_tensor_value_info("h_final", F, [3, 4]),
         helper.make_tensor_value_info("stacked", F, [5, 3, 4])],
        [numpy_helper.from_array(w, "w")])
    h, stacked = h0.astype(np.float64), []
    for k in range(int(m)):
        if k % 2 == 0:
            h = np.tanh(h @ w.astype(np.float64))
        else:
            h = h - 0.5 * w[0].astype(np.float64)
        stacked.append(h * (k + 1))
    return model(graph), {"m": m, "h0": h0}, {
        "h_final": h.astype(np.float32),
        "stacked": np.stack(stacked).astype(np.float32)}


def scan_axes(rng):
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    s0 = np.zeros((2, 3), dtype=np.float32)
    m0 = np.full((2, 3), -10.0, dtype=np.float32)
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "xt"], ["sum_out"]),
         helper.make_node("Max", ["max_in", "xt"], ["max_out"]),
         helper.make_node("Mul", ["sum_out", "max_out"], ["y"])],
        "body",
        [helper.make_tensor_value_info("sum_in", F, [2, 3]),
         helper.make_tensor_value_info("max_in", F, [2, 3]),
         helper.make_tensor_value_info("xt", F, [2, 3])],
        [helper.make_tensor_value_info("sum_out", F, [2, 3]),
         helper.make_tensor_value_info("max_out", F, [2, 3]),
         helper.make_tensor_value_info("y", F, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "m0", "x"], ["s", "mx", "ys"],
                          body=body, num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[1],
                          scan_output_axes=[-2])],
        "scan_axes",
        [helper.make_tensor_value_info("s0", F, [2, 3]),
         helper.make_tensor_value_info("m0", F, [2, 3]),
         helper.make_tensor_value_info("x", F, [2, 5, 3])],
        [helper.make_tensor_value_info("s", F, [2, 3]),
         helper.make_tensor_value_info("mx", F, [2, 3]),
         helper.make_tensor_value_info("ys", F, [2, 5, 3])])
    s, mx, ys = s0.copy(), m0.copy(), []
    for t in range(5):
        xt = x[:, 4 - t, :]
        s = s + xt
        mx = np.maximum(mx, xt)
        ys.append(s * mx)
    return model(graph, 16), {"s0": s0, "m0": m0, "x": x}, {
        "s": s, "mx": mx, "ys": np.stack(ys, axis=1)}


def if_shapes():
    then_g = helper.make_graph(
        [const("a", np.zeros((2, 3), dtype=np.float32))], "then", [],
        [helper.make_tensor_value_info("a", F, [2, 3])])
    else_g = helper.make_graph(
        [const("b", np.zeros((3, 2), dtype=np.float32))], "else", [],
        [helper.make_tensor_value_info("b", F, [3, 2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then_g,
                          else_branch=else_g)],
        "if_shapes", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m, {"c": np.array(True)}


def loop_early():
    body = helper.make_graph(
        [const("one", np.array(1, dtype=np.int64)),
         helper.make_node("Less", ["iter", "one"], ["cond_out"]),
         helper.make_node("Identity", ["v_in"], ["v_out"]),
         helper.make_node("Identity", ["v_in"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", F, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [2]),
         helper.make_tensor_value_info("scan", F, [2])])
    graph = helper.make_graph(
        [const("m", np.array(4, dtype=np.int64)),
         helper.make_node("Loop", ["m", "", "v"], ["v_final", "stacked"],
                          name="early", body=body)],
        "loop_early", [helper.make_tensor_value_info("v", F, [2])],
        [helper.make_tensor_value_info("v_final", F, [2]),
         helper.make_tensor_value_info("stacked", F, [4, 2])])
    return model(graph), {"v": np.ones(2, dtype=np.float32)}


def loop_classifier(rng):
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
         helper.make_node("Tanh", ["hw"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", F, ["batch", 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", F, ["batch", 4])])
    graph = helper.make_graph(
        [const("m", np.array(2, dtype=np.int64)),
         helper.make_node("Loop", ["m", "", "x"], ["logits"], name="twice",
                          body=body)],
        "loop_classifier",
        [helper.make_tensor_value_info("x", F, ["batch", 4])],
        [helper.make_tensor_value_info("logits", F, ["batch", 4])],
        [numpy_helper.from_array(w, "w")])
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.integers(0, 4, 16).astype(np.int32)
    h = x.astype(np.float64)
    for _ in range(2):
        h = np.tanh(h @ w.astype(np.float64))
    losses = sgd_losses(x.astype(np.float64), y, w.astype(np.float64))
    with open(os.path.join(HERE, "loop_classifier_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))
    return model(graph), {"x": x, "y": y}, {"logits": h.astype(np.float32)}


def sgd_losses(x, y, w, lr=0.1, batch=8):
    """Cross-entropy training of logits = tanh(tanh(x w) w) with SGD, the
    gradient derived by hand (w is used twice: its gradient is the sum)."""
    losses = []
    for b in range(0, len(x), batch):
        xb, yb = x[b:b + batch], y[b:b + batch]
        h1 = np.tanh(xb @ w)
        h2 = np.tanh(h1 @ w)
        z = h2 - h2.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        losses.append(float(-np.log(p[np.arange(len(yb)), yb]).mean()))
        d2 = p.copy()
        d2[np.arange(len(yb)), yb] -= 1
        d2 /= len(yb)
        a2 = d2 * (1 - h2 ** 2)
        a1 = (a2 @ w.T) * (1 - h1 ** 2)
        w = w - lr * (h1.T @ a2 + xb.T @ a1)
    return losses


def write(name, m, inputs, outputs=None):
    save(m, os.path.join(HERE, name + ".onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(HERE, "%s.%s.npy" % (name, k)), v)
    for k, v in (outputs or {}).items():
        np.save(os.path.join(HERE, "%s.%s.npy" % (name, k)), v)


def main():
    rng = np.random.default_rng(3)
    write("loop_if", *loop_if(rng))
    write("scan_axes", *scan_axes(rng))
    write("if_shapes", *if_shapes())
    write("loop_early", *loop_early())
    write("loop_classifier", *loop_classifier(rng))


if __name__ == "__main__":
    main()
