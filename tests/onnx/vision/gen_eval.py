#!/usr/bin/env python3
"""PyTorch's side of tests/onnx/test_eval_mode.sh: a torchvision model with
BatchNorm and Dropout (MobileNetV2, 4 classes, 32x32) exported for training,
and the checks of what popc makes of it against torch's model.eval().

Usage (needs python3-torch and python3-torchvision):
  gen_eval.py gen DIR
      DIR/model_train.onnx (TrainingMode.TRAINING, dynamic batch),
      init.pt (its state), train_x.npy [16, 3, 32, 32], train_y.npy,
      train_x8.npy, train_y8.npy (the first batch of 8), test_x.npy [8, ...],
      test_y.npy, batch_a.npy and batch_b.npy (batches of 8 sharing only
      their first sample).
  gen_eval.py running DIR WEIGHTS
      popc's weights after one training step on train_x8: every BatchNorm
      running mean and variance must have moved from its initial value and
      equal PyTorch's after the same step (momentum 0.1, unbiased variance)
      run in float64, within twice PyTorch's own float32 distance from it
      (at least 1e-5, relative).
  gen_eval.py eval DIR WEIGHTS LOGITS PRED ACC
      the torch module with popc's trained weights (and running
      statistics), put in eval(): its logits on test_x must equal LOGITS
      (popc's run of its exported file) within 1e-4, its classes must be
      PRED (`popc infer` on the run's model INI), its accuracy ACC (the
      evaluation of `popc train`).
  gen_eval.py exported FILE
      the file [train] export_onnx wrote: every BatchNormalization has
      training_mode 0 and one output, no Dropout has a training_mode input,
      and onnx.checker accepts it.
  gen_eval.py batch A B TOL
      row 0 of the outputs A and B (batch_a and batch_b) within TOL;
      prints the largest difference.
Each check prints its figures and exits 1 when one does not hold."""
import copy
import os
import sys

import numpy as np
import torch
import torchvision


def make_model():
    return torchvision.models.mobilenet_v2(weights=None, num_classes=4)


