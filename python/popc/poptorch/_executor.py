"""PoplarExecutor: a torch.nn.Module traced to ONNX and run by popc.

The first call (or compile) traces the module with torch.onnx.export in
memory, for one micro-batch of the inputs given (training models in
training mode, inference models as the module is), imports the bytes with
popc_onnx_import_bytes, annotates the graph from blocks and helpers,
makes popc's inference or training model, and compiles it for the whole
combined batch. Parameters and buffers are the graph's initializers, by
their state_dict names. Runs copy the inputs into popc tensors and hand
the outputs back as torch tensors over popc's storage (no copy).
"""
import ctypes
import inspect
import io
import os
import warnings
import weakref

import torch

from .. import _lib
from . import _marks, _ops, _sync, optim
from ._errors import Error
from ._options import Options

_OPSET = 13
# each user module's training executor, for inference models made from it
_TRAINING_OF = weakref.WeakKeyDictionary()


def _raise(status, exc=Error):
    raise exc(_lib.last_error())


def _check(status, exc=Error):
    if status != _lib.OK:
        _raise(status, exc)


class _Latency(ctypes.Structure):
    _fields_ = [("min", ctypes.c_double), ("max", ctypes.c_double),
                ("mean", ctypes.c_double)]


class _PerfCounters(ctypes.Structure):
    _fields_ = [("n_iterations", ctypes.c_int64),
                ("micro_batches", ctypes.c_int64), ("replicas", ctypes.c_int),
                ("times", ctypes.POINTER(ctypes.c_double) * 6)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                             ctypes.POINTER(_lib.View), ctypes.c_int,
                             ctypes.POINTER(_lib.View), ctypes.c_int)
_lib.core.popc_model_register_callback.argtypes = [
    ctypes.c_void_p, ctypes.c_char_p, _CALLBACK, ctypes.c_void_p]
_lib.core.popc_model_register_callback.restype = ctypes.c_int


