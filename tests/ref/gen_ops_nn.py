#!/usr/bin/python3
"""Reference data for tests/check_op_nn.c, check_op_loss.c (tests/ref/nn/).

Run with Debian's PyTorch (torch 1.13):  /usr/bin/python3 tests/ref/gen_ops_nn.py
Each case writes small float32/int .npy files named <case>_<what>.npy:
inputs, forward outputs, and for gradients an upstream gradient g (the
loss is sum(output * g); losses use their own scalar) with torch autograd's
gradients d_<input>. Everything is deterministic (fixed seed).
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn")
torch.manual_seed(0)
np.random.seed(0)


def save(name, t):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    np.save(os.path.join(OUT, name + ".npy"), a.copy(order="C"))  # keeps 0-d


def rand(*shape):
    return torch.randn(tuple(shape), dtype=torch.float32)


def leaf(t):
    return t.clone().requires_grad_(True)


def grads(case, out, named, g=None):
    """Backward of sum(out * g) (or out itself when g is None)."""
    if g is None:
        out.backward()
    else:
        save(case + "_g", g)
        (out * g).sum().backward()
    for name, t in named:
        save(case + "_d" + name, t.grad)


# ---- MatMul -------------------------------------------------------------------
for case, sa, sb in [("matmul_2d", (5, 7), (7, 3)),
                     ("matmul_bcast", (2, 1, 4, 6), (3, 6, 5)),
                     ("matmul_vecmat", (6,), (2, 6, 4)),
                     ("matmul_matvec", (3, 4, 6), (6,)),
                     ("matmul_dot", (6,), (6,))]:
    a, b = leaf(rand(*sa)), leaf(rand(*sb))
    y = torch.matmul(a, b)
    save(case + "_a", a)
    save(case + "_b", b)
    save(case + "_y", y)
    grads(case, y, [("a", a), ("b", b)], rand(*y.shape))

# ---- Gemm: alpha * op(A) op(B) + beta * C ----------------------------------------
for case, ta, tb, sc, alpha, beta in [("gemm_nt", 0, 1, (3,), 1.0, 1.0),
                                      ("gemm_tn", 1, 0, (4, 1), 0.5, 2.0),
                                      ("gemm_tt", 1, 1, (4, 3), 1.5, 0.25)]:
    M, K, N = 4, 6, 3
    a = leaf(rand(*((K, M) if ta else (M, K))))
    b = leaf(rand(*((N, K) if tb else (K, N))))
    c = leaf(rand(*sc))
    y = alpha * ((a.t() if ta else a) @ (b.t() if tb else b)) + beta * c
    for n, t in [("a", a), ("b", b), ("c", c), ("y", y)]:
        save(case + "_" + n, t)
    grads(case, y, [("a", a), ("b", b), ("c", c)], rand(*y.shape))

# ---- Conv ------------------------------------------------------------------------
# (case, x shape, w shape, stride, padding (top, left, bottom, right),
#  dilation, groups, bias)
CONVS = [
    ("conv_basic", (1, 3, 8, 8), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1,
     False),
    ("conv_group", (2, 4, 7, 6), (6, 2, 3, 3), (2, 1), (1, 0, 2, 1), (1, 2), 2,
     True),
    ("conv_1x1", (2, 8, 5, 5), (4, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1,
     True),
    ("conv_1d", (2, 3, 10), (5, 3, 3), (2,), (1, 1), (1,), 1, True),
]
for case, sx, sw, s, p, d, g, has_b in CONVS:
    x, w = leaf(rand(*sx)), leaf(rand(*sw))
    b = leaf(rand(sw[0])) if has_b else None
    if len(sx) == 4:
        xp = F.pad(x, (p[1], p[3], p[0], p[2]))
        y = F.conv2d(xp, w, b, stride=s, dilation=d, groups=g)
    else:
        xp = F.pad(x, (p[0], p[1]))
        y = F.conv1d(xp, w, b, stride=s, dilation=d, groups=g)
    save(case + "_x", x)
    save(case + "_w", w)
    if has_b:
        save(case + "_bias", b)
    save(case + "_y", y)
    named = [("x", x), ("w", w)] + ([("bias", b)] if has_b else [])
    grads(case, y, named, rand(*y.shape))

# ---- pools ---------------------------------------------------------------------
x = leaf(rand(2, 3, 9, 8))
y, idx = F.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 2), ceil_mode=True,
                      return_indices=True)
save("maxpool_x", x)
save("maxpool_y", y)
plane = torch.arange(6).reshape(2, 3, 1, 1) * (9 * 8)
save("maxpool_idx", (idx + plane).to(torch.int64))  # ONNX: flat over N, C
grads("maxpool", y, [("x", x)], rand(*y.shape))

for case, cip in [("avgpool", False), ("avgpool_cip", True)]:
    x = leaf(rand(2, 3, 9, 8))
    y = F.avg_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True,
                     count_include_pad=cip)
    save(case + "_x", x)
    save(case + "_y", y)
    grads(case, y, [("x", x)], rand(*y.shape))

x = leaf(rand(2, 3, 5, 4))
y = F.adaptive_avg_pool2d(x, 1)
save("gap_x", x)
save("gap_y", y)
grads("gap", y, [("x", x)], rand(*y.shape))

# ---- BatchNormalization ----------------------------------------------------------
x, sc, bi = leaf(rand(4, 3, 5, 5)), leaf(rand(3)), leaf(rand(3))
rm, rv = rand(3), torch.rand(3) + 0.5
for n, t in [("x", x), ("scale", sc), ("b", bi), ("mean", rm), ("var", rv)]:
    save("bn_" + n, t)
rm_t, rv_t = rm.clone(), rv.clone()
y = F.batch_norm(x, rm_t, rv_t, sc, bi, training=True, momentum=0.1,
                 eps=1e-5)
save("bn_train_y", y)
save("bn_train_rmean", rm_t)
save("bn_train_rvar", rv_t)
grads("bn_train", y, [("x", x), ("scale", sc), ("b", bi)], rand(*y.shape))
save("bn_eval_y", F.batch_norm(x, rm, rv, sc, bi, training=False, eps=1e-5))

# ---- LayerNormalization (axis -2: normalised shape [4, 5]) ----------------------
x, sc, bi = leaf(rand(3, 4, 5)), leaf(rand(4, 5)), leaf(rand(4, 5))
y = F.layer_norm(x, (4, 5), sc, bi, eps=1e-5)
xd = x.detach().double()
mean = xd.mean(dim=(1, 2), keepdim=True)
inv = 1.0 / torch.sqrt(xd.var(dim=(1, 2), unbiased=False, keepdim=True) + 1e-5)
for n, t in [("x", x), ("scale", sc), ("b", bi), ("y", y), ("mean", mean),
             ("invstd", inv)]:
    save("ln_" + n, t)
grads("ln", y, [("x", x), ("scale", sc), ("b", bi)], rand(*y.shape))

# ---- Softmax / LogSoftmax ----------------------------------------------------------
for case, fn, axis in [("softmax", torch.softmax, 1),
                       ("logsoftmax", torch.log_softmax, -1)]:
    x = leaf(rand(3, 4, 5))
    y = fn(x, axis)
    save(case + "_x", x)
    save(case + "_y", y)
    grads(case, y, [("x", x)], rand(*y.shape))

# ---- losses ----------------------------------------------------------------------
scores = rand(6, 5)
labels = torch.tensor([0, 4, 2, 1, 2, 3], dtype=torch.int64)
weights = torch.rand(5) + 0.5
save("xent_scores", scores)
save("xent_labels", labels)
save("xent_weights", weights)
for red in ("mean", "sum", "none"):
    for case, kw in [("xent_" + red, {}),
                     ("xent_w_" + red, {"weight": weights, "ignore_index": 2})]:
        s = leaf(scores)
        loss = F.cross_entropy(s, labels, reduction=red, **kw)
        save(case + "_loss", loss)
        grads(case, loss, [("scores", s)],
              rand(*loss.shape) if red == "none" else None)
save("xent_logprob", torch.log_softmax(scores, 1))

# K-dimensional scores [N, C, d1, d2] with int32 labels
s4 = leaf(rand(3, 4, 2, 2))
l4 = torch.randint(0, 4, (3, 2, 2), dtype=torch.int64)
loss = F.cross_entropy(s4, l4, reduction="mean")
save("xent4_scores", s4)
save("xent4_labels", l4.to(torch.int32))
save("xent4_loss", loss)
grads("xent4", loss, [("scores", s4)])

lp = torch.log_softmax(rand(6, 5), 1)
save("nll_input", lp)
for red in ("mean", "sum", "none"):
    x = leaf(lp)
    loss = F.nll_loss(x, labels, weight=weights, ignore_index=2,
                      reduction=red)
    save("nll_" + red + "_loss", loss)
    grads("nll_" + red, loss, [("input", x)],
          rand(*loss.shape) if red == "none" else None)

x0, t0 = rand(4, 5), rand(4, 5)
save("pw_x", x0)
save("pw_t", t0)
for name, fn in [("mse", F.mse_loss), ("l1", F.l1_loss)]:
    for red in ("mean", "sum", "none"):
        x, t = leaf(x0), leaf(t0)
        loss = fn(x, t, reduction=red)
        case = name + "_" + red
        save(case + "_loss", loss)
        grads(case, loss, [("x", x), ("t", t)],
              rand(*loss.shape) if red == "none" else None)
