#!/usr/bin/python3
"""gen_ops_math.py - reference data for tests/check_op_math.c and
tests/check_op_tensor.c (the math and tensor op plugins).

Run with Debian's PyTorch (torch 1.13) and numpy:
    /usr/bin/python3 tests/ref/gen_ops_math.py

Writes small .npy files to tests/ref/ops/: for a case NAME the inputs
NAME_x.npy, NAME_y.npy, ... and the expected results NAME_out.npy (or
NAME_dx.npy for gradients). numpy is the reference for arithmetic, shape
ops and reductions; torch (functional ops and autograd) for activations,
their gradients and Pow's gradient. Everything is float32 unless a name
says otherwise, generated from fixed seeds so reruns give the same files.
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
rng = np.random.default_rng(20240611)


def save(name, a):
    a = np.ascontiguousarray(a)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    np.save(os.path.join(OUT, name + ".npy"), a)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def t(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def grad_of(fn, x, dy):
    """d(sum(fn(x) * dy))/dx with torch autograd."""
    xt = t(x, True)
    fn(xt).backward(t(dy))
    return xt.grad.numpy()


def arith():
    a, b = randn(2, 3, 4), randn(3, 1)
    save("add_bcast_a", a)
    save("add_bcast_b", b)
    save("add_bcast_out", a + b)
    save("sub_bcast_out", a - b)
    save("mul_bcast_out", a * b)
    d = uniform(0.5, 2.0, 4)
    save("div_bcast_d", d)
    save("div_bcast_out", a / d)
    base, ex = uniform(0.5, 2.0, 2, 3), uniform(-2.0, 2.0, 3)
    save("pow_a", base)
    save("pow_b", ex)
    save("pow_out", np.power(base, ex))
    # Pow's gradient at the broadcast shape: torch with the exponent expanded
    at = t(base, True)
    bt = t(np.broadcast_to(ex, (2, 3)).copy(), True)
    dz = randn(2, 3)
    torch.pow(at, bt).backward(t(dz))
    save("pow_dz", dz)
    save("pow_da", at.grad.numpy())
    save("pow_db", bt.grad.numpy())
    p = uniform(0.1, 4.0, 5, 7)
    save("unary_pos", p)
    save("sqrt_out", np.sqrt(p))
    save("log_out", np.log(p))
    save("reciprocal_out", np.float32(1) / p)
    x = randn(5, 7)
    save("unary_x", x)
    save("exp_out", np.exp(x))
    s1, s2, s3 = randn(2, 1, 3), randn(4, 3), randn(1)
    save("sum3_a", s1)
    save("sum3_b", s2)
    save("sum3_c", s3)
    save("sum3_out", (s1 + s2) + s3)
    save("max3_out", np.maximum(np.maximum(s1, s2), s3))
    save("min3_out", np.minimum(np.minimum(s1, s2), s3))
    save("mean3_out", ((s1 + s2) + s3) * np.float32(1.0 / 3.0))

    h1, h2 = randn(3, 5).astype(np.float16), randn(5).astype(np.float16)
    save("add_f16_a", h1)
    save("add_f16_b", h2)
    save("add_f16_out", h1 + h2)
    dy = randn(5, 7)
    save("unary_dy", dy)
    save("sqrt_dx", grad_of(torch.sqrt, p, dy))
    save("abs_dx", grad_of(torch.abs, x, dy))


def activations():
    x = randn(4, 33) * 3
    dy = randn(4, 33)
    save("act_x", x)
    save("act_dy", dy)
    F = torch.nn.functional
    cases = {
        "relu": F.relu,
        "leaky": lambda v: F.leaky_relu(v, 0.2),
        "gelu": lambda v: F.gelu(v),
        "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
        "clip": lambda v: torch.clamp(v, -1.5, 2.0),
        "clip_max": lambda v: torch.clamp(v, max=0.5),
        "elu": lambda v: F.elu(v, 0.7),
        "celu": lambda v: F.celu(v, 0.5),
        "softplus": F.softplus,
        "erf": torch.erf,
        "sin": torch.sin,
        "cos": torch.cos,
    }
    for name, fn in cases.items():
        save(name + "_out", fn(t(x)).detach().numpy())
        save(name + "_dx", grad_of(fn, x, dy))
    xh = x.astype(np.float16)
    save("gelu_f16_x", xh)
    save("gelu_f16_out",
         F.gelu(t(xh.astype(np.float32))).numpy().astype(np.float16))


def tensor_ops():
    x = randn(3, 4, 5)
    save("t345", x)
    save("transpose_201_out", np.transpose(x, (2, 0, 1)))
    save("transpose_rev_out", np.transpose(x))
    m = randn(67, 129)
    save("t_big", m)
    save("transpose_big_out", m.T)
    save("concat_a", randn(2, 3, 2))
    save("concat_b", randn(2, 1, 2))
    save("concat_c", randn(2, 4, 2))
    save("concat_out", np.concatenate(
        [np.load(os.path.join(OUT, n + ".npy"))
         for n in ("concat_a", "concat_b", "concat_c")], axis=1))
    # Slice: (starts, ends, axes, steps) and numpy's equivalent index
    slices = {
        "slice_basic": ([1, 0], [3, 3], [0, 1], [1, 1],
                        np.s_[1:3, 0:3, :]),
        "slice_neg": ([-1, 4], [-4, -100], [0, -1], [-1, -2],
                      np.s_[-1:-4:-1, :, 4::-2]),
        "slice_clamp": ([0, 2], [1000, -1], [2, 1], [2, 1],
                        np.s_[:, 2:-1, 0:1000:2]),
    }
    for name, (st, en, ax, sp, index) in slices.items():
        ref = x[index]
        save(name + "_starts", np.array(st, np.int64))
        save(name + "_ends", np.array(en, np.int64))
        save(name + "_axes", np.array(ax, np.int64))
        save(name + "_steps", np.array(sp, np.int64))
        save(name + "_out", ref)
        # the gradient: dY scattered into zeros where the slice took
        dy = randn(*ref.shape)
        dx = np.zeros_like(x)
        dx[index] = dy
        save(name + "_dy", dy)
        save(name + "_dx", dx)
    emb = randn(6, 4)
    ind = np.array([[0, 5, -1], [2, 2, 3]], np.int64)
    save("gather_data", emb)
    save("gather_idx", ind)
    save("gather_out", np.take(emb, ind, axis=0))
    save("gather_ax1_out", np.take(x, np.array([3, -4, 0], np.int64), axis=1))
    gy = randn(2, 3, 4)
    acc = np.zeros_like(emb)
    np.add.at(acc, ind % 6, gy)
    save("gather_dy", gy)
    save("gather_dx", acc)
    r = randn(4, 5, 6)
    save("r456", r)
    save("rsum_1_out", r.sum(axis=1, keepdims=True))
    save("rsum_02_out", r.sum(axis=(0, 2)))
    save("rsum_all_out", r.sum(keepdims=True))
    save("rmean_12_out", r.mean(axis=(1, 2)))
    save("rmean_0_out", r.mean(axis=0, keepdims=True))
    save("rmax_2_out", r.max(axis=2))
    save("rmax_01_out", r.max(axis=(0, 1), keepdims=True))
    save("argmax_1_out", np.argmax(r, axis=1).astype(np.int64))
    g = randn(4, 5, 6)
    save("sumto_g", g)
    save("sumto_51_out", g.sum(axis=0).sum(axis=1, keepdims=True))
    save("sumto_416_out", g.sum(axis=1, keepdims=True))
    e = randn(3, 1)
    save("expand_x", e)
    save("expand_out", np.broadcast_to(e, (2, 3, 4)).copy())


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    arith()
    activations()
    tensor_ops()


if __name__ == "__main__":
    main()
