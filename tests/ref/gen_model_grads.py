#!/usr/bin/python3
"""gen_model_grads.py - torch references for tests/check_model_grads.c:
the whole-model gradients of the two example architectures.

Run with Debian's PyTorch (torch 1.13): /usr/bin/python3 tests/ref/gen_model_grads.py

Models (examples/fashion-mnist-mlp.ini and examples/fashion-mnist-cnn.ini):

  mlp  fc1 = Linear(784, 512), ReLU, fc2 = Linear(512, 512), ReLU,
       fc3 = Linear(512, 10)
  cnn  conv1 = Conv2d(1, 32, 3, padding=1), ReLU, MaxPool2d(2),
       conv2 = Conv2d(32, 64, 3, padding=1), ReLU, MaxPool2d(2),
       flatten, fc = Linear(3136, 10)

Weights come from a formula both sides compute, so none is stored. For the
k-th parameter of a model (in the order above: weight, bias, weight, ...),
element i of its flat (row-major) data is

  w[i] = float32(s * sin(0.37 * i + 0.5 + k)),  s = 1 / sqrt(fan_in)

computed in double and rounded once, where fan_in is the layer's
in_features or in_channels * 3 * 3 (the bias uses its layer's fan_in):
PyTorch's default initialisation range, without randomness.

Data: the first 16 images of the Fashion-MNIST test set (t10k), scaled by
1/255 and normalised with mean 0.2860 and std 0.3530 in float32 (as
popc's dataset loader and torchvision do), with their labels. Loss:
cross_entropy with mean reduction.

The reference is computed in float64 (from the float32 weights and
inputs), so it carries no float32 rounding of its own: what the C test
measures is popc's error. The script prints the errors of torch's own
float32 computation in the figures the C test prints, for comparison.

Output in tests/ref/model_grads/ (float32 unless said):

  batch_labels.npy          int32 [16], the labels (checks the data read)
  batch_stats.npy           [2]: sum and sum of squares of the normalised
                            batch
  <m>_loss.npy              [1]: the loss
  <m>_<p>_grad.npy          the gradient of parameter p ('.' written '_':
                            mlp_fc1_weight_grad.npy): all of it when it has
                            at most 1024 elements (biases), else 256
                            elements at the indices of
  <m>_<p>_idx.npy           int64 [256], sorted flat indices, drawn once
                            from numpy's RandomState(<fixed seed>)
  <m>_<p>_stats.npy         [4]: sum, sum of squares, max |g|, sum |g| of
                            the whole gradient, computed in float64
"""
import gzip
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_grads")
DATA = "/usr/share/datasets/fashion-mnist"
BATCH = 16
MEAN, STD = 0.2860, 0.3530
SAMPLES = 256
FULL_MAX = 1024


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * d:8 + 4 * d], "big")
            for d in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def batch():
    images = read_idx("t10k-images-idx3-ubyte.gz")[:BATCH]
    labels = read_idx("t10k-labels-idx1-ubyte.gz")[:BATCH]
    x = images.astype(np.float32) / np.float32(255.0)
    x = (x - np.float32(MEAN)) / np.float32(STD)
    return x.astype(np.float32), labels.astype(np.int64)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 512)
        self.fc2 = torch.nn.Linear(512, 512)
        self.fc3 = torch.nn.Linear(512, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x.reshape(x.shape[0], 784)))
        return self.fc3(torch.relu(self.fc2(x)))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 64, 3, padding=1)
        self.fc = torch.nn.Linear(3136, 10)

    def forward(self, x):
        x = x.reshape(x.shape[0], 1, 28, 28)
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def formula(numel, fan_in, k):
    i = np.arange(numel, dtype=np.float64)
    return (np.sin(0.37 * i + 0.5 + k) / np.sqrt(fan_in)).astype(np.float32)


def set_weights(model):
    modules = dict(model.named_modules())
    with torch.no_grad():
        for k, (name, p) in enumerate(model.named_parameters()):
            w = modules[name.rsplit(".", 1)[0]].weight
            fan_in = int(np.prod(w.shape[1:]))
            p.copy_(torch.from_numpy(
                formula(p.numel(), fan_in, k).reshape(p.shape)))


def gradients(cls, x, y, dtype):
    torch.manual_seed(0)
    model = cls()
    set_weights(model)
    model = model.to(dtype)
    loss = torch.nn.functional.cross_entropy(
        model(torch.from_numpy(x).to(dtype)), torch.from_numpy(y))
    loss.backward()
    return loss.item(), {n: p.grad.detach().double().numpy().ravel()
                         for n, p in model.named_parameters()}


def save(name, a, dtype=np.float32):
    np.save(os.path.join(OUT, name + ".npy"),
            np.ascontiguousarray(np.asarray(a, dtype=dtype)))


def float32_error(got, want):
    """torch's float32 gradient against the float64 one, in the figures
    the C test prints: the largest relative error of the elements of at
    least a tenth of max|g|, and the largest difference over max|g|."""
    big = np.abs(want).max()
    d = np.abs(got - want)
    keep = np.abs(want) >= 0.1 * big
    return (d[keep] / np.abs(want[keep])).max(), d.max() / big


def reference(tag, cls, x, y, seed):
    loss, grads = gradients(cls, x, y, torch.float64)
    loss32, grads32 = gradients(cls, x, y, torch.float32)
    save(tag + "_loss", [loss])
    rng = np.random.RandomState(seed)
    print("%s: loss %.7f (torch float32: rel error %.2e)"
          % (tag, loss, abs(loss32 - loss) / loss))
    for name, g in grads.items():
        base = tag + "_" + name.replace(".", "_")
        if g.size > FULL_MAX:
            idx = np.sort(rng.choice(g.size, SAMPLES, replace=False))
            save(base + "_idx", idx, np.int64)
            save(base + "_grad", g[idx])
        else:
            save(base + "_grad", g)
        save(base + "_stats", [g.sum(), (g * g).sum(), np.abs(g).max(),
                               np.abs(g).sum()])
        print("  %-13s max|g| %.3e  torch float32: max rel %.1e, "
              "max diff/max|g| %.1e"
              % ((name, np.abs(g).max()) + float32_error(grads32[name], g)))


def main():
    os.makedirs(OUT, exist_ok=True)
    x, y = batch()
    save("batch_labels", y, np.int32)
    x64 = x.astype(np.float64)
    save("batch_stats", [x64.sum(), (x64 * x64).sum()])
    reference("mlp", MLP, x, y, 1)
    reference("cnn", CNN, x, y, 2)


if __name__ == "__main__":
    main()
