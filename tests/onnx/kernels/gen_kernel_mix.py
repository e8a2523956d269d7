#!/usr/bin/python3
"""A CNN whose convolutions each suit a different kernel of the nn
provider (docs/kernels.md), exported from PyTorch for
tests/onnx/test_kernels_cli.sh: Winograd on one image's many tiles (26x26,
inference), depthwise, a strided 3x3, batched small planes and row tiles
at 7x7, a grouped and a dilated convolution, ReLUs and a residual add
(FusedConv at optimizationLevel 2).

  kernel_mix.onnx  kernel_mix.input.npy  kernel_mix.output.npy

Usage: /usr/bin/python3 tests/onnx/kernels/gen_kernel_mix.py [OUTDIR]
"""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)


class KernelMix(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(8, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.c3 = nn.Conv2d(32, 56, 1)
        self.c4 = nn.Conv2d(56, 56, 3, padding=1, groups=4)
        self.c5 = nn.Conv2d(56, 56, 3, padding=2, dilation=2, bias=False)
        self.fc = nn.Linear(56, 10)

    def forward(self, x):
        h = torch.relu(self.c1(x))
        h = torch.relu(self.dw(h))
        h = torch.relu(self.c2(h))
        h = torch.relu(self.c3(h))
        h = torch.relu(self.c4(h) + h)
        h = self.c5(h)
        h = torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1)
        return self.fc(h)


model = KernelMix().eval()
x = torch.randn(2, 8, 26, 26)
with torch.no_grad():
    y = model(x)
torch.onnx.export(model, x, os.path.join(out, "kernel_mix.onnx"),
                  input_names=["input"], output_names=["output"],
                  opset_version=13)
np.save(os.path.join(out, "kernel_mix.input.npy"), x.numpy())
np.save(os.path.join(out, "kernel_mix.output.npy"), y.numpy())