class _Model:
    """Owns a popc_model handle."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if self.handle:
            _lib.core.popc_model_free(self.handle)
            self.handle = None


def _flatten(out, leaves):
    if isinstance(out, torch.Tensor):
        leaves.append(out)
        return "t"
    if isinstance(out, (tuple, list)):
        return (type(out), [_flatten(o, leaves) for o in out])
    raise TypeError("popc.poptorch: a model output of type %s; popc "
                    "returns tensors, in tuples or lists" %
                    type(out).__name__)


def _unflatten(spec, leaves):
    if spec == "t":
        return leaves.pop(0)
    cls, items = spec
    return cls(_unflatten(s, leaves) for s in items)


class PoplarExecutor:
    """poptorch.PoplarExecutor: made by trainingModel, inferenceModel and
    poptorch.load."""

    def __init__(self, model, options, training, optimizer=None,
                 _loaded=None):
        if options is None:
            options = Options()
        if not isinstance(options, Options):
            raise TypeError("Invalid type: 'options' is of type %s "
                            "(Expected poptorch.Options)" %
                            type(options).__name__)
        self._user_options = options
        self._options = options.clone()
        _lib.core.popc_options_freeze(options._handle)
        self._training = training
        self._model = model
        self._popc = _loaded
        self._optimizer = None
        self._optimizer_handle = None
        self._dirty = False
        self._host_copies = 0
        self._out_spec = None
        self._input_names = None
        if model is not None:
            self._params = dict(model.named_parameters())
            self._buffers = dict(model.named_buffers())
            self._names_of = {id(p): n for n, p in self._params.items()}
        if training:
            if optimizer is None:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            self.setOptimizer(optimizer)
            if model is not None:
                _TRAINING_OF[model] = self
                _sync.install(model, self)

    # ---- properties -------------------------------------------------------
    @property
    def model(self):
        return self._model

    @property
    def options(self):
        return self._user_options

    @property
    def training(self):
        return self._training

    # ---- tracing and compiling --------------------------------------------
    def _bind(self, args, kwargs):
        if self._model is None:
            return [("input_%d" % i, a) for i, a in enumerate(args)]
        sig = inspect.signature(self._model.forward)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        out = []
        for name, value in bound.arguments.items():
            p = sig.parameters[name]
            if p.kind == p.VAR_POSITIONAL:
                out += [("%s_%d" % (name, i), v) for i, v in
                        enumerate(value)]
            elif p.kind == p.VAR_KEYWORD:
                out += list(value.items())
            elif value is not None:
                out.append((name, value))
        for name, value in out:
            if not isinstance(value, torch.Tensor):
                raise TypeError(
                    "popc.poptorch: input '%s' is a %s; popc compiles "
                    "for tensor inputs (pass constants as module "
                    "attributes)" % (name, type(value).__name__))
        return out

    def _factor(self):
        o = self._options
        return (o.device_iterations *
                (o.replication_factor // max(o.input_group_size, 1)) *
                (o.Training.gradient_accumulation if self._training else 1))

    def _trace(self, inputs):
        """The module as ONNX bytes, for one micro-batch of inputs."""
        model = self._model
        factor = self._factor()
        sample = []
        for _, t in inputs:
            n = t.shape[0] if t.dim() > 0 else 0
            # a batch that does not divide is traced whole: popc's compile
            # then refuses it with PopTorch's message
            sample.append(t[: n // factor] if n and n % factor == 0 else t)
        # the trace runs the module once: keep its buffers and the RNG as
        # they were, as PopTorch's tracing does
        saved = {n: b.detach().clone() for n, b in self._buffers.items()}
        rng = torch.get_rng_state()
        modes = [(m, m.training) for m in model.modules()]
        spec = []

        def hook(module, args, output):
            spec[:] = [_flatten(output, [])]

        handle = model.register_forward_hook(hook)
        _marks.reset()
        _ops.used_domains.clear()
        _ops.cpu_ops.clear()
        for name, fn in _ops.LOSS_SYMBOLICS.items():
            torch.onnx.register_custom_op_symbolic(name, fn, 9)
        buf = io.BytesIO()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model, tuple(sample), buf, export_params=True,
                    training=(torch.onnx.TrainingMode.TRAINING
                              if self._training else
                              torch.onnx.TrainingMode.PRESERVE),
                    opset_version=_OPSET, do_constant_folding=False,
                    input_names=[n for n, _ in inputs],
                    keep_initializers_as_inputs=False,
                    custom_opsets=_ops.used_domains)
        finally:
            handle.remove()
            for name in _ops.LOSS_SYMBOLICS:
                torch.onnx.unregister_custom_op_symbolic(name, 9)
            with torch.no_grad():
                for n, b in self._buffers.items():
                    b.copy_(saved[n])
            torch.set_rng_state(rng)
            for m, mode in modes:
                m.training = mode
        self._out_spec = spec[0] if spec else None
        self._cpu_ops = dict(_ops.cpu_ops)
        return buf.getvalue()

    def _import(self, data):
        o = _lib.OnnxImportOptions()
        _lib.onnx.popc_onnx_import_options_init(ctypes.byref(o))
        o.trainable = 1
        g = ctypes.c_void_p()
        st = _lib.onnx.popc_onnx_import_bytes(data, len(data),
                                              b"traced-model.onnx", None,
                                              ctypes.byref(o),
                                              ctypes.byref(g))
        _check(st)
        return g.value

    def _check_weights(self, graph):
        """Every trainable initializer of a training graph is a parameter
        (frozen ones keep their values: optim.convert)."""
        core = _lib.core
        for v in range(core.popc_graph_n_values(graph)):
            if not core.popc_graph_value_trainable(graph, v):
                continue
            name = core.popc_graph_value_name(graph, v).decode()
            p = self._params.get(name)
            if p is None and self._training:
                raise Error(
                    "popc.poptorch: the traced graph has a floating-point "
                    "constant '%s' that is not a parameter of the module; "
                    "popc would train it. Make it a buffer "
                    "(register_buffer) or a parameter" % name)

    def _make_model(self, graph):
        out = ctypes.c_void_p()
        opts = self._options._handle
        if self._training:
            st = _lib.core.popc_model_new_training(
                graph, opts, self._optimizer_handle.handle, ctypes.byref(out))
        else:
            st = _lib.core.popc_model_new_inference(graph, opts,
                                                    ctypes.byref(out))
        _check(st)
        return _Model(out.value)

    def _link(self):
        """Inference models read the training model of the same module
        (popc_model_share_weights), whichever compiled first."""
        if self._model is None:
            return
        if self._training:
            pairs = [(inf, self) for inf in _INFERENCE_OF.get(self._model,
                                                              ())
                     if inf._popc is not None]
        else:
            _INFERENCE_OF.setdefault(self._model, weakref.WeakSet()).add(
                self)
            train = _TRAINING_OF.get(self._model)
            pairs = [(self, train)] if train is not None and \
                train._popc is not None else []
        for inf, train in pairs:
            _check(_lib.core.popc_model_share_weights(inf._popc.handle,
                                                      train._popc.handle))

    def _build(self, args, kwargs):
        inputs = self._bind(args, kwargs)
        self._input_names = [n for n, _ in inputs]
        data = self._trace(inputs)
        if os.environ.get("POPC_EXPORT_ONNX"):
            with open(os.environ["POPC_EXPORT_ONNX"], "wb") as f:
                f.write(data)
        graph = self._import(data)
        try:
            self._check_weights(graph)
            strategy = getattr(self._options, "_strategy", None)
            stages = strategy.stage_map() if strategy is not None else {}
            _marks.apply(graph, stages)
            self._popc = self._make_model(graph)
        finally:
            _lib.core.popc_graph_free(graph)
        self._register_cpu_ops()
        # the export saw the buffers its own trace run had updated
        # (BatchNorm's running statistics): the module's, restored since,
        # are the ones to start from
        self._copy_to_popc(self._buffers)
        self._link()
        return inputs

    def _register_cpu_ops(self):
        """The callbacks of poptorch.CPU ops, called by popc on the host
        for every micro-batch."""
        self._callbacks = []
        for op_id, fn in self._cpu_ops.items():
            def call(user, ins, n_in, outs, n_out, fn=fn, op_id=op_id):
                try:
                    args = [torch.from_numpy(_lib.view_array(ins[i]).copy())
                            for i in range(n_in)]
                    with torch.no_grad():
                        res = fn(*args)
                    res = [res] if isinstance(res, torch.Tensor) else res
                    if len(res) != n_out:
                        raise ValueError("returned %d tensors, traced %d" %
                                         (len(res), n_out))
                    for i, r in enumerate(res):
                        dst = _lib.view_array(outs[i])
                        dst[...] = r.detach().numpy().reshape(dst.shape)
                    return _lib.OK
                except Exception as e:  # the run stops with the reason
                    return _lib.core.popc_set_error(
                        _lib.ECALLBACK, b"%s",
                        _lib.b("poptorch.CPU op '%s' failed: %s: %s" %
                               (op_id, type(e).__name__, e)))
            cb = _CALLBACK(call)
            self._callbacks.append(cb)
            _check(_lib.core.popc_model_register_callback(
                self._popc.handle, _lib.b(op_id), cb, None))

    def _popc_inputs(self, inputs):
        tensors = [_lib.to_popc(t.detach().cpu().numpy()) for _, t in inputs]
        arr = (ctypes.c_void_p * max(len(tensors), 1))(
            *[t.handle for t in tensors])
        return tensors, arr

    def compile(self, *args, **kwargs):
        """Trace and compile for these inputs without running."""
        if self._popc is None:
            inputs = self._build(args, kwargs)
        else:
            inputs = self._bind(args, kwargs)
        keep, arr = self._popc_inputs(inputs)
        _check(_lib.core.popc_model_compile(self._popc.handle, arr,
                                            len(keep)))

    # ---- running ----------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._popc is None:
            inputs = self._build(args, kwargs)
        else:
            inputs = self._bind(args, kwargs)
        keep, arr = self._popc_inputs(inputs)
        n_out = _lib.core.popc_graph_n_outputs(
            _lib.core.popc_model_graph(self._popc.handle))
        outs = (ctypes.c_void_p * max(n_out, 1))()
        st = _lib.core.popc_model_run(self._popc.handle, arr, len(keep),
                                      outs, n_out)
        if self._training:
            self._dirty = True
        _check(st)
        leaves = [torch.from_numpy(_lib.from_popc(outs[i], owned=True))
                  for i in range(n_out)]
        if self._out_spec is None:
            return leaves[0] if len(leaves) == 1 else tuple(leaves)
        return _unflatten(self._out_spec, leaves)

    # ---- weights ----------------------------------------------------------
    def copyWeightsToHostIfNeeded(self):
        """Copy the weights to the module when training changed them;
        True when it copied."""
        if not self._dirty or self._popc is None:
            return False
        self.copyWeightsToHost()
        return True

    def copyWeightsToHost(self):
        if self._popc is None:
            return
        h = self._popc.handle
        if _lib.core.popc_model_is_compiled(h):
            _check(_lib.core.popc_model_copy_weights_to_host(h))
        self._host_copies += 1
        _lib.log(_lib.LOG_INFO, "popc.poptorch: copyWeightsToHost: the "
                 "device's weights copied to the module's parameters and "
                 "buffers (copy %d)" % self._host_copies)
        named = dict(self._params, **self._buffers)
        with torch.no_grad():
            for i in range(_lib.core.popc_model_n_tensors(h)):
                name = _lib.core.popc_model_tensor_name(h, i).decode()
                target = named.get(name)
                if target is None:
                    continue
                t = ctypes.c_void_p()
                _check(_lib.core.popc_model_get_weight(h, _lib.b(name),
                                                       ctypes.byref(t)))
                value = _lib.from_popc(t.value, owned=False)
                target.copy_(torch.from_numpy(value.copy()))
        self._dirty = False

    def copyWeightsToDevice(self):
        if self._popc is None:
            return
        self._copy_to_popc(dict(self._params, **self._buffers))
        if _lib.core.popc_model_is_compiled(self._popc.handle):
            _check(_lib.core.popc_model_copy_weights_to_device(
                self._popc.handle))
        self._dirty = False

    def _copy_to_popc(self, named):
        """The host values of named tensors into popc's host weights."""
        h = self._popc.handle
        for i in range(_lib.core.popc_model_n_tensors(h)):
            name = _lib.core.popc_model_tensor_name(h, i).decode()
            source = named.get(name)
            if source is None:
                continue
            t = _lib.to_popc(source.detach().cpu().numpy())
            _check(_lib.core.popc_model_set_weight(h, _lib.b(name),
                                                   t.handle))

    def load_state_dict(self, state_dict, strict=True):
        """poptorch's load_state_dict: into the module, then the device."""
        self.copyWeightsToHostIfNeeded()
        result = self._model.load_state_dict(state_dict, strict)
        self.copyWeightsToDevice()
        return result

    loadStateDict = load_state_dict

    def state_dict(self, *args, **kwargs):
        return self._model.state_dict(*args, **kwargs)

    # ---- optimizer --------------------------------------------------------
    def setOptimizer(self, optimizer):
        if not self._training:
            raise Error("popc.poptorch: setOptimizer needs a training model")
        frozen = [n for n, p in getattr(self, "_params", {}).items()
                  if not p.requires_grad]
        converted = optim.convert(optimizer, getattr(self, "_names_of", {}),
                                  frozen)
        if self._popc is not None:
            _check(_lib.core.popc_model_set_optimizer(self._popc.handle,
                                                      converted.handle),
                   ValueError)
        self._optimizer = optimizer
        self._optimizer_handle = converted

    # ---- lifecycle --------------------------------------------------------
    def _compiled(self):
        return self._popc is not None and bool(
            _lib.core.popc_model_is_compiled(self._popc.handle))

    def isCompiled(self):
        return self._compiled()

    def destroy(self):
        if self._popc is None:
            return
        self.copyWeightsToHostIfNeeded()
        _check(_lib.core.popc_model_destroy(self._popc.handle))

    def detachFromDevice(self):
        if self._popc is None:
            raise Error("Model has not been compiled or has been destroyed.")
        self.copyWeightsToHostIfNeeded()
        _check(_lib.core.popc_model_detach_from_device(self._popc.handle))

    def attachToDevice(self):
        if self._popc is None:
            raise Error("Model has not been compiled or has been destroyed.")
        _check(_lib.core.popc_model_attach_to_device(self._popc.handle))

    def isAttachedToDevice(self):
        return self._popc is not None and bool(
            _lib.core.popc_model_is_attached(self._popc.handle))

    isAttached = isAttachedToDevice

    def compileAndExport(self, filename, *args, export_model=True, **kwargs):
        if not export_model:
            raise NotImplementedError(
                "popc.poptorch: compileAndExport(export_model=False) is not "
                "supported yet: popc's executable always holds the model")
        if self._popc is None:
            inputs = self._build(args, kwargs)
        else:
            inputs = self._bind(args, kwargs)
        keep, arr = self._popc_inputs(inputs)
        _check(_lib.core.popc_model_compile_and_export(
            self._popc.handle, arr, len(keep), _lib.b(filename)))

    def save(self, filename, export_model=True, save_rng_state=True):
        if not export_model:
            raise NotImplementedError(
                "popc.poptorch: save(export_model=False) is not supported "
                "yet: popc's executable always holds the model")
        if self._popc is None:
            raise Error("Model has not been compiled or has been destroyed.")
        _check(_lib.core.popc_model_save(self._popc.handle,
                                         _lib.b(filename)))

    def loadExecutable(self, filename):
        if self._popc is None:
            raise Error("popc.poptorch: loadExecutable needs the model "
                        "traced first: call compile() with inputs")
        _check(_lib.core.popc_model_load_executable(self._popc.handle,
                                                    _lib.b(filename)))
        self._dirty = self._training

    # ---- queries ----------------------------------------------------------
    def _latency(self, name):
        out = _Latency()
        fn = getattr(_lib.core, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Latency)]
        _check(fn(self._handle_or_none(), ctypes.byref(out)))
        return (out.min, out.max, out.mean)

    def getLatency(self):
        """(min, max, mean) seconds of the last run's iterations, input
        to output complete."""
        return self._latency("popc_model_get_latency")

    def getComputeLatency(self):
        return self._latency("popc_model_get_compute_latency")

    def getHostIpuLatency(self):
        return self._latency("popc_model_get_host_ipu_latency")

    def getIpuHostLatency(self):
        return self._latency("popc_model_get_ipu_host_latency")

    def getPerfCounters(self):
        """PopTorch's counters of the last run: for each event, one list
        of times (seconds from the run's start) per input or output tensor
        (one for the compute events), one time per iteration."""
        c = _PerfCounters()
        fn = _lib.core.popc_model_get_perf_counters
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_PerfCounters)]
        _check(fn(self._handle_or_none(), ctypes.byref(c)))
        g = _lib.core.popc_model_graph(self._popc.handle)
        n_in = _lib.core.popc_graph_n_inputs(g)
        n_out = _lib.core.popc_graph_n_outputs(g)
        names = ("input", "input_complete", "compute", "compute_complete",
                 "output", "output_complete")
        out = {}
        for i, name in enumerate(names):
            times = [c.times[i][k] for k in range(c.n_iterations)]
            copies = n_in if i < 2 else n_out if i > 3 else 1
            out[name] = [list(times) for _ in range(copies)]
        return out

    def cycleCount(self):
        """Estimated device cycles of the last run (Options.logCycleCount
        must be on; the ipumodel backend estimates them)."""
        cycles = ctypes.c_double()
        fn = _lib.core.popc_model_cycle_count
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
        _check(fn(self._handle_or_none(), ctypes.byref(cycles)))
        return int(cycles.value)

    def getTensorNames(self):
        if self._popc is None:
            raise Error("Model has not been compiled or has been destroyed.")
        g = _lib.core.popc_model_graph(self._popc.handle)
        return [_lib.core.popc_graph_value_name(g, v).decode()
                for v in range(_lib.core.popc_graph_n_values(g))]

    def getAnchoredTensor(self, short_name):
        t = ctypes.c_void_p()
        _check(_lib.core.popc_model_get_anchored_tensor(
            self._handle_or_none(), _lib.b(short_name), ctypes.byref(t)))
        return torch.from_numpy(_lib.from_popc(t.value, owned=False).copy())

    @property
    def rng_state(self):
        raise NotImplementedError("popc.poptorch: rng_state is not "
                                  "supported yet")

    def _handle_or_none(self):
        return self._popc.handle if self._popc is not None else None

    def __getattr__(self, name):
        # PopTorch's wrapper forwards the module's attributes
        model = self.__dict__.get("_model")
        if model is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(model, name)


