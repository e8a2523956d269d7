#!/usr/bin/env python3
"""torchvision classification models for tests/onnx/test_vision.sh:
ResNet-18, MobileNetV2, SqueezeNet 1.0, ShuffleNetV2 x0.5 and
EfficientNet-B0 with random weights (fixed seed; BatchNorm statistics and
scales randomised too, so that no output is near zero), exported with
torch.onnx.export at opset 13, with one input and PyTorch's output for it.

Usage: /usr/bin/python3 gen_vision.py DIR   (needs python3-torch and
python3-torchvision). Writes DIR/NAME.onnx, NAME.input.npy and
NAME.output.npy for each NAME."""
import os
import sys

import numpy as np
import torch
import torchvision

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


if __name__ == "__main__":
    main()
