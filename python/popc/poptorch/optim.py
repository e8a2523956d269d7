"""poptorch.optim: PopTorch's optimizers (torch.optim's with loss
scaling, velocity scaling, accumulation types and max_grad_norm), and the
conversion of any supported optimizer into popc's (popc/optimizer.h).

popc's optimizer plugins implement torch.optim's update formulas
(docs/semantics.md §4); this module only hands them the values. Which
values are variable (changeable by setOptimizer without a recompile)
follows PopTorch: for poptorch.optim, the arguments passed explicitly (or
marked with variable_attrs); for torch.optim, lr always, the others when
they differ from their defaults, betas, alpha and nesterov never.
"""
import ctypes
import math

import torch

from .. import _lib

_ACCUM = {torch.float32: 0, torch.float16: 1}
_TYPES = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw",
          "RMSprop": "rmsprop", "LAMB": "lamb"}
# per-group attributes of each popc optimizer, then its global ones
_GROUP = {
    "sgd": ["lr", "momentum", "dampening", "weight_decay", "nesterov",
            "velocity_scaling"],
    "adam": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
    "adamw": ["lr", "betas", "eps", "weight_decay", "amsgrad"],
    "rmsprop": ["lr", "alpha", "eps", "weight_decay", "momentum"],
    "lamb": ["lr", "betas", "eps", "weight_decay", "max_weight_norm"],
}
_GLOBAL = {
    "sgd": ["loss_scaling", "use_combined_accum", "accum_type",
            "velocity_accum_type", "max_grad_norm"],
    "adam": ["loss_scaling", "accum_type", "first_order_momentum_accum_type",
             "second_order_momentum_accum_type", "max_grad_norm"],
    "adamw": ["loss_scaling", "accum_type", "first_order_momentum_accum_type",
              "second_order_momentum_accum_type", "max_grad_norm",
              "bias_correction"],
    "rmsprop": ["loss_scaling", "accum_type",
                "first_order_momentum_accum_type",
                "second_order_momentum_accum_type", "centered",
                "use_tf_variant"],
    "lamb": ["loss_scaling", "accum_type", "first_order_momentum_accum_type",
             "second_order_momentum_accum_type", "bias_correction"],
}
# torch.optim: the value at which an attribute is constant (R4.4);
# None: always constant; absent: always variable (lr)
_TORCH_CONST_AT = {"weight_decay": 0.0, "momentum": 0.0, "dampening": 0.0,
                   "velocity_scaling": 1.0, "eps": 1e-8,
                   "max_weight_norm": 65500.0, "loss_scaling": 1.0,
                   "alpha": None, "nesterov": None, "betas": None,
                   "amsgrad": None}


class VariableAttributes:
    """poptorch.optim.VariableAttributes: which attributes are variable."""

    def __init__(self, variable_attributes, allowed_attributes):
        self._allowed = list(allowed_attributes)
        self._variable = set(variable_attributes)

    def _check(self, name):
        if name not in self._allowed:
            raise AssertionError("Unknown attribute %s, allowed values: %s" %
                                 (name, self._allowed))

    def markAsConstant(self, attr):
        self._check(attr)
        self._variable.discard(attr)

    def markAsVariable(self, attr):
        self._check(attr)
        self._variable.add(attr)

    def isConstant(self, attr):
        self._check(attr)
        return attr not in self._variable


def _accum(value, name):
    if value not in _ACCUM:
        raise AssertionError("Accumulation types must be either "
                             "torch.float32 or torch.float16 (%s: %r)" %
                             (name, value))
    return value


class _PoptorchOptimizer:
    """What the poptorch.optim classes add to torch's: extra arguments,
    kept in the groups (per-group ones) or on the object (global ones)."""

    _extra_group = {}
    _extra_global = {}

    def _setup(self, explicit):
        for g in self.param_groups:
            for k, v in self._extra_group.items():
                g.setdefault(k, explicit.get(k, v) if explicit.get(k)
                             is not None else v)
        for k, v in self.defaults_extra().items():
            self.defaults.setdefault(k, v)
        for k, v in self._extra_global.items():
            value = explicit.get(k)
            value = v if value is None else value
            if k.endswith("accum_type"):
                _accum(value, k)
            setattr(self, k, value)
        allowed = _GROUP[_TYPES[self._popc_base]] + \
            _GLOBAL[_TYPES[self._popc_base]]
        self.variable_attrs = VariableAttributes(
            [k for k, v in explicit.items() if v is not None and
             k in allowed], allowed)

    def defaults_extra(self):
        return dict(self._extra_group)


def _explicit(local):
    return {k: v for k, v in local.items()
            if k not in ("self", "params", "__class__") and v is not None}


