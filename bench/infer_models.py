#!/usr/bin/python3
"""The inference anchor's models (bench/bench_infer.sh), exported by
Debian's PyTorch as a user deploying them would: eval mode, opset 13,
constant folding (BatchNorm folded into the convolutions by the exporter),
a dynamic batch dimension.

    infer_models.py DIR [MODEL...]
        writes DIR/MODEL.onnx and DIR/MODEL_bB.npy (a random float32 batch
        of B samples, B in 1 and 16 (8 for the transformer)).

The models (issue 25's table):
    resnet18      torchvision ResNet-18, 1000 classes, 3x224x224
    mobilenet_v2  torchvision MobileNetV2, 1000 classes, 3x224x224
    transformer   4-layer nn.TransformerEncoder, d_model 256, 4 heads,
                  feed-forward 1024, dropout 0, batch_first, 128 tokens
"""
import os
import sys

import numpy as np
import torch
from torch import nn


def transformer():
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024,
                                       dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)


def spec(name):
    """(constructor, sample shape, batches)"""
    import torchvision
    return {
        "resnet18": (torchvision.models.resnet18, (3, 224, 224), (1, 16)),
        "mobilenet_v2": (torchvision.models.mobilenet_v2, (3, 224, 224),
                         (1, 16)),
        "transformer": (transformer, (128, 256), (1, 8)),
    }[name]


def export(out, name):
    make, shape, batches = spec(name)
    torch.manual_seed(0)
    model = make().eval()
    rng = np.random.default_rng(1)
    for b in batches:
        x = rng.standard_normal((b,) + shape).astype(np.float32)
        np.save(os.path.join(out, "%s_b%d.npy" % (name, b)), x)
    sample = torch.from_numpy(
        rng.standard_normal((1,) + shape).astype(np.float32))
    # not under no_grad: that would take the encoder's fused fast path,
    # which has no ONNX form
    torch.onnx.export(model, sample, os.path.join(out, name + ".onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.EVAL,
                      do_constant_folding=True,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[2:] or ["resnet18", "mobilenet_v2", "transformer"]:
        export(sys.argv[1], name)


if __name__ == "__main__":
    main()
