#!/usr/bin/python3
"""gen_runtime.py - torch references for tests/check_model_train.c.

Run with Debian's PyTorch (torch 1.13): /usr/bin/python3 tests/ref/gen_runtime.py

A small MLP (fc1 = Linear 4->8, ReLU, fc2 = Linear 8->3) is trained with
nn.MSELoss (mean) on fixed data. Everything goes to tests/ref/runtime/:

  x.npy, y.npy            float32 [32, 4], [32, 3]: the data
  init_<param>.npy        initial fc1.weight, fc1.bias, fc2.weight, fc2.bias
                          (files use '_' for '.': init_fc1_weight.npy)

and, per case, <case>_<param>.npy with the parameters after training and
<case>_loss.npy with the losses the popc run returns:

  sgd     SGD(lr 0.1, momentum 0.9); 5 runs of batch 4 (rows 4s..4s+3), one
          step each. loss: [5], the loss of each run (output mode Final).
  ga      popc deviceIterations 2, gradientAccumulation 2, replicationFactor
          2, micro-batch 2, Mean reduction: a run of 16 rows takes 2 steps,
          each the mean gradient of 8 rows; torch takes one step per 8
          rows with the mean loss. 2 runs (rows 0..31), SGD(lr 0.1).
          loss: [2, 2], per run the Final output: per replica r, the loss
          of the last micro-batch (rows ((1*2+1)*2+r)*2 + {0,1} of the
          run), computed with the weights after the run's first step.
  ga_sum  as ga with Sum reduction: the gradient is the sum of the 4
          micro-batch mean gradients, i.e. torch's loss times 4.
  lr      SGD(lr 0.1, momentum 0.9) one step on rows 0..3, then lr 0.02
          and one step on rows 4..7.

and for a model with a BatchNorm2d (bn: BatchNorm2d(2), flatten, fc =
Linear 8->3, MSE mean) on bn_x [16, 2, 2, 2], bn_y [16, 3]:

  bn_init_<param>.npy     initial fc.weight, fc.bias (bn starts at 1, 0)
  bn_<param>.npy          after 2 runs of gradientAccumulation 2 with
                          micro-batch 4, SGD(lr 0.1): each micro-batch is
                          a forward pass in training mode (updating the
                          running statistics), the step uses the mean of the
                          two micro-batch gradients. Includes
                          bn_bn_running_mean.npy and bn_bn_running_var.npy.
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runtime")
PARAMS = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def save(name, a):
    np.save(os.path.join(OUT, name + ".npy"),
            np.ascontiguousarray(np.asarray(a, dtype=np.float32)))


def fresh(init):
    m = MLP()
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.copy_(init[n])
    return m


def save_params(case, m):
    for n, p in m.named_parameters():
        save(case + "_" + n.replace(".", "_"), p.detach().numpy())


def mse(m, x, y):
    return torch.nn.functional.mse_loss(m(x), y)


def case_sgd(init, x, y):
    m = fresh(init)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for s in range(5):
        opt.zero_grad()
        loss = mse(m, x[4 * s:4 * s + 4], y[4 * s:4 * s + 4])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    save_params("sgd", m)
    save("sgd_loss", losses)


def case_ga(init, x, y, case, factor):
    m = fresh(init)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    finals = []
    for run in range(2):
        for d in range(2):
            rows = slice(16 * run + 8 * d, 16 * run + 8 * d + 8)
            opt.zero_grad()
            loss = mse(m, x[rows], y[rows]) * factor
            loss.backward()
            opt.step()
            if d == 0:
                # Final output mode: per replica, the last micro-batch of
                # the run, evaluated with the weights after this step.
                with torch.no_grad():
                    fin = []
                    for r in range(2):
                        b = 16 * run + ((1 * 2 + 1) * 2 + r) * 2
                        fin.append(mse(m, x[b:b + 2], y[b:b + 2]).item())
                    finals.append(fin)
    save_params(case, m)
    save(case + "_loss", finals)


def case_lr(init, x, y):
    m = fresh(init)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for s, lr in enumerate([0.1, 0.02]):
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        mse(m, x[4 * s:4 * s + 4], y[4 * s:4 * s + 4]).backward()
        opt.step()
    save_params("lr", m)


class BNModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(2)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.bn(x), 1))


def case_bn():
    torch.manual_seed(99)
    m = BNModel()
    x = torch.randn(16, 2, 2, 2) * 2.0 + 0.5
    y = torch.randn(16, 3)
    save("bn_x", x.numpy())
    save("bn_y", y.numpy())
    for n in ["fc.weight", "fc.bias"]:
        save("bn_init_" + n.replace(".", "_"),
             dict(m.named_parameters())[n].detach().numpy())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m.train()
    for run in range(2):
        opt.zero_grad()
        for a in range(2):
            rows = slice(8 * run + 4 * a, 8 * run + 4 * a + 4)
            (mse(m, x[rows], y[rows]) / 2).backward()
        opt.step()
    for n, t in list(m.named_parameters()) + [
            ("bn.running_mean", m.bn.running_mean),
            ("bn.running_var", m.bn.running_var)]:
        save("bn_" + n.replace(".", "_"), t.detach().numpy())


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(1234)
    init_model = MLP()
    init = {n: p.detach().clone() for n, p in init_model.named_parameters()}
    x = torch.randn(32, 4)
    y = torch.randn(32, 3)
    save("x", x.numpy())
    save("y", y.numpy())
    for n in PARAMS:
        save("init_" + n.replace(".", "_"), init[n].numpy())
    case_sgd(init, x, y)
    case_ga(init, x, y, "ga", 1.0)
    case_ga(init, x, y, "ga_sum", 4.0)
    case_lr(init, x, y)
    case_bn()


if __name__ == "__main__":
    main()