_INFERENCE_OF = weakref.WeakKeyDictionary()


def trainingModel(model, options=None, optimizer=None):
    """poptorch.trainingModel."""
    return PoplarExecutor(model, options, True, optimizer)


def inferenceModel(model, options=None):
    """poptorch.inferenceModel."""
    return PoplarExecutor(model, options, False)


def load(filename, edit_opts_fn=None):
    """poptorch.load: a model from compileAndExport's file, compiled for
    the shapes it was exported with. The file holds no Python module:
    outputs come back as a tuple (one tensor alone)."""
    edit = None
    if edit_opts_fn is not None:
        edit = Options()
        edit_opts_fn(edit)
    out = ctypes.c_void_p()
    _check(_lib.core.popc_load(_lib.b(filename),
                               edit._handle if edit else None,
                               ctypes.byref(out)))
    model = _Model(out.value)
    training = bool(_lib.core.popc_model_training(model.handle))
    ex = PoplarExecutor.__new__(PoplarExecutor)
    ex.__dict__.update(_user_options=edit or Options(), _options=None,
                       _training=training, _model=None, _popc=model,
                       _optimizer=None, _optimizer_handle=None,
                       _dirty=False, _host_copies=0, _out_spec=None,
                       _input_names=None, _params={}, _buffers={},
                       _names_of={})
    return ex
