#!/usr/bin/env python3
"""PyTorch's side of tests/onnx/test_batch2.sh: why ResNet-18 trained with
batches of 2 can leave torch.optim.SGD's losses by 1e-4 and more.

ResNet-18 (4 classes, exported for training at 64x64) trains 3 SGD steps
(lr 0.01) on batches of 2. At the first step, in layer4.1.bn1 (BatchNorm
over 2 samples x 2x2 positions = 8 values per channel, bias 0 at
initialisation, so its ReLU cuts at the channel's mean) the value of
sample 0, channel 173, position (1, 0) is -6.4e-6 in float64: it lies
within float32 rounding of the ReLU's kink. Its sign in float32 depends on
the order of the 4608 products summed by the convolution before it, and
it decides whether that element passes the gradient. Both decisions are
correct float32 results; they lead to two trajectories.

Usage (needs python3-torch, python3-torchvision and python3-onnx):
  gen_batch2.py DIR
Writes DIR/resnet18_b2.onnx (training export), DIR/resnet18_b2_probe.onnx
(the same with every BatchNormalization's output as graph outputs),
init.pt (the exported state), x.npy,
y.npy (6 samples), x2.npy (the first batch), and the losses of the 3 steps, one per line:
  f32.txt              torch.optim.SGD in float32;
  f64.txt              the same in float64 (the exact trajectory);
  f64_flipped.txt      float64 with that one element's ReLU decision taken
                       the other way (|v| instead of v) at the first step;
and value.txt, the element's float64 value.
  gen_batch2.py layers DIR OUT
OUT holds popc's outputs of the probe on x2.npy: prints how far each
BatchNormalization output is from PyTorch's float64 forward, against
PyTorch float32's distance (fails beyond three times it), the ReLU
decisions that differ, and "value V", popc's value of the element."""
import copy
import os
import sys

import numpy as np
import onnx
import torch
import torchvision

PROBE = "/layer4/layer4.1/bn1/BatchNormalization"
AT = (0, 173, 1, 0)


def losses(model, x, y, dtype, flip):
    m = copy.deepcopy(model).to(dtype)
    m.train()
    step = {"n": 0, "value": None}

    def hook(mod, inputs, out):
        if step["n"] != 0:
            return None
        v = out[AT].detach()
        step["value"] = float(v)
        if not flip:
            return None
        e = torch.zeros_like(out)
        e[AT] = v.abs() - v
        return out + e

    m.layer4[1].bn1.register_forward_hook(hook)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    out = []
    for b in range(0, len(x), 2):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            m(torch.from_numpy(x[b:b + 2]).to(dtype)),
            torch.from_numpy(y[b:b + 2]).long())
        loss.backward()
        opt.step()
        out.append(loss.item())
        step["n"] += 1
    return out, step["value"]


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=4)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 3, 64, 64)).astype(np.float32)[:6]
    y = rng.integers(0, 4, 32).astype(np.int32)[:6]
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), y)
    np.save(os.path.join(out, "x2.npy"), x[:2])  # the first batch
    model.train()
    path = os.path.join(out, "resnet18_b2.onnx")
    torch.onnx.export(model, torch.from_numpy(x[:2]), path,
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    m = onnx.load(path)
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            m.graph.output.append(onnx.helper.make_tensor_value_info(
                n.output[0], onnx.TensorProto.FLOAT, None))
    onnx.save(m, os.path.join(out, "resnet18_b2_probe.onnx"))
    torch.save(model.state_dict(), os.path.join(out, "init.pt"))
    value = None
    for name, dtype, flip in [("f32", torch.float32, False),
                              ("f64", torch.float64, False),
                              ("f64_flipped", torch.float64, True)]:
        got, v = losses(model, x, y, dtype, flip)
        if dtype == torch.float64:
            value = v
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write("".join("%.9g\n" % v for v in got))
        print(name, " ".join("%.9g" % v for v in got))
    with open(os.path.join(out, "value.txt"), "w") as f:
        f.write("%.9g\n" % value)
    print("float64 value at layer4.1.bn1%s: %.3g" % (str(AT), value))
    if not 0 < -value < 1e-5:
        sys.exit("the element is not a rounding-level tie (%.3g): this "
                 "torch or torchvision initialises ResNet-18 otherwise"
                 % value)


def module_name(node):
    """/layer4/layer4.1/downsample/downsample.1/BatchNormalization ->
    layer4.1.downsample.1 (each scope repeats its parent's name)."""
    q = []
    for part in node.strip("/").split("/")[:-1]:
        if q and part.startswith(q[-1].rsplit(".", 1)[-1] + "."):
            q[-1] = q[-1] + part[part.index("."):]
        else:
            q.append(part)
    return ".".join(q)


def layers(out, got_dir):
    """popc's first forward (the probe's BatchNormalization outputs, run by
    popc infer on x2) against PyTorch's float64 forward: each layer within
    three times PyTorch float32's own distance from it (rounding of the
    same formula), and the element's value."""
    model = torchvision.models.resnet18(weights=None, num_classes=4)
    model.load_state_dict(torch.load(os.path.join(out, "init.pt")))
    x = torch.from_numpy(np.load(os.path.join(out, "x2.npy")))
    ref = {}
    for dtype in (torch.float32, torch.float64):
        m = copy.deepcopy(model).to(dtype).train()
        res = ref.setdefault(dtype, {})
        for name, mod in m.named_modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.register_forward_hook(
                    lambda mod, i, o, name=name:
                    res.__setitem__(name, o.detach().double().clone()))
        with torch.no_grad():
            m(x.to(dtype))
    probe = onnx.load(os.path.join(out, "resnet18_b2_probe.onnx"))
    worst, worst32, flips, flips32, n, bad = 0.0, 0.0, 0, 0, 0, []
    value = None
    for node in probe.graph.node:
        if node.op_type != "BatchNormalization":
            continue
        name = module_name(node.name)
        f = os.path.join(got_dir, node.output[0].replace("/", "%2F") +
                         ".npy")
        got = torch.from_numpy(np.load(f)).double()
        exact, f32 = ref[torch.float64][name], ref[torch.float32][name]
        e, e32 = float((got - exact).abs().max()), \
            float((f32 - exact).abs().max())
        worst, worst32 = max(worst, e), max(worst32, e32)
        if name.endswith("bn1"):  # a ReLU reads it directly
            flips += int(((got > 0) != (exact > 0)).sum())
            flips32 += int(((f32 > 0) != (exact > 0)).sum())
        if e > 3 * e32 + 1e-6:
            bad.append("%s: %.2g (PyTorch float32: %.2g)" % (name, e, e32))
        if node.name == PROBE:
            value = float(got[AT])
        n += 1
    print("%d BatchNormalization outputs of the first forward: popc within "
          "%.2g of float64, PyTorch float32 within %.2g; ReLU decisions "
          "after bn1 layers that differ from float64: popc %d, PyTorch "
          "float32 %d" % (n, worst, worst32, flips, flips32))
    print("value %.9g" % value)
    if bad or n != 20:
        sys.exit("FAIL: %d layers; beyond rounding: %s" % (n, bad))


if __name__ == "__main__":
    if sys.argv[1] == "layers":
        layers(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
