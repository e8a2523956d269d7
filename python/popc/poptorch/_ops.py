"""PopTorch's op helpers. Each is an identity or a computation in eager
PyTorch and, while popc traces a model, exports as the popc op that does
the same on the device (a custom ONNX symbolic in domain "popc"), or
leaves a mark in the node names (a tracing scope) that popc turns into a
node annotation after import (_marks.py).
"""
import torch

from . import _marks
from .enums import MatMulSerializationMode

_REDUCTIONS = {"sum": 0, "mean": 1, "none": 2}
# the custom domains the nodes of the export in progress use: torch reads
# this dict when it writes the model, after the symbolics ran, and warns
# about a domain declared but unused
used_domains = {}


def _popc_op(g, op, *args, **kwargs):
    used_domains["popc"] = 1
    return g.op("popc::" + op, *args, **kwargs)


def _tracing():
    return torch._C._get_tracing_state() is not None


class _IdentityLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, reduction):
        ctx.reduction = reduction
        ctx.shape = x.shape
        if reduction == 0:
            return x.sum()
        if reduction == 1:
            return x.mean()
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        if ctx.reduction == 1:
            numel = 1
            for d in ctx.shape:
                numel *= d
            return grad.expand(ctx.shape) / numel, None
        return grad.expand(ctx.shape), None

    @staticmethod
    def symbolic(g, x, reduction):
        return _popc_op(g, "IdentityLoss", x, reduction_i=reduction)


def identity_loss(x, reduction):
    """poptorch.identity_loss: marks x as the loss ('sum', 'mean' or
    'none'); popc's final loss rule (docs/semantics.md §3) applies."""
    if reduction not in _REDUCTIONS:
        raise ValueError("Unsupported reduction type! Use 'sum', 'mean' or "
                         "'none' (got %r)" % (reduction,))
    return _IdentityLoss.apply(x, _REDUCTIONS[reduction])


class _PrintTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, title):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None

    @staticmethod
    def symbolic(g, x, title):
        return _popc_op(g, "IpuPrintTensor", x, title_s=title)


def ipu_print_tensor(tensor, title=""):
    """poptorch.ipu_print_tensor: popc::IpuPrintTensor logs the tensor (and
    its gradient, titled "<title>_gradient") at INFO on every run."""
    return _PrintTensor.apply(tensor, title)


class _Nop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad

    @staticmethod
    def symbolic(g, x):
        return _popc_op(g, "Nop", x)


def nop(tensor):
    """poptorch.nop: an identity popc never folds away (popc::Nop)."""
    return _Nop.apply(tensor)


