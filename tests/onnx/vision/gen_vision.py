#!/usr/bin/env python3
"""torchvision classification models for tests/onnx/test_vision.sh:
ResNet-18, MobileNetV2, SqueezeNet 1.0, ShuffleNetV2 x0.5 and
EfficientNet-B0 with random weights (fixed seed; BatchNorm statistics and
scales randomised too, so that no output is near zero), exported with
torch.onnx.export at opset 13, with one input and PyTorch's output for it.

Also ResNet-18 and MobileNetV2 exported for training
(TrainingMode.TRAINING, 4 classes, dynamic batch, dropout 0), a 32-sample
dataset and the losses of 4 torch.optim.SGD steps (lr 0.01, batches of 8
in order) from the exported state, and how far those float32 losses are
from the same training run in float64 (NAME_train_spread.txt); and
MobileNetV2 with its BatchNorms folded into the convolutions, exported in
eval mode and trained the same way (mobilenet_v2_folded).

Usage: /usr/bin/python3 gen_vision.py DIR   (needs python3-torch and
python3-torchvision). Writes DIR/NAME.onnx, NAME.input.npy and
NAME.output.npy for each NAME, train_x.npy, train_y.npy, and
NET_train.onnx, NET_train_losses.txt, NET_train_spread.txt for NET in
resnet18, mobilenet_v2, mobilenet_v2_folded."""
import copy
import os
import sys

import numpy as np
import torch
import torchvision

TRAINED = ["resnet18", "mobilenet_v2"]
MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_0", "shufflenet_v2_x0_5",
          "efficientnet_b0"]


def randomise(model):
    g = torch.Generator().manual_seed(3)
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            n = mod.num_features
            mod.weight.data = 0.5 + torch.rand(n, generator=g)
            mod.bias.data = 0.1 * torch.randn(n, generator=g)
            mod.running_mean.data = 0.1 * torch.randn(n, generator=g)
            mod.running_var.data = 0.5 + torch.rand(n, generator=g)
        elif isinstance(mod, torch.nn.Linear):
            mod.weight.data = torch.randn(mod.weight.shape, generator=g) / \
                mod.in_features ** 0.5


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in MODELS:
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None,
                                                  num_classes=10)
        randomise(model)
        model.eval()
        x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            y = model(x)
        torch.onnx.export(model, x, os.path.join(out, name + ".onnx"),
                          opset_version=13, input_names=["input"],
                          output_names=["output"])
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        np.save(os.path.join(out, name + ".output.npy"), y.numpy())
        print("%s: output std %.3g" % (name, float(y.std())))


def sgd_losses(model, x, y, dtype, train=True):
    model = copy.deepcopy(model).to(dtype)
    model.train(train)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for b in range(0, 32, 8):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            model(torch.from_numpy(x[b:b + 8]).to(dtype)),
            torch.from_numpy(y[b:b + 8]).long())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def fold_batchnorm(module):
    """Fold each BatchNorm into the convolution before it (torch's eval
    export does the same), so that training is well-conditioned."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    names = list(module._modules.keys())
    for i, k in enumerate(names):
        child = module._modules[k]
        nxt = module._modules[names[i + 1]] if i + 1 < len(names) else None
        if isinstance(child, torch.nn.Conv2d) and \
                isinstance(nxt, torch.nn.BatchNorm2d):
            module._modules[k] = fuse_conv_bn_eval(child, nxt)
            module._modules[names[i + 1]] = torch.nn.Identity()
        else:
            fold_batchnorm(child)


def training_folded(out):
    """MobileNetV2 with its BatchNorms folded (random running statistics)
    into the convolutions: depthwise convolutions, ReLU6 and residual adds
    trained without batch statistics, whose float32 rounding makes the
    training-mode net chaotic."""
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None, num_classes=4)
    g = torch.Generator().manual_seed(3)
    for mod in model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.data = 0.1 * torch.randn(mod.num_features,
                                                      generator=g)
            mod.running_var.data = 0.5 + torch.rand(mod.num_features,
                                                    generator=g)
    model.eval()
    fold_batchnorm(model)
    x = np.load(os.path.join(out, "train_x.npy"))
    y = np.load(os.path.join(out, "train_y.npy"))
    name = "mobilenet_v2_folded"
    torch.onnx.export(model, torch.from_numpy(x[:8]),
                      os.path.join(out, name + "_train.onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.EVAL,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    losses = sgd_losses(model, x, y, torch.float32, train=False)
    with open(os.path.join(out, name + "_train_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))
    exact = sgd_losses(model, x, y, torch.float64, train=False)
    with open(os.path.join(out, name + "_train_spread.txt"), "w") as f:
        f.write("%.9g\n" % max(abs(a - b) for a, b in zip(losses, exact)))


def training(out, name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, num_classes=4)
    for mod in model.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0  # deterministic on both sides
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3, 64, 64)).astype(np.float32)
    y = rng.integers(0, 4, 32).astype(np.int32)
    np.save(os.path.join(out, "train_x.npy"), x)
    np.save(os.path.join(out, "train_y.npy"), y)
    model.train()
    torch.onnx.export(model, torch.from_numpy(x[:8]),
                      os.path.join(out, name + "_train.onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    losses = sgd_losses(model, x, y, torch.float32)
    with open(os.path.join(out, name + "_train_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))
    # How far PyTorch's own float32 run is from the same run in float64:
    # the float32 rounding any implementation makes moves the losses after
    # the first step by about this much.
    exact = sgd_losses(model, x, y, torch.float64)
    with open(os.path.join(out, name + "_train_spread.txt"), "w") as f:
        f.write("%.9g\n" % max(abs(a - b) for a, b in zip(losses, exact)))


if __name__ == "__main__":
    main()
    for net in TRAINED:
        training(sys.argv[1], net)
    training_folded(sys.argv[1])
