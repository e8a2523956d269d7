#!/usr/bin/python3
"""gen_linear_grads.py - torch references for tests/check_gemm_grad.c:
the gradients of a Linear layer with bias, on a 2-D input (popc builds a
Gemm) and on a 3-D input (popc builds Transpose, MatMul and a bias Add,
which the optimizer turns into a Gemm for training).

Run with Debian's PyTorch: /usr/bin/python3 tests/ref/gen_linear_grads.py

Model: y = Linear(K = 6, N = 5)(x), loss = mse_loss(y, t) (mean), for
x of [7, 6] (case lin2) and [2, 5, 6] (case lin3), t of y's shape. The
values are formulas the C test computes too (element i of the flat
row-major data, k the tensor's number: x 0, t 1, weight 2, bias 3):

  v[i] = float32(0.5 * sin(0.37 * i + 0.5 + k))

computed in double and rounded once. The gradients are computed in
float64 from those float32 values, so they carry no float32 rounding of
their own.

Written to tests/ref/linear_grads/ (float32): <case>_loss.npy [1],
<case>_weight_grad.npy [5, 6], <case>_bias_grad.npy [5].
"""
import math
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "linear_grads")
K, N = 6, 5


def formula(shape, k):
    n = int(np.prod(shape))
    v = [0.5 * math.sin(0.37 * i + 0.5 + k) for i in range(n)]
    return np.array(v, dtype=np.float32).reshape(shape)


def case(name, xshape):
    yshape = tuple(xshape[:-1]) + (N,)
    x = torch.tensor(formula(xshape, 0), dtype=torch.float64)
    t = torch.tensor(formula(yshape, 1), dtype=torch.float64)
    w = torch.tensor(formula((N, K), 2), dtype=torch.float64,
                     requires_grad=True)
    b = torch.tensor(formula((N,), 3), dtype=torch.float64,
                     requires_grad=True)
    loss = torch.nn.functional.mse_loss(
        torch.nn.functional.linear(x, w, b), t)
    loss.backward()
    save = {"loss": loss.detach().reshape(1), "weight_grad": w.grad,
            "bias_grad": b.grad}
    for what, v in save.items():
        np.save(os.path.join(OUT, "%s_%s.npy" % (name, what)),
                v.numpy().astype(np.float32))


def main():
    os.makedirs(OUT, exist_ok=True)
    case("lin2", (7, K))
    case("lin3", (2, 5, K))


if __name__ == "__main__":
    main()