def gen(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = make_model()
    rng = np.random.default_rng(5)
    # a pattern per class under the noise
    pattern = rng.standard_normal((4, 3, 32, 32))
    y = rng.integers(0, 4, 16).astype(np.int32)
    x = (rng.standard_normal((16, 3, 32, 32)) + pattern[y]).astype(np.float32)
    ty = rng.integers(0, 4, 8).astype(np.int32)
    tx = (rng.standard_normal((8, 3, 32, 32)) + pattern[ty]).astype(np.float32)
    for name, a in [("train_x", x), ("train_y", y), ("train_x8", x[:8]),
                    ("train_y8", y[:8]), ("test_x", tx), ("test_y", ty)]:
        np.save(os.path.join(out, name + ".npy"), a)
    # the same first sample among others of another scale: batch
    # statistics would move its output, running statistics must not
    other = (3 * rng.standard_normal((8, 3, 32, 32)) + 1).astype(np.float32)
    other[0] = tx[0]
    np.save(os.path.join(out, "batch_a.npy"), tx)
    np.save(os.path.join(out, "batch_b.npy"), other)
    model.train()
    torch.onnx.export(model, torch.from_numpy(x[:8]),
                      os.path.join(out, "model_train.onnx"),
                      opset_version=13, input_names=["input"],
                      output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      dynamic_axes={"input": {0: "batch"},
                                    "output": {0: "batch"}})
    # after the export: its trace ran the model once in train(), which
    # updated the running statistics the file holds
    torch.save(model.state_dict(), os.path.join(out, "init.pt"))


def initial(out):
    model = make_model()
    model.load_state_dict(torch.load(os.path.join(out, "init.pt")))
    return model


def load_popc(model, weights):
    """Every tensor of the state dict from popc's weights directory
    (num_batches_tracked is not in the ONNX graph: momentum is fixed)."""
    state = model.state_dict()
    for k in state:
        if k.endswith("num_batches_tracked"):
            continue
        f = os.path.join(weights, k + ".npy")
        if not os.path.exists(f):
            sys.exit("FAIL: %s has no %s" % (weights, k + ".npy"))
        state[k] = torch.from_numpy(np.load(f))
    model.load_state_dict(state)
    return model


def running(out, weights):
    model = initial(out)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    exact = copy.deepcopy(model).double()
    model.train()
    exact.train()
    # one step of the forward is all the running statistics see
    x = torch.from_numpy(np.load(os.path.join(out, "train_x8.npy")))
    with torch.no_grad():
        model(x)
        exact(x.double())
    ref = exact.state_dict()
    worst, spread, moved, n = 0.0, 0.0, float("inf"), 0
    for k, v in model.state_dict().items():
        if not (k.endswith("running_mean") or k.endswith("running_var")):
            continue
        got = torch.from_numpy(np.load(os.path.join(weights, k + ".npy")))
        # relative to the size of the statistic (variances reach 2.4)
        size = ref[k].abs().clamp(min=1)
        worst = max(worst, float(((got.double() - ref[k]).abs() / size).max()))
        spread = max(spread, float(((v.double() - ref[k]).abs() / size).max()))
        moved = min(moved, float((got - start[k]).abs().max()))
        n += 1
    tol = max(1e-5, 2 * spread)
    print("%d running statistics, each moved (the least by %.2g): largest "
          "relative difference from PyTorch's float64 step %.2g (PyTorch's "
          "float32: %.2g)" % (n, moved, worst, spread))
    if n < 100 or worst > tol or moved <= 0.0:
        sys.exit("FAIL: running statistics: difference %.3g (want <= %.3g), "
                 "%d of them, smallest move %.3g" % (worst, tol, n, moved))


def evaluate(out, weights, logits, pred, acc):
    model = load_popc(initial(out), weights).eval()
    x = torch.from_numpy(np.load(os.path.join(out, "test_x.npy")))
    labels = np.load(os.path.join(out, "test_y.npy"))
    with torch.no_grad():
        ref = model(x).numpy()
        train_mode = load_popc(initial(out), weights).train()(x).numpy()
    got = np.load(logits)
    diff = float(np.abs(got - ref).max())
    print("exported model via popc infer vs torch eval(): largest "
          "difference %.2g (train-mode torch differs by %.2g)"
          % (diff, float(np.abs(train_mode - ref).max())))
    classes = np.load(pred)
    want = ref.argmax(1)
    top2 = np.sort(ref, 1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 1e-3  # not decided by rounding
    print("popc infer on the model INI: classes %s, torch eval(): %s"
          % (classes.tolist(), want.tolist()))
    torch_acc = float((want == labels).mean())
    print("popc train's evaluation: accuracy %s, torch eval(): %.9g "
          "(train(): %.9g)" % (acc, torch_acc,
                               float((train_mode.argmax(1) == labels).mean())))
    ok = diff <= 1e-4
    ok = ok and (classes[clear] == want[clear]).all()
    ok = ok and abs(float(acc) - torch_acc) < 1e-6
    if not ok:
        sys.exit("FAIL: popc's eval-mode results differ from torch's eval()")


def exported(path):
    """The file export_onnx wrote is an eval() export: what
    torch.onnx.export writes for model.eval() (onnx.checker accepts it)."""
    import onnx
    m = onnx.load(path)
    onnx.checker.check_model(m)
    bad_bn, bad_drop = [], []
    n_bn = n_drop = 0
    for n in m.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a)
                 for a in n.attribute}
        if n.op_type == "BatchNormalization":
            n_bn += 1
            if attrs.get("training_mode", 0) != 0 or len(n.output) != 1:
                bad_bn.append(n.name)
        elif n.op_type == "Dropout":
            n_drop += 1
            if len(n.input) > 2 and n.input[2]:
                bad_drop.append(n.name)
    print("%s: %d of %d BatchNormalization with training_mode 0 and one "
          "output, %d of %d Dropout without training_mode"
          % (os.path.basename(path), n_bn - len(bad_bn), n_bn,
             n_drop - len(bad_drop), n_drop))
    if bad_bn or bad_drop or n_bn < 50 or n_drop < 1:
        sys.exit("FAIL: training-mode nodes in the export: %s"
                 % (bad_bn + bad_drop))


def batch(a, b, tol):
    ra, rb = np.load(a)[0], np.load(b)[0]
    d = float(np.abs(ra - rb).max())
    print("sample 0 in two batches: largest difference %.2g" % d)
    if d > float(tol):
        sys.exit("FAIL: sample 0 moved by %.3g with the rest of its batch"
                 % d)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2])
    elif cmd == "running":
        running(sys.argv[2], sys.argv[3])
    elif cmd == "eval":
        evaluate(*sys.argv[2:7])
    elif cmd == "exported":
        exported(sys.argv[2])
    elif cmd == "batch":
        batch(*sys.argv[2:5])
    else:
        sys.exit("unknown command " + cmd)
