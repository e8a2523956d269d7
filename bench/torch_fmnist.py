#!/usr/bin/python3
"""Train the Fashion-MNIST MLP or CNN of examples/ with PyTorch, the reference
popc is compared with (bench/bench_train.sh runs both in the same session).

Same model, optimizer, batch and epochs as the popc example INI files.
PyTorch's fastest setup on a 2-core machine: torch.set_num_threads(2) and
OPENBLAS_NUM_THREADS=1 (set by the caller). Prints one JSON line.
"""
import argparse
import gzip
import json
import os
import resource
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def model_for(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                             nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps", type=int, default=0, help="stop each epoch early (timing only)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--mean", type=float, default=0.2860, help="as the example INI files")
    ap.add_argument("--std", type=float, default=0.3530)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xs = torch.from_numpy(read_idx(f"{a.data}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
    ys = torch.from_numpy(read_idx(f"{a.data}/train-labels-idx1-ubyte.gz").astype(np.int64))
    xt = torch.from_numpy(read_idx(f"{a.data}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
    yt = torch.from_numpy(read_idx(f"{a.data}/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    xs = (xs - a.mean) / a.std
    xt = (xt - a.mean) / a.std
    model = model_for(a.model)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    g = torch.Generator().manual_seed(a.seed)
    samples = 0
    steps = 0
    start = time.perf_counter()
    for _ in range(a.epochs):
        perm = torch.randperm(len(xs), generator=g)
        n = len(xs) // a.batch
        if a.max_steps:
            n = min(n, a.max_steps)
        for i in range(n):
            idx = perm[i * a.batch:(i + 1) * a.batch]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
            samples += a.batch
            steps += 1
    train_s = time.perf_counter() - start
    with torch.no_grad():
        correct = sum((model(xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum().item()
                      for i in range(0, len(xt), 1000))
    print(json.dumps({
        "framework": "pytorch", "torch": torch.__version__, "model": a.model,
        "epochs": a.epochs, "batch": a.batch, "steps": steps,
        "samples_per_s": samples / train_s, "ms_per_step": 1000 * train_s / steps,
        "test_accuracy": correct / len(xt),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