class SGD(_PoptorchOptimizer, torch.optim.SGD):
    _popc_base = "SGD"
    _extra_group = {"velocity_scaling": 1.0}
    _extra_global = {"loss_scaling": 1.0, "use_combined_accum": False,
                     "accum_type": torch.float32,
                     "velocity_accum_type": torch.float32,
                     "max_grad_norm": math.inf}

    def __init__(self, params, lr, momentum=None, dampening=None,
                 weight_decay=None, nesterov=None, maximize=None,
                 foreach=None, differentiable=None, loss_scaling=None,
                 velocity_scaling=None, use_combined_accum=None,
                 accum_type=None, velocity_accum_type=None,
                 max_grad_norm=None):
        explicit = _explicit(locals())
        torch.optim.SGD.__init__(
            self, params, lr=lr, momentum=momentum or 0.0,
            dampening=dampening or 0.0, weight_decay=weight_decay or 0.0,
            nesterov=bool(nesterov), maximize=bool(maximize))
        self._setup(explicit)


class Adam(_PoptorchOptimizer, torch.optim.Adam):
    _popc_base = "Adam"
    _extra_global = {"loss_scaling": 1.0, "accum_type": torch.float32,
                     "first_order_momentum_accum_type": torch.float32,
                     "second_order_momentum_accum_type": torch.float32,
                     "max_grad_norm": math.inf}

    def __init__(self, params, lr=None, betas=None, eps=None,
                 weight_decay=None, amsgrad=None, foreach=None,
                 maximize=None, capturable=None, differentiable=None,
                 fused=None, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        explicit = _explicit(locals())
        if amsgrad:
            raise ValueError("Only non-amsgrad Adam/AdamW optimizers are "
                             "supported.")
        torch.optim.Adam.__init__(
            self, params, lr=1e-3 if lr is None else lr,
            betas=betas or (0.9, 0.999), eps=1e-8 if eps is None else eps,
            weight_decay=weight_decay or 0.0, maximize=bool(maximize))
        self._setup(explicit)


class AdamW(_PoptorchOptimizer, torch.optim.AdamW):
    _popc_base = "AdamW"
    _extra_global = dict(Adam._extra_global, bias_correction=True)

    def __init__(self, params, lr=None, betas=None, eps=None,
                 weight_decay=None, amsgrad=None, maximize=None,
                 foreach=None, capturable=None, loss_scaling=None,
                 bias_correction=None, accum_type=None,
                 first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        explicit = _explicit(locals())
        if amsgrad:
            raise ValueError("Only non-amsgrad Adam/AdamW optimizers are "
                             "supported.")
        torch.optim.AdamW.__init__(
            self, params, lr=1e-3 if lr is None else lr,
            betas=betas or (0.9, 0.999), eps=1e-8 if eps is None else eps,
            weight_decay=1e-2 if weight_decay is None else weight_decay,
            maximize=bool(maximize))
        self._setup(explicit)


class RMSprop(_PoptorchOptimizer, torch.optim.RMSprop):
    _popc_base = "RMSprop"
    _extra_global = {"loss_scaling": 1.0, "accum_type": torch.float32,
                     "first_order_momentum_accum_type": torch.float32,
                     "second_order_momentum_accum_type": torch.float32,
                     "use_tf_variant": False}

    def __init__(self, params, lr=None, alpha=None, eps=None,
                 weight_decay=None, momentum=None, centered=None,
                 foreach=None, maximize=None, differentiable=None,
                 loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None,
                 use_tf_variant=None):
        explicit = _explicit(locals())
        torch.optim.RMSprop.__init__(
            self, params, lr=1e-2 if lr is None else lr,
            alpha=0.99 if alpha is None else alpha,
            eps=1e-8 if eps is None else eps,
            weight_decay=weight_decay or 0.0, momentum=momentum or 0.0,
            centered=bool(centered), maximize=bool(maximize))
        self._setup(explicit)


class LAMB(_PoptorchOptimizer, torch.optim.Optimizer):
    """poptorch.optim.LAMB; step() is the Python reference of the update
    popc's "lamb" plugin runs (docs/semantics.md §4)."""
    _popc_base = "LAMB"
    _extra_global = {"loss_scaling": 1.0, "accum_type": torch.float32,
                     "first_order_momentum_accum_type": torch.float32,
                     "second_order_momentum_accum_type": torch.float32,
                     "bias_correction": True}

    def __init__(self, params, lr=None, betas=None, eps=None,
                 weight_decay=None, bias_correction=None, loss_scaling=None,
                 max_weight_norm=None, accum_type=None,
                 first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None):
        explicit = _explicit(locals())
        defaults = dict(lr=1e-3 if lr is None else lr,
                        betas=betas or (0.9, 0.999),
                        eps=1e-8 if eps is None else eps,
                        weight_decay=1e-2 if weight_decay is None
                        else weight_decay,
                        max_weight_norm=65500.0 if max_weight_norm is None
                        else max_weight_norm)
        torch.optim.Optimizer.__init__(self, params, defaults)
        self._setup(explicit)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                if self.bias_correction:
                    mh = m / (1 - b1 ** state["step"])
                    vh = v / (1 - b2 ** state["step"])
                else:
                    mh, vh = m, v
                x = mh / (vh.sqrt() + group["eps"]) + \
                    group["weight_decay"] * p
                r1 = min(p.norm().item(), group["max_weight_norm"])
                r2 = x.norm().item()
                trust = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
                p.sub_(group["lr"] * trust * x)
        return loss


def _popc_type(optimizer):
    for cls in type(optimizer).__mro__:
        if cls.__module__.startswith(("torch.optim", __name__)) and \
                cls.__name__ in _TYPES:
            return _TYPES[cls.__name__]
    raise ValueError(
        "Unsupported optimizer type %s: popc runs torch.optim's SGD, Adam, "
        "AdamW and RMSprop and poptorch.optim's SGD, Adam, AdamW, RMSprop "
        "and LAMB" % type(optimizer).__name__)


def _values(name, key, value):
    """popc's (name, float) pairs for one torch attribute."""
    if key == "betas":
        return [("beta1", float(value[0])), ("beta2", float(value[1]))]
    if key.endswith("accum_type"):
        return [(key, float(_ACCUM[_accum(value, key)]))]
    if isinstance(value, bool):
        return [(key, 1.0 if value else 0.0)]
    return [(key, float(value))]


def _variable(optimizer, key, value):
    attrs = getattr(optimizer, "variable_attrs", None)
    if isinstance(attrs, VariableAttributes):
        return not attrs.isConstant(key)
    if key not in _TORCH_CONST_AT:
        return key == "lr"
    const_at = _TORCH_CONST_AT[key]
    if const_at is None:
        return False
    if key == "weight_decay" and isinstance(optimizer, torch.optim.AdamW):
        const_at = 1e-2
    return float(value) != const_at


class Converted:
    """A popc optimizer (its handle freed with this object)."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if self.handle:
            _lib.core.popc_optimizer_free(self.handle)
            self.handle = None


def convert(optimizer, names_of, frozen=()):
    """popc's optimizer for a torch or poptorch optimizer; names_of maps a
    parameter tensor (by id) to its state_dict name. The parameters named
    in frozen (requires_grad=False) get a group of their own with lr 0:
    every popc update is scaled by lr, so they keep their values, as
    torch.optim leaves a parameter without a gradient alone."""
    kind = _popc_type(optimizer)
    groups = optimizer.param_groups
    for g in groups:
        if g.get("maximize"):
            raise ValueError("popc.poptorch: maximize=True is not supported "
                             "yet")
        if g.get("amsgrad"):
            raise ValueError("Only non-amsgrad Adam/AdamW optimizers are "
                             "supported.")
    if kind == "rmsprop":
        centered = [bool(g.get("centered", False)) for g in groups]
        if len(set(centered)) > 1:
            raise ValueError(
                "All parameter groups must have the same value for the "
                "'centered' attribute (%s)" % " / ".join(
                    "Group %d: %s" % (i, c) for i, c in enumerate(centered)))
    h = ctypes.c_void_p()
    _lib.check(_lib.core.popc_optimizer_new(_lib.b(kind), ctypes.byref(h)),
               ValueError)
    out = Converted(h.value)

    def put(group, key, value, variable):
        for name, x in _values(kind, key, value):
            if group == 0 and variable:
                st = _lib.core.popc_optimizer_set(out.handle, _lib.b(name), x)
            else:
                st = _lib.core.popc_optimizer_set_group(
                    out.handle, group, _lib.b(name), x)
            _lib.check(st, ValueError)

    first = groups[0]
    for key in _GROUP[kind]:
        if key in first:
            put(0, key, first[key], _variable(optimizer, key, first[key]))
    for key in _GLOBAL[kind]:
        value = getattr(optimizer, key, first.get(key))
        if key == "centered":
            value = first.get("centered", False)
        if value is None:
            continue
        put(0, key, value, key == "loss_scaling" and
            _variable(optimizer, key, value))
    frozen = set(frozen)
    if frozen and math.isfinite(float(getattr(optimizer, "max_grad_norm",
                                              math.inf))):
        raise ValueError("popc.poptorch: max_grad_norm with parameters that "
                         "have requires_grad=False is not supported yet "
                         "(popc would count their gradients in the norm)")
    if frozen:
        index = ctypes.c_int(-1)
        _lib.check(_lib.core.popc_optimizer_add_group(
            out.handle, _lib.b(",".join(sorted(frozen))),
            ctypes.byref(index)), ValueError)
        put(index.value, "lr", 0.0, False)
    for i, g in enumerate(groups[1:], start=1):
        names = []
        for p in g["params"]:
            if id(p) not in names_of:
                raise ValueError("optimizer group %d holds a tensor that is "
                                 "not a parameter of the model" % i)
            if names_of[id(p)] not in frozen:
                names.append(names_of[id(p)])
        if not names:
            continue
        index = ctypes.c_int(-1)
        _lib.check(_lib.core.popc_optimizer_add_group(
            out.handle, _lib.b(",".join(names)), ctypes.byref(index)),
            ValueError)
        for key in _GROUP[kind]:
            if key in g:
                put(index.value, key, g[key], False)
    return out