class _Checkpoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *xs):
        return tuple(x.clone() for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        return grads

    @staticmethod
    def symbolic(g, *xs):
        return _popc_op(g, "RecomputationCheckpoint", *xs, outputs=len(xs))


def recomputationCheckpoint(*tensors):
    """poptorch.recomputationCheckpoint: popc::RecomputationCheckpoint."""
    flat = tensors[0] if len(tensors) == 1 and isinstance(
        tensors[0], (list, tuple)) else tensors
    out = _Checkpoint.apply(*flat)
    if not isinstance(out, tuple):
        out = (out,)
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return out[0]
    return list(out) if isinstance(tensors[0], list) else out


class _Marked(torch.autograd.Function):
    """An identity whose ONNX node carries a mark in its name."""

    @staticmethod
    def forward(ctx, x, mark):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad, None

    @staticmethod
    def symbolic(g, x, mark):
        return g.op("Identity", x)


def set_available_memory(tensor, available_memory_proportion):
    """poptorch.set_available_memory: the op producing tensor gets that
    proportion of tile memory for temporaries (popc's available_memory
    annotation)."""
    if not 0.0 < float(available_memory_proportion) <= 1.0:
        raise ValueError("set_available_memory: available_memory_proportion "
                         "must be in (0, 1], got %r" %
                         (available_memory_proportion,))
    if not _tracing():
        return tensor
    with _marks.scope(_marks.AvailableMemory(
            float(available_memory_proportion))):
        return _Marked.apply(tensor, 0)


def serializedMatMul(lhs, rhs, mode, factor=0, keep_precision=False):
    """poptorch.serializedMatMul: lhs @ rhs, serialized on the device by
    popc (popc_serialize_matmul_node) along mode's dimension."""
    if not isinstance(mode, MatMulSerializationMode):
        raise ValueError("serializedMatMul: mode must be a "
                         "poptorch.MatMulSerializationMode, got %r" % (mode,))
    if mode != MatMulSerializationMode.Disabled and int(factor) < 1:
        raise ValueError("serializedMatMul: factor must be >= 1 "
                         "(got %r)" % (factor,))
    if not _tracing() or mode == MatMulSerializationMode.Disabled:
        return torch.matmul(lhs, rhs)
    with _marks.scope(_marks.SerializedMatMul(mode, int(factor),
                                              bool(keep_precision))):
        return torch.matmul(lhs, rhs)


def dynamic_slice(tensor, dim, start, size, step):
    """poptorch.dynamic_slice: size elements along dim from a start known
    at run time, by the IPU's rule (popc_dynamic_slice): a start outside
    the dimension reads from 0, and a slice past the end wraps round."""
    if step != 1:
        raise ValueError("dynamic_slice: only step 1 is supported (got %r), "
                         "as on the IPU" % (step,))
    length = tensor.shape[dim]
    if not 0 < size <= length:
        raise ValueError("dynamic_slice: size %d is outside 1..%d, the "
                         "size of dimension %d" % (size, length, dim))
    start = torch.as_tensor(start).reshape(()).to(torch.int64)
    inside = (start >= 0) & (start < length)
    first = torch.where(inside, start, torch.zeros_like(start))
    index = torch.remainder(first + torch.arange(size), length)
    return torch.index_select(tensor, dim, index)


def for_loop(count, body, inputs):
    """poptorch.for_loop: refused (a traced Python body cannot become an
    ONNX Loop body here)."""
    raise NotImplementedError(
        "popc.poptorch.for_loop is not supported yet: tracing cannot turn "
        "the Python body into a device loop. Write the loop in Python (it "
        "is unrolled when traced), or build it in C with popc_for_loop "
        "(popc/helpers.h)")


class _CustomOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, *inputs):
        return tuple(t.clone() for t in spec["example_outputs"])

    @staticmethod
    def symbolic(g, spec, *inputs):
        attrs = {}
        for key, value in (spec["attributes"] or {}).items():
            if isinstance(value, bool) or isinstance(value, int):
                attrs[key + "_i"] = int(value)
            elif isinstance(value, float):
                attrs[key + "_f"] = value
            elif isinstance(value, str):
                attrs[key + "_s"] = value
            elif isinstance(value, (list, tuple)) and all(
                    isinstance(v, int) for v in value):
                attrs[key + "_i"] = list(value)
            elif isinstance(value, (list, tuple)) and all(
                    isinstance(v, (int, float)) for v in value):
                attrs[key + "_f"] = [float(v) for v in value]
            elif isinstance(value, (list, tuple)) and all(
                    isinstance(v, str) for v in value):
                attrs[key + "_s"] = list(value)
            else:
                raise ValueError("custom_op %s: attribute %s: popc takes "
                                 "ints, floats, strings or lists of one of "
                                 "them" % (spec["name"], key))
        used_domains[spec["domain"]] = spec["version"]
        return g.op("%s::%s" % (spec["domain"], spec["name"]), *inputs,
                    outputs=len(spec["example_outputs"]), **attrs)


class custom_op:
    """poptorch.custom_op: the op `name` of `domain` from a popc op
    plugin (docs/plugins.md), found by domain, name and version when the
    model is imported; example_outputs give the outputs' shapes while
    tracing."""

    def __init__(self, inputs, name, domain, domain_version, example_outputs,
                 attributes=None):
        spec = {"name": name, "domain": domain,
                "version": int(domain_version),
                "example_outputs": list(example_outputs),
                "attributes": attributes}
        out = _CustomOp.apply(spec, *inputs)
        self._outputs = list(out) if isinstance(out, tuple) else [out]

    def __getitem__(self, i):
        return self._outputs[i]

    def __iter__(self):
        return iter(self._outputs)

    def __len__(self):
        return len(self._outputs)


