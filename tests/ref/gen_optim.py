#!/usr/bin/python3
"""gen_optim.py - reference trajectories for tests/check_optim.c.

Run with Debian's PyTorch (torch 1.13): /usr/bin/python3 tests/ref/gen_optim.py

A small MLP (Linear 6->8, Tanh, Linear 8->4, LogSoftmax) is trained for
STEPS steps on a fixed batch with the loss sum(out**2) (PopTorch's
identity_loss(x**2, "sum") as in upstream test_optimizer_results), once per
optimizer case. For each case NAME this writes

  optim/NAME_grads.npy   float32 [STEPS, P]: the gradients each step fed
                         to the optimizer, before clipping
  optim/NAME_params.npy  float32 [STEPS + 1, P]: the parameters before the
                         first step and after every step

with the four parameter tensors flattened and concatenated in the order of
the "layout" line of optim/cases.txt. cases.txt also has one line per case:

  case NAME OPTIMIZER STEPS key=value ... [key@S=value] [group=PREFIX:key=value]

key=value are popc hyper-parameters set before compiling, key@S=value is
set before step S (1-based), group=PREFIX:key=value adds a parameter group
for weights starting with PREFIX. torch.optim is the reference where it has
the optimizer; AdamW without bias correction, RMSprop's TF variant, LAMB
and the lagged combined-SGD update are written out below in torch
operations, following PopART's/PopTorch's published formulas.
"""
import math
import os

import numpy as np
import torch

STEPS = 12
# the trust ratios of every LAMB step of the last case run (phi/r2 before
# the 1.0 fallbacks), so a case can prove which side of 1 it exercises
LAMB_TRUST = []
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim")


def make_model():
    torch.manual_seed(42)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, 4),
                                torch.nn.LogSoftmax(dim=1))
    x = torch.rand(5, 6)
    return model, x


def half(t):
    t.copy_(t.half().float())


# ---- hand-written references (in place on p.data) --------------------------


def adamw_no_bias(p, g, st, t, h):
    if not st:
        st["m"] = torch.zeros_like(p)
        st["v"] = torch.zeros_like(p)
    lr, wd, b1, b2, eps = h["lr"], h["weight_decay"], h["beta1"], h[
        "beta2"], h["eps"]
    p.mul_(1 - lr * wd)
    st["m"].mul_(b1).add_(g, alpha=1 - b1)
    st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = st["v"].sqrt().add_(eps)
    p.addcdiv_(st["m"], denom, value=-lr)


def rmsprop_tf(p, g, st, t, h):
    lr, a, eps, wd, mm = h["lr"], h["alpha"], h["eps"], h["weight_decay"], h[
        "momentum"]
    centered = h.get("centered", 0) != 0
    if not st:
        st["sq"] = torch.ones_like(p)  # TF starts the square average at 1
        st["ga"] = torch.zeros_like(p)
        st["buf"] = torch.zeros_like(p)
    s = g.add(p, alpha=wd) if wd != 0 else g
    st["sq"].mul_(a).addcmul_(s, s, value=1 - a)
    if centered:
        st["ga"].mul_(a).add_(s, alpha=1 - a)
        den = st["sq"].addcmul(st["ga"], st["ga"], value=-1).add_(eps).sqrt_()
    else:
        den = st["sq"].add(eps).sqrt_()
    if mm > 0:
        # TF accumulates lr into the momentum buffer and subtracts it whole.
        st["buf"].mul_(mm).addcdiv_(s, den, value=lr)
        p.add_(st["buf"], alpha=-1)
    else:
        p.addcdiv_(s, den, value=-lr)


def lamb(p, g, st, t, h):
    lr, b1, b2, eps, wd = h["lr"], h["beta1"], h["beta2"], h["eps"], h[
        "weight_decay"]
    mwn = h.get("max_weight_norm", 65500.0)
    if not st:
        st["m"] = torch.zeros_like(p)
        st["v"] = torch.zeros_like(p)
    if h.get("bias_correction", 1):
        bc1, bc2 = 1 - b1**t, 1 - b2**t
    else:
        bc1, bc2 = 1.0, 1.0
    st["m"].mul_(b1).add_(g, alpha=1 - b1)
    st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (st["v"].sqrt() / math.sqrt(bc2)).add_(eps)
    upd = (st["m"] / bc1) / denom + wd * p
    r1 = p.pow(2).sum().sqrt()
    r2 = upd.pow(2).sum().sqrt()
    phi = r1.clamp(max=mwn)
    trust = 1.0 if phi == 0 or r2 == 0 else (phi / r2).item()
    LAMB_TRUST.append(trust)
    p.add_(upd, alpha=-lr * trust)


