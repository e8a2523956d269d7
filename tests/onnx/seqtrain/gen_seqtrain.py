#!/usr/bin/env python3
"""Reference for training sequence models imported from ONNX
(tests/onnx/test_seq_train.sh): a 2-layer nn.TransformerEncoder
classifier, a 2-layer LSTM classifier and a bidirectional GRU classifier,
each exported with torch.onnx.export (opset 13,
TrainingMode.TRAINING, dynamic batch; dropout 0 so that both sides are
deterministic), a small dataset, and the loss of each of 4
torch.optim.SGD steps (lr 0.05, batches of 8 in file order) from the
exported state.

Run with Debian's python3-torch: /usr/bin/python3 gen_seqtrain.py
Writes, next to this script: NAME.onnx, NAME_losses.txt for NAME in
transformer, lstm, gru; x.npy (32 x 12 x 8 floats) and y.npy (32 labels
in 0..3)."""
import os

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(dim=1))


class LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True)
        self.fc = nn.Linear(12, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class GRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 10, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(20, 4)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


def reference(name, model, x, y):
    model.train()
    torch.onnx.export(model, torch.from_numpy(x[:8]),
                      os.path.join(HERE, name + ".onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for b in range(0, 32, 8):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(
            model(torch.from_numpy(x[b:b + 8])),
            torch.from_numpy(y[b:b + 8]).long())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with open(os.path.join(HERE, name + "_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))


def main():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 12, 8)).astype(np.float32)
    y = rng.integers(0, 4, 32).astype(np.int32)
    np.save(os.path.join(HERE, "x.npy"), x)
    np.save(os.path.join(HERE, "y.npy"), y)
    for name, cls in (("transformer", Transformer), ("lstm", LSTM),
                      ("gru", GRU)):
        torch.manual_seed(11)
        reference(name, cls(), x, y)


if __name__ == "__main__":
    main()
