#!/usr/bin/python3
"""The real models of bench/bench_models.sh, on PyTorch's side.

    torch_models.py export DIR [MODEL...]
        builds each model with a fixed seed and writes, into DIR:
        MODEL_train.onnx (torch.onnx.export, opset 13, training mode, no
        constant folding: what popc trains), MODEL_infer.onnx (eval mode,
        constant folding: BatchNorm folded into the convolutions, what
        popc infers with), MODEL_x.npy (BATCHES batches of random float32
        samples), MODEL_y.npy (int32 labels in 0..9), and MODEL_xl.npy and
        MODEL_yl.npy (the same five times over, for popc infer's rate from
        the difference of two runs).
    torch_models.py run DIR MODEL MODE STEPS THREADS
        times STEPS training steps (MODE sgdm: SGD lr 0.01 momentum 0.9;
        adam: Adam lr 1e-3) or STEPS inference batches (MODE infer, eval
        mode, no_grad) cycling over DIR's batches, after 2 warm-up steps,
        with torch.set_num_threads(THREADS) (OPENBLAS_NUM_THREADS is the
        caller's) and prints one JSON line: samples_per_s, ms_per_step,
        peak_rss_mb (whole process) and data_mb (the float32 batches this
        script holds, which popc holds too).

The models (batch sizes are those of issue 13's table):
    resnet18      torchvision ResNet-18, 10 classes, 3x64x64, batch 32
    resnet18_224  the same at 3x224x224, batch 8
    mobilenet_v2  torchvision MobileNetV2, 10 classes, 3x64x64, batch 32
    transformer   4-layer nn.TransformerEncoder, d_model 256, 4 heads,
                  feed-forward 2048 (the default), dropout 0, batch_first,
                  on 128x256 sequences, mean over the sequence, Linear to
                  10 classes, batch 16
    lstm          2-layer nn.LSTM, 64 inputs, hidden 256, 64 steps,
                  batch_first, Linear on the last step to 10 classes,
                  batch 32
    mlp           the Fashion-MNIST MLP of examples/ (784-512-512-10),
                  batch 100 (examples/fashion-mnist-infer.ini's)
Dropout is 0 so that both sides run the same arithmetic.
"""
import json
import os
import resource
import sys
import time

import numpy as np
import torch
from torch import nn

BATCHES = 4
CLASSES = 10


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(256, 4, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 4,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(256, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(),
                                 nn.Linear(512, 512), nn.ReLU(),
                                 nn.Linear(512, CLASSES))

    def forward(self, x):
        return self.net(x)


class LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, CLASSES)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


def spec(name):
    """(constructor, batch, sample shape)"""
    import torchvision
    return {
        "resnet18": (lambda: torchvision.models.resnet18(num_classes=CLASSES),
                     32, (3, 64, 64)),
        "resnet18_224": (lambda: torchvision.models.resnet18(
            num_classes=CLASSES), 8, (3, 224, 224)),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(
            num_classes=CLASSES), 32, (3, 64, 64)),
        "transformer": (Transformer, 16, (128, 256)),
        "lstm": (LSTM, 32, (64, 64)),
        "mlp": (MLP, 100, (784,)),
    }[name]


def build(name):
    make, batch, shape = spec(name)
    torch.manual_seed(0)
    return make(), batch, shape


def export(out, names):
    for name in names:
        model, batch, shape = build(name)
        rng = np.random.default_rng(1)
        x = rng.standard_normal((BATCHES * batch,) + shape).astype(np.float32)
        y = rng.integers(0, CLASSES, BATCHES * batch).astype(np.int32)
        np.save(os.path.join(out, name + "_x.npy"), x)
        np.save(os.path.join(out, name + "_y.npy"), y)
        np.save(os.path.join(out, name + "_xl.npy"),
                np.tile(x, (5,) + (1,) * (x.ndim - 1)))
        np.save(os.path.join(out, name + "_yl.npy"), np.tile(y, 5))
        sample = torch.from_numpy(x[:batch])
        axes = {"input": {0: "batch"}, "output": {0: "batch"}}
        for suffix, train, mode in (
                ("_train.onnx", True, torch.onnx.TrainingMode.TRAINING),
                ("_infer.onnx", False, torch.onnx.TrainingMode.EVAL)):
            model.train(train)
            # eval: constant folding puts BatchNorm into the convolutions
            torch.onnx.export(model, sample, os.path.join(out, name + suffix),
                              opset_version=13, input_names=["input"],
                              output_names=["output"], training=mode,
                              do_constant_folding=not train,
                              dynamic_axes=axes)

def run(out, name, mode, steps, threads):
    torch.set_num_threads(threads)
    model, batch, _ = build(name)
    x = torch.from_numpy(np.load(os.path.join(out, name + "_x.npy")))
    y = torch.from_numpy(np.load(os.path.join(out, name + "_y.npy"))).long()
    xs = list(torch.split(x, batch))
    ys = list(torch.split(y, batch))
    if mode == "infer":
        model.eval()

        def step(i):
            with torch.no_grad():
                model(xs[i % len(xs)])
    else:
        model.train()
        if mode == "sgdm":
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        else:
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(i):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(xs[i % len(xs)]),
                                               ys[i % len(ys)])
            loss.backward()
            opt.step()
    for i in range(2):
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    secs = time.perf_counter() - start
    print(json.dumps({
        "framework": "pytorch", "torch": torch.__version__, "model": name,
        "mode": mode, "threads": threads,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "batch": batch, "steps": steps,
        "samples_per_s": steps * batch / secs,
        "ms_per_step": 1000 * secs / steps,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024,
        "data_mb": x.numel() * 4 / 2**20,
    }))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3:] or
               ["resnet18", "mobilenet_v2", "transformer", "lstm"])
    elif len(sys.argv) == 7 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
            int(sys.argv[6]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
