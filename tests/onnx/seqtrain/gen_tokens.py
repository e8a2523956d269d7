#!/usr/bin/env python3
"""Reference for training a transformer over token ids from a run file
(tests/onnx/test_seq_train.sh): nn.Embedding(20, 16), a 2-layer
nn.TransformerEncoder (2 heads, feed-forward 32, dropout 0 so that both
sides are deterministic), a mean over the sequence and nn.Linear(16, 4),
exported with torch.onnx.export (opset 13, TrainingMode.TRAINING, dynamic
batch) twice: tokens.onnx takes int64 ids, tokens_i32.onnx the same
weights with int32 ids. The data are 32 sequences of 12 ids in 0..19
(tokens_x.npy int64, tokens_x32.npy the same as int32) with the labels of
y.npy (gen_seqtrain.py); tokens_losses.txt holds the loss of each of 4
torch.optim.SGD steps (lr 0.05, batches of 8 in file order) from the
exported state.

Run with Debian's python3-torch: /usr/bin/python3 gen_tokens.py"""
import os

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(dim=1))


def export(model, ids, name):
    torch.onnx.export(model, ids, os.path.join(HERE, name),
                      opset_version=13, input_names=["ids"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"ids": {0: "batch"},
                                    "output": {0: "batch"}})


def main():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 20, (32, 12)).astype(np.int64)
    y = np.load(os.path.join(HERE, "y.npy"))
    np.save(os.path.join(HERE, "tokens_x.npy"), x)
    np.save(os.path.join(HERE, "tokens_x32.npy"), x.astype(np.int32))
    torch.manual_seed(13)
    model = Tokens()
    model.train()
    export(model, torch.from_numpy(x[:8]), "tokens.onnx")
    export(model, torch.from_numpy(x[:8].astype(np.int32)), "tokens_i32.onnx")
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
    with open(os.path.join(HERE, "tokens_losses.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))


if __name__ == "__main__":
    main()
