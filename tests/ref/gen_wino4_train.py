#!/usr/bin/python3
"""gen_wino4_train.py - torch reference for tests/check_wino4_train.c: the
losses of a small convolutional net trained by plain SGD, whose 3x3
convolutions popc runs by Winograd F(4x4, 3x3) (forward, input gradient
and weight gradient with its bias gradient).

Run with Debian's PyTorch (torch 1.13): /usr/bin/python3 tests/ref/gen_wino4_train.py

Model: conv1 = Conv2d(32, 32, 3, padding=1), ReLU,
       conv2 = Conv2d(32, 32, 3, padding=1), ReLU,
       global average pool, fc = Linear(32, 10); cross_entropy (mean).
Data: x [8, 32, 20, 20] with x[i] = float32(sin(0.013 i + 0.1)) over the
flat row-major index i; labels (3 n) mod 10 for sample n.
Weights: for the k-th parameter (conv1.weight, conv1.bias, conv2.weight,
conv2.bias, fc.weight, fc.bias), element i of its flat data is
float32(sin(0.37 i + 0.5 + k) / sqrt(fan_in)), fan_in 288 for the
convolutions and 32 for fc (as tests/ref/gen_model_grads.py).
Training: STEPS steps of SGD (lr LR, no momentum) on the same batch; the
loss of each step is taken before its update.

The computation runs in float64 from the float32 weights and data, so the
reference carries no float32 rounding of its own.

Output: tests/ref/nn/wino4_train_losses.npy, float32 [STEPS].
"""
import math
import os

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn",
                   "wino4_train_losses.npy")
STEPS = 6
LR = 0.1


def formula(shape, k, fan_in):
    n = int(np.prod(shape))
    w = np.array([math.sin(0.37 * i + 0.5 + k) / math.sqrt(fan_in)
                  for i in range(n)], dtype=np.float64)
    return torch.from_numpy(w.astype(np.float32).astype(np.float64)
                            .reshape(shape))


def main():
    torch.set_default_dtype(torch.float64)
    model = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10))
    params = [model[0].weight, model[0].bias, model[2].weight,
              model[2].bias, model[6].weight, model[6].bias]
    fans = [288, 288, 288, 288, 32, 32]
    with torch.no_grad():
        for k, (p, f) in enumerate(zip(params, fans)):
            p.copy_(formula(tuple(p.shape), k, f))
    n = 8 * 32 * 20 * 20
    x = np.sin(0.013 * np.arange(n) + 0.1).astype(np.float32)
    x = torch.from_numpy(x.astype(np.float64).reshape(8, 32, 20, 20))
    y = torch.tensor([(3 * s) % 10 for s in range(8)])
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("losses", " ".join("%.7f" % v for v in losses))
    np.save(OUT, np.array(losses, dtype=np.float32))


if __name__ == "__main__":
    main()