def sgd_combined(p, g, st, t, h):
    """PopART SGD1: v = vs*buf with mm*v + (1-dm)*wd*vs*w folded in after
    each update using that step's hyper-parameters (the lagged update);
    the first step starts from v = vs*(g + wd*w) as torch's buf = d."""
    lr, mm, dm, wd, vs = h["lr"], h["momentum"], h["dampening"], h[
        "weight_decay"], h["velocity_scaling"]
    if not st:
        st["v"] = torch.zeros_like(p)
    v = st["v"]
    if t == 1:
        v.copy_(vs * (g + wd * p))
    else:
        v.add_(g, alpha=(1 - dm) * vs)
    if h.get("nesterov", 0):
        u = vs * (g + wd * p) + mm * v
    else:
        u = v
    p.add_(u, alpha=-lr / vs)
    v.mul_(mm).add_(p, alpha=(1 - dm) * wd * vs)


# ---- cases ----------------------------------------------------------------

SGD_KEYS = {"lr": "lr", "momentum": "momentum", "dampening": "dampening",
            "weight_decay": "weight_decay", "nesterov": "nesterov"}
ADAM_KEYS = {"lr": "lr", "weight_decay": "weight_decay", "eps": "eps"}
RMS_KEYS = {"lr": "lr", "alpha": "alpha", "eps": "eps",
            "weight_decay": "weight_decay", "momentum": "momentum",
            "centered": "centered"}

DEFAULTS = {
    "sgd": {"momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
            "nesterov": 0, "velocity_scaling": 1.0},
    "adam": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "weight_decay": 0.0},
    "adamw": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
              "weight_decay": 1e-2, "bias_correction": 1},
    "rmsprop": {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0,
                "momentum": 0.0, "centered": 0},
    "lamb": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
             "weight_decay": 1e-2, "max_weight_norm": 65500.0,
             "bias_correction": 1},
}


def torch_kwargs(opt, h):
    if opt == "sgd":
        return {k: (bool(h[k]) if k == "nesterov" else h[k])
                for k in SGD_KEYS if k in h}
    if opt in ("adam", "adamw"):
        kw = {k: h[k] for k in ADAM_KEYS if k in h}
        kw["betas"] = (h["beta1"], h["beta2"])
        return kw
    if opt == "rmsprop":
        return {k: (bool(h[k]) if k == "centered" else h[k])
                for k in RMS_KEYS if k in h}
    raise ValueError(opt)


TORCH_CLASS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
               "adamw": torch.optim.AdamW, "rmsprop": torch.optim.RMSprop}


