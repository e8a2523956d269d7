#!/usr/bin/python3
"""Reference models for popc's ONNX tests, exported from PyTorch.

Each model is built with fixed seeds, put in eval mode, exported with
torch.onnx.export (opset 13), and saved with one input and PyTorch's
output as .npy files, so the tests compare popc with PyTorch without
needing PyTorch installed:

  <name>.onnx  <name>.input.npy  <name>.output.npy

Usage: /usr/bin/python3 tests/onnx/models/gen_models.py [OUTDIR]
"""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)


class SmallCNN(nn.Module):
    """Conv, BatchNorm, ReLU, MaxPool, residual add, global pool, Linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = self.pool(h + self.conv2(h))
        h = torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1)
        return torch.softmax(self.fc(h), dim=-1)


class TinyTransformer(nn.Module):
    """A 2-layer TransformerEncoder classifier over 16 tokens."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        h = self.encoder(self.embed(x))
        return self.head(h.mean(dim=1))


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, num_layers=2, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 10, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(20, 3)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


def export(name, model, x):
    model.eval()
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name)
    torch.onnx.export(model, (x,), path + ".onnx", opset_version=13,
                      input_names=["input"], output_names=["output"])
    np.save(path + ".input.npy", x.numpy())
    np.save(path + ".output.npy", y.numpy())


export("small_cnn", SmallCNN(), torch.randn(2, 1, 12, 12))
export("tiny_transformer", TinyTransformer(), torch.randn(2, 16, 8))
export("lstm_classifier", LSTMClassifier(), torch.randn(2, 7, 6))
export("gru_classifier", GRUClassifier(), torch.randn(2, 7, 6))
