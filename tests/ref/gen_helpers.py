#!/usr/bin/python3
"""gen_helpers.py - torch references for tests/check_helpers.c.

Run with Debian's PyTorch: /usr/bin/python3 tests/ref/gen_helpers.py

for_loop: x0 [2, 4] (a trainable tensor) goes COUNT = 3 times through
y = tanh(y W^T + b), W [4, 4] and b [4] shared by the iterations; the loss
is mean(y^2) of the last iteration; one SGD step (lr 0.5) updates x0, W and
b. The starting values are formulas the C test computes too:

  x0[i][j] = 0.1 (4 i + j) - 0.3
  W[i][j]  = 0.05 (i - j) + 0.02 i
  b[j]     = 0.01 (j + 1)

Written to tests/ref/helpers/: loop_y.npy (the forward result),
loop_x0.npy, loop_w.npy, loop_b.npy (after the step).
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers")
COUNT = 3


def main():
    os.makedirs(OUT, exist_ok=True)
    x0 = torch.tensor([[0.1 * (4 * i + j) - 0.3 for j in range(4)]
                       for i in range(2)], dtype=torch.float32,
                      requires_grad=True)
    w = torch.tensor([[0.05 * (i - j) + 0.02 * i for j in range(4)]
                      for i in range(4)], dtype=torch.float32,
                     requires_grad=True)
    b = torch.tensor([0.01 * (j + 1) for j in range(4)], dtype=torch.float32,
                     requires_grad=True)
    y = x0
    for _ in range(COUNT):
        y = torch.tanh(y @ w.t() + b)
    np.save(os.path.join(OUT, "loop_y.npy"), y.detach().numpy())
    loss = (y * y).mean()
    opt = torch.optim.SGD([x0, w, b], lr=0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
    for name, t in (("x0", x0), ("w", w), ("b", b)):
        np.save(os.path.join(OUT, "loop_%s.npy" % name), t.detach().numpy())


if __name__ == "__main__":
    main()