class NameScope:
    """poptorch.NameScope: ops inside get the name prefix "<name>/"."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self._state = torch._C._get_tracing_state()
        if self._state:
            self._state.push_scope("popc::" + self.name)

    def __exit__(self, *exc):
        if self._state:
            self._state.pop_scope()
        return False


class _CTCBeamSearch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, probs, lengths, blank, beam_width, top_paths):
        # only shapes matter here: popc's op computes the values
        steps, batch = probs.shape[0], probs.shape[1]
        return (torch.zeros(batch, top_paths),
                torch.zeros(batch, top_paths, dtype=torch.int32),
                torch.zeros(batch, top_paths, steps, dtype=torch.int32))

    @staticmethod
    def symbolic(g, probs, lengths, blank, beam_width, top_paths):
        return _popc_op(g, "CTCBeamSearchDecoder", probs, lengths,
                        blank_i=blank, beam_width_i=beam_width,
                        top_paths_i=top_paths, outputs=3)


def ctc_beam_search_decoder(probs, lengths, blank=0, beam_width=100,
                            top_paths=1):
    """poptorch.ctc_beam_search_decoder: popc::CTCBeamSearchDecoder (CTC
    prefix beam search) on log probabilities [T, B, C]; returns the paths'
    log probabilities [B, top_paths], lengths [B, top_paths] and paths
    [B, top_paths, T]. It runs in a popc model only."""
    if not _tracing():
        raise NotImplementedError(
            "popc.poptorch.ctc_beam_search_decoder runs inside a popc model "
            "only (call it in the forward of an inferenceModel)")
    if not 1 <= top_paths <= beam_width:
        raise ValueError("ctc_beam_search_decoder: top_paths must be in "
                         "1..beam_width (%d), got %d" % (beam_width,
                                                         top_paths))
    return list(_CTCBeamSearch.apply(probs, lengths, int(blank),
                                     int(beam_width), int(top_paths)))


_OVERLAP_MODES = {"no_overlap": 0, "overlap_accumulation_loop": 1,
                  "overlap_device_iteration_loop": 2}


def _overlap(tensors, mode, attr, who):
    from .enums import OverlapMode
    if not isinstance(mode, OverlapMode):
        raise ValueError("%s: mode must be a poptorch.OverlapMode, got %r" %
                         (who, mode))
    if not _tracing() or mode == OverlapMode.NoOverlap:
        return tensors
    if isinstance(tensors, torch.Tensor):
        with _marks.scope(_marks.Overlap(attr, _OVERLAP_MODES[mode.value])):
            return _Marked.apply(tensors, 0)
    if isinstance(tensors, (list, tuple)):
        return type(tensors)(_overlap(t, mode, attr, who) for t in tensors)
    if isinstance(tensors, dict):
        return {k: _overlap(v, mode, attr, who) for k, v in tensors.items()}
    raise ValueError("%s: expected tensors in tuples, lists or dicts, got "
                     "%s" % (who, type(tensors).__name__))


def set_overlap_for_input(input_tensors, mode):
    """poptorch.set_overlap_for_input: the host copies of these inputs
    overlap compute (popc's __overlap_input Identity); compiling needs
    ShardedExecution, numIOTiles and outputMode All or Sum, as in
    PopTorch."""
    return _overlap(input_tensors, mode, "__overlap_input",
                    "set_overlap_for_input")


def set_overlap_for_output(output_tensors, mode):
    """poptorch.set_overlap_for_output: the copies of these outputs to the
    host overlap compute."""
    return _overlap(output_tensors, mode, "__overlap_output",
                    "set_overlap_for_output")


class MultiConv:
    """poptorch.MultiConv: the convolutions traced in the scope are planned
    together (popc's multi-convolution attributes: the IPU model runs a
    parallel plan's convolutions at once on disjoint tiles); settings
    chain and apply to all or, as lists, to each convolution in order."""

    def __init__(self):
        self._settings = {"plan": 0, "reserved": 50, "back_off": 0.1,
                          "dithering": None, "partials": None,
                          "memory": None}
        self._pushed = False

    def _lists(self, value, check, what):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if not check(v):
                raise ValueError("MultiConv.%s: invalid value %r" %
                                 (what, v))
        return list(value) if isinstance(value, (list, tuple)) else value

    def availableMemoryProportions(self, value):
        self._settings["memory"] = self._lists(
            value, lambda v: 0.0 < float(v) < 1.0,
            "availableMemoryProportions")
        return self

    def partialsTypes(self, value):
        names = {torch.float: "float", torch.float32: "float",
                 torch.half: "half", torch.float16: "half"}
        self._lists(value, lambda v: v in names, "partialsTypes")
        self._settings["partials"] = [names[v] for v in value] if \
            isinstance(value, (list, tuple)) else names[value]
        return self

    def enableConvDithering(self, value):
        self._settings["dithering"] = self._lists(
            value, lambda v: isinstance(v, bool), "enableConvDithering")
        return self

    def planType(self, value):
        from .enums import MultiConvPlanType
        if not isinstance(value, MultiConvPlanType):
            raise ValueError("MultiConv.planType: expected a "
                             "poptorch.MultiConvPlanType, got %r" % (value,))
        self._settings["plan"] = int(value)
        return self

    def perConvReservedTiles(self, value):
        if not isinstance(value, int) or value < 0:
            raise ValueError("MultiConv.perConvReservedTiles: a number of "
                             "tiles >= 0, got %r" % (value,))
        self._settings["reserved"] = value
        return self

    def cycleBackOff(self, value):
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError("MultiConv.cycleBackOff: a number between 0 "
                             "and 1, got %r" % (value,))
        self._settings["back_off"] = float(value)
        return self

    def __enter__(self):
        if self._settings["dithering"] and self._settings["plan"] == 0:
            raise ValueError("MultiConv: convolution dithering needs "
                             "planType(poptorch.MultiConvPlanType.Serial) "
                             "(not supported yet with the parallel plan)")
        self._pushed = _marks.push(_marks.MultiConv(dict(self._settings)))
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _marks.pop()
        return False


# the CPU ops of the trace in progress, by ID (the executor registers
# their callbacks with the model it makes)
cpu_ops = {}


class _HostOp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, *inputs):
        # shapes only: popc calls the function when the model runs
        return tuple(torch.zeros(shape, dtype=dtype)
                     for shape, dtype in spec["outputs"])

    @staticmethod
    def symbolic(g, spec, *inputs):
        return _popc_op(g, "HostOp", *inputs, id_s=spec["id"],
                        output_dtypes_i=spec["dtypes"],
                        output_shapes_i=spec["shapes"],
                        batch_i=spec["batch"],
                        outputs=len(spec["outputs"]))


class CPU:
    """poptorch.CPU: layer_to_call runs on the host in the middle of an
    inference model (popc::HostOp calling back into Python for every
    micro-batch). CPU ops are only supported in inference graphs."""

    def __init__(self, layer_to_call, ID):
        if not isinstance(ID, str) or not ID or not ID.isprintable():
            raise ValueError("poptorch.CPU: ID must be a non-empty printable "
                             "string, got %r" % (ID,))
        self.layer_to_call = layer_to_call
        self.ID = ID

    def __call__(self, *args):
        if not _tracing():
            return self.layer_to_call(*args)
        from .. import _lib
        # run it once for the outputs' shapes; what it traces is dead code
        # the export removes
        with torch.no_grad():
            out = self.layer_to_call(*args)
        single = isinstance(out, torch.Tensor)
        outs = [out] if single else list(out)
        # while tracing, sizes are traced tensors: plain ints here
        shapes = []
        for t in outs:
            shapes += [t.dim()] + [int(d) for d in t.shape]
        # no tensors in spec: the tracer would look for them in its trace
        spec = {"id": self.ID,
                "outputs": [(tuple(int(d) for d in t.shape), t.dtype)
                            for t in outs],
                "dtypes": [_lib.dtype_of(t.detach().numpy().dtype)
                           for t in outs],
                "shapes": shapes,
                "batch": int(args[0].shape[0]) if args and
                isinstance(args[0], torch.Tensor) and args[0].dim() else -1}
        cpu_ops[self.ID] = self.layer_to_call
        result = _HostOp.apply(spec, *args)
        return result[0] if single else list(result)


# torch's losses that ONNX has no loss op for: exported as popc's loss ops
# (flagged as losses, so popc finds the final loss: docs/semantics.md §3)
def _loss_symbolic(op):
    def symbolic(g, x, target, reduction):
        from torch.onnx import symbolic_helper
        r = symbolic_helper._maybe_get_const(reduction, "i")
        return _popc_op(g, op, x, target,
                    reduction_s=["none", "mean", "sum"][r])
    return symbolic


LOSS_SYMBOLICS = {"aten::mse_loss": _loss_symbolic("MseLoss"),
                  "aten::l1_loss": _loss_symbolic("L1Loss")}