def run_case(name, opt, given, manual=None, schedule=None, groups=None,
             max_grad_norm=None, round_state=None):
    """given: popc hyper-parameters set before compiling. schedule: {step:
    {key: value}} applied before that step. groups: [(prefix, {key: value})].
    round_state: torch state keys stored as float16 after each step."""
    model, x = make_model()
    names = [n for n, _ in model.named_parameters()]
    params = [p for _, p in model.named_parameters()]
    h = dict(DEFAULTS[opt])
    h.update(given)
    schedule = schedule or {}
    groups = groups or []

    # parameter groups: (params, hyper dict) pairs
    pgroups = []
    grouped = set()
    for prefix, over in groups:
        idx = [i for i, n in enumerate(names) if n.startswith(prefix)]
        grouped.update(idx)
        gh = dict(h)
        gh.update(over)
        pgroups.append(([params[i] for i in idx], gh))
    rest = [params[i] for i in range(len(params)) if i not in grouped]
    pgroups.insert(0, (rest, h))

    torch_opt = None
    if manual is None:
        torch_opt = TORCH_CLASS[opt]([
            dict(params=ps, **torch_kwargs(opt, gh)) for ps, gh in pgroups
        ], **torch_kwargs(opt, h))
    states = {id(p): {} for p in params}

    grads_rec = []
    params_rec = [torch.cat([p.detach().flatten() for p in params]).numpy()]
    for step in range(1, STEPS + 1):
        for key, value in schedule.get(step, {}).items():
            for _, gh in pgroups:
                gh[key] = value
            if torch_opt is not None:
                for tg in torch_opt.param_groups:
                    tg[key] = value
        model.zero_grad()
        loss = (model(x)**2).sum()
        loss.backward()
        grads_rec.append(
            torch.cat([p.grad.detach().flatten() for p in params]).numpy())
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        with torch.no_grad():
            if torch_opt is not None:
                torch_opt.step()
                for p in params:
                    for key in round_state or []:
                        half(torch_opt.state[p][key])
            else:
                for ps, gh in pgroups:
                    for p in ps:
                        manual(p.data, p.grad, states[id(p)], step, gh)
        params_rec.append(
            torch.cat([p.detach().flatten() for p in params]).numpy())

    np.save(os.path.join(OUT, name + "_grads.npy"),
            np.stack(grads_rec).astype(np.float32))
    np.save(os.path.join(OUT, name + "_params.npy"),
            np.stack(params_rec).astype(np.float32))

    tokens = ["%s=%r" % (k, float(v)) for k, v in given.items()]
    if max_grad_norm is not None:
        tokens.append("max_grad_norm=%r" % float(max_grad_norm))
    for step, changes in sorted(schedule.items()):
        tokens += ["%s@%d=%r" % (k, step, float(v)) for k, v in changes.items()]
    for prefix, over in groups:
        tokens += ["group=%s:%s=%r" % (prefix, k, float(v))
                   for k, v in over.items()]
    layout = " ".join("%s:%d" % (n, p.numel()) for n, p in zip(names, params))
    return layout, "case %s %s %d %s" % (name, opt, STEPS, " ".join(tokens))


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = [
        # SGD (torch.optim.SGD; R4.3: popc matches torch's first step)
        ("sgd", "sgd", {"lr": 0.01}),
        ("sgd_momentum", "sgd", {"lr": 0.01, "momentum": 0.9}),
        ("sgd_dampening", "sgd", {"lr": 0.01, "momentum": 0.9,
                                  "dampening": 0.5}),
        ("sgd_nesterov", "sgd", {"lr": 0.01, "momentum": 0.9,
                                 "nesterov": 1}),
        ("sgd_weight_decay", "sgd", {"lr": 0.01, "weight_decay": 0.1}),
        ("sgd_all", "sgd", {"lr": 0.02, "momentum": 0.8, "dampening": 0.2,
                            "weight_decay": 0.05}),
        ("sgd_lr_change", "sgd", {"lr": 0.01, "momentum": 0.9},
         dict(schedule={7: {"lr": 0.003}})),
        ("sgd_groups", "sgd", {"lr": 0.01, "momentum": 0.9},
         dict(groups=[("2.", {"lr": 0.003, "momentum": 0.5})])),
        ("sgd_velocity_fp16", "sgd", {"lr": 0.01, "momentum": 0.9,
                                      "velocity_accum_type": 1},
         dict(round_state=["momentum_buffer"])),
        # combined variant: the same maths as torch while values stay put
        ("sgd_combined", "sgd", {"lr": 0.01, "momentum": 0.9,
                                 "dampening": 0.2, "weight_decay": 0.05,
                                 "velocity_scaling": 8.0,
                                 "use_combined_accum": 1}),
        ("sgd_combined_nesterov", "sgd", {"lr": 0.01, "momentum": 0.9,
                                          "nesterov": 1,
                                          "weight_decay": 0.05,
                                          "velocity_scaling": 4.0,
                                          "use_combined_accum": 1}),
        # ... and lagged when they change (PopART's SGD1 equations)
        ("sgd_combined_lagged", "sgd", {"lr": 0.01, "momentum": 0.9,
                                        "dampening": 0.1,
                                        "weight_decay": 0.05,
                                        "velocity_scaling": 2.0,
                                        "use_combined_accum": 1},
         dict(manual=sgd_combined,
              schedule={6: {"momentum": 0.5, "weight_decay": 0.2,
                            "lr": 0.03}})),
        ("sgd_clip", "sgd", {"lr": 0.01, "momentum": 0.9},
         dict(max_grad_norm=0.001)),
        # Adam / AdamW
        ("adam", "adam", {"lr": 0.01}),
        ("adam_weight_decay", "adam", {"lr": 0.01, "weight_decay": 0.1}),
        ("adam_betas", "adam", {"lr": 0.01, "beta1": 0.8, "beta2": 0.99,
                                "eps": 1e-6}),
        ("adam_fp16_moments", "adam", {"lr": 0.01,
                                       "first_order_momentum_accum_type": 1,
                                       "second_order_momentum_accum_type": 1},
         dict(round_state=["exp_avg", "exp_avg_sq"])),
        ("adam_clip", "adam", {"lr": 0.01}, dict(max_grad_norm=0.001)),
        ("adamw", "adamw", {"lr": 0.01}),
        ("adamw_weight_decay", "adamw", {"lr": 0.01, "weight_decay": 0.1}),
        ("adamw_no_bias", "adamw", {"lr": 0.01, "weight_decay": 0.1,
                                    "bias_correction": 0},
         dict(manual=adamw_no_bias)),
        ("adamw_clip", "adamw", {"lr": 0.01}, dict(max_grad_norm=0.001)),
        # RMSprop (torch) and its TF variant (by hand)
        ("rmsprop", "rmsprop", {"lr": 0.01}),
        ("rmsprop_centered", "rmsprop", {"lr": 0.01, "centered": 1}),
        ("rmsprop_momentum", "rmsprop", {"lr": 0.01, "momentum": 0.5}),
        ("rmsprop_weight_decay", "rmsprop", {"lr": 0.01,
                                             "weight_decay": 0.1}),
        ("rmsprop_centered_momentum", "rmsprop", {"lr": 0.01, "centered": 1,
                                                  "momentum": 0.5,
                                                  "weight_decay": 0.05,
                                                  "alpha": 0.9}),
        ("rmsprop_tf", "rmsprop", {"lr": 0.01, "use_tf_variant": 1,
                                   "eps": 0.1},
         dict(manual=rmsprop_tf)),
        ("rmsprop_tf_momentum", "rmsprop", {"lr": 0.01, "use_tf_variant": 1,
                                            "momentum": 0.5,
                                            "weight_decay": 0.05},
         dict(manual=rmsprop_tf)),
        ("rmsprop_tf_centered", "rmsprop", {"lr": 0.01, "use_tf_variant": 1,
                                            "centered": 1, "momentum": 0.5,
                                            "eps": 0.05},
         dict(manual=rmsprop_tf)),
        # LAMB (PopTorch's reference step, by hand)
        ("lamb", "lamb", {"lr": 0.01}, dict(manual=lamb)),
        ("lamb_no_bias", "lamb", {"lr": 0.01, "bias_correction": 0},
         dict(manual=lamb)),
        ("lamb_max_weight_norm", "lamb", {"lr": 0.01, "weight_decay": 0.1,
                                          "max_weight_norm": 0.5},
         dict(manual=lamb)),
        # every trust ratio above 1 (an eps this large makes the update
        # small next to the weights), so clamping it to 1 cannot pass
        ("lamb_trust_above_one", "lamb", {"lr": 0.01, "eps": 100.0},
         dict(manual=lamb)),
    ]
    lines = []
    layout = None
    for case in cases:
        name, opt, given = case[:3]
        extra = case[3] if len(case) > 3 else {}
        LAMB_TRUST.clear()
        layout, line = run_case(name, opt, given, **extra)
        if name.endswith("_trust_above_one"):
            assert min(LAMB_TRUST) > 1.0, (name, min(LAMB_TRUST))
            print("%s: trust ratios %.3f to %.3f" %
                  (name, min(LAMB_TRUST), max(LAMB_TRUST)))
        lines.append(line)
    tmp = os.path.join(OUT, "cases.txt.tmp")
    with open(tmp, "w") as f:
        f.write("# generated by tests/ref/gen_optim.py; do not edit\n")
        f.write("layout %s\n" % layout)
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(OUT, "cases.txt"))


if __name__ == "__main__":
    main()
