#!/usr/bin/env python3
"""Reference for training an ONNX model from a popc run file
(tests/onnx/test_train_run.sh): a PyTorch MLP exported with
torch.onnx.export (opset 13, dynamic batch), a small dataset, and what
torch.optim.SGD (lr 0.1, momentum 0.9) gives over 2 epochs of batches of
8 in file order: the loss of every step and the trained model's logits.

Run with Debian's python3-torch: /usr/bin/python3 gen_train.py
Writes, next to this script: mlp.onnx, x.npy, x8.npy (the first batch),
y.npy, ref_losses.txt, ref_logits.npy (the trained model on x8.npy)."""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((24, 16)).astype(np.float32)
    y = rng.integers(0, 3, size=24).astype(np.int32)
    model = torch.nn.Sequential(torch.nn.Linear(16, 12), torch.nn.ReLU(),
                                torch.nn.Linear(12, 3))
    torch.onnx.export(model, torch.from_numpy(x[:8]),
                      os.path.join(HERE, "mlp.onnx"), opset_version=13,
                      input_names=["features"], output_names=["logits"],
                      dynamic_axes={"features": {0: "batch"},
                                    "logits": {0: "batch"}})
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _epoch in range(2):
        for b in range(0, 24, 8):
            xb = torch.from_numpy(x[b:b + 8])
            yb = torch.from_numpy(y[b:b + 8]).long()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    with torch.no_grad():
        logits = model(torch.from_numpy(x[:8])).numpy()
    np.save(os.path.join(HERE, "x.npy"), x)
    np.save(os.path.join(HERE, "x8.npy"), x[:8])
    np.save(os.path.join(HERE, "y.npy"), y)
    np.save(os.path.join(HERE, "ref_logits.npy"), logits)
    with open(os.path.join(HERE, "ref_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))


if __name__ == "__main__":
    main()
