"""poptorch.Options on popc's option table.

Every setter is PopTorch's method (opts.deviceIterations(4),
opts.Training.gradientAccumulation(2), ...): the call is handed to popc's
options (popc_options_load_json, or an options file for the calls whose
arguments are objects, such as setExecutionStrategy(ShardedExecution())),
which validate it with PopTorch's rules and texts. A name popc's table does
not have raises AttributeError listing the valid names of the category.
Setters return the options (or the category), so calls chain.
"""
import ctypes
import enum
import json
import os
import tempfile

import torch

from .. import _lib
from . import enums
from ._errors import Error

_CATEGORIES = ("Training", "Precision", "TensorLocations", "Distributed",
               "Jit")
_CLASS_OF = {"": "Options", "Training": "_TrainingOptions",
             "Precision": "_PrecisionOptions",
             "TensorLocations": "_TensorLocationOptions",
             "Distributed": "_DistributedOptions", "Jit": "_JitOptions"}
# Methods PopTorch spells differently from the option they set, or that
# take several arguments: popc's options parser maps them.
_EXTRA_METHODS = {
    "": ["outputMode", "inputReplicaGrouping", "anchorTensor",
         "appendToLocationExcludes", "sourceLocationExcludes",
         "setExecutionStrategy", "setAvailableMemoryProportion"],
    "Distributed": ["configureProcessId", "disable", "setEnvVarNames"],
    "TensorLocations": ["setActivationLocation", "setWeightLocation",
                        "setOptimizerLocation", "setAccumulatorLocation"],
    "Training": ["setMeanAccumulationAndReplicationReductionStrategy"],
}
_PYTHON_METHODS = {"": ["clone", "loadFromFile", "toDict", "setLogLevel",
                        "defaultOutputMode"]}


def _table_names():
    names = {c: set() for c in ("",) + _CATEGORIES}
    for i in range(_lib.core.popc_options_count()):
        name = _lib.core.popc_options_info(i).contents.name.decode()
        head, _, rest = name.partition(".")
        if head in _CATEGORIES:
            names[head].add(rest.partition(".")[0])
        else:
            names[""].add(head)
    for cat, extra in _EXTRA_METHODS.items():
        names[cat].update(extra)
    for cat, extra in _PYTHON_METHODS.items():
        names[cat].update(extra)
    return {c: sorted(v) for c, v in names.items()}


_VALID = None


def valid_names(category):
    global _VALID
    if _VALID is None:
        _VALID = _table_names()
    return _VALID[category]


class TensorLocationSettings:
    """poptorch.TensorLocationSettings: chained settings of one tensor
    class, handed to TensorLocations.set*Location."""

    _SETTINGS = ("useOnChipStorage", "useReplicatedTensorSharding",
                 "useIOTilesToLoad", "useIOTilesToStore",
                 "minElementsForOffChip",
                 "minElementsForReplicatedTensorSharding")

    def __init__(self):
        self._calls = []

    def __getattr__(self, name):
        if name not in self._SETTINGS:
            raise AttributeError(
                "'TensorLocationSettings' object has no attribute '%s'; "
                "valid names: %s" % (name, ", ".join(self._SETTINGS)))

        def setter(value=True):
            self._calls.append((name, value))
            return self
        return setter

    def _text(self):
        return "poptorch.TensorLocationSettings()" + "".join(
            ".%s(%s)" % (n, _literal(v)) for n, v in self._calls)


def _literal(value):
    """value as the Python literal popc's options parser reads."""
    from . import _blocks
    if isinstance(value, enum.Enum):
        return "poptorch.%s.%s" % (type(value).__name__, value.name)
    if isinstance(value, torch.dtype):
        return {torch.float: "torch.float", torch.half: "torch.half"}.get(
            value, repr(str(value)))
    if isinstance(value, TensorLocationSettings):
        return value._text()
    if isinstance(value, _blocks.ExecutionStrategy):
        return value._text()
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (_literal(k), _literal(v))
                                  for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(_literal(v) for v in value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    raise TypeError("popc.poptorch.Options: cannot pass %r to popc's "
                    "options" % (value,))


def _exception_for(status):
    if status in (_lib.ENOTFOUND, _lib.ESTATE):
        return AttributeError
    if status == _lib.EUNSUPPORTED:
        return Error
    return ValueError


class _Category:
    """One category of options (Training, Precision, ...) or the top."""

    def __init__(self, owner, name):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_name", name)

    def __getattr__(self, method):
        if method.startswith("__"):
            raise AttributeError(method)
        if method not in valid_names(self._name):
            raise AttributeError(
                "'%s' object has no attribute '%s'. Valid names: %s" %
                (_CLASS_OF[self._name], method,
                 ", ".join(valid_names(self._name))))

        def call(*args, **kwargs):
            self._owner._call(self._name, method, args, kwargs)
            return self
        return call

    def __setattr__(self, name, value):
        raise AttributeError("'%s' object has no attribute '%s'" %
                             (_CLASS_OF[self._name], name))


class _TrainingOptions(_Category):
    @property
    def gradient_accumulation(self):
        return self._owner._get_int("Training.gradientAccumulation")

    @property
    def accumulation_and_replication_reduction_type(self):
        return enums.ReductionType(self._owner._get_int(
            "Training.accumulationAndReplicationReductionType"))


class _DistributedOptions(_Category):
    @property
    def num_processes(self):
        return self._owner._get_int("Distributed.numProcesses")

    @property
    def process_id(self):
        return self._owner._get_int("Distributed.processId")


class _PrecisionOptions(_Category):
    pass


class _TensorLocationOptions(_Category):
    pass


class _JitOptions(_Category):
    pass


class Options(_Category):
    """PopTorch's Options (see the module's doc)."""

    def __init__(self, _handle=None):
        super().__init__(self, "")
        if _handle is None:
            h = ctypes.c_void_p()
            _lib.check(_lib.core.popc_options_new(ctypes.byref(h)), Error)
            _handle = h.value
        object.__setattr__(self, "_handle", _handle)
        object.__setattr__(self, "_strategy", None)
        kinds = {"Training": _TrainingOptions,
                 "Distributed": _DistributedOptions,
                 "Precision": _PrecisionOptions,
                 "TensorLocations": _TensorLocationOptions,
                 "Jit": _JitOptions}
        for cat in _CATEGORIES:
            object.__setattr__(self, cat, kinds[cat](self, cat))

    def __del__(self):
        h = self.__dict__.get("_handle")
        if h:
            _lib.core.popc_options_free(h)
            object.__setattr__(self, "_handle", None)

    # ---- setters ----------------------------------------------------------
    def _call(self, category, method, args, kwargs):
        full = "%s.%s" % (category, method) if category else method
        if method == "setMeanAccumulationAndReplicationReductionStrategy":
            full = "Training.meanAccumulationAndReplicationReductionStrategy"
        if full == "setExecutionStrategy" and args:
            from . import _blocks
            if isinstance(args[0], _blocks.ExecutionStrategy):
                object.__setattr__(self, "_strategy", args[0])
        if kwargs:
            # keyword arguments: the options file syntax carries them
            self._call_text(full, args, kwargs)
            return
        from . import _blocks
        if any(isinstance(a, (TensorLocationSettings,
                              _blocks.ExecutionStrategy)) for a in args):
            self._call_text(full, args, kwargs)
            return
        text = json.dumps({full: [self._json(a) for a in args]})
        st = _lib.core.popc_options_load_json(self._handle, _lib.b(text))
        if st != _lib.OK:
            raise _exception_for(st)(_lib.last_error())

    @staticmethod
    def _json(value):
        if isinstance(value, enum.Enum):
            return "%s.%s" % (type(value).__name__, value.name)
        if isinstance(value, torch.dtype):
            if value in (torch.float, torch.float32):
                return "float"
            if value in (torch.half, torch.float16):
                return "half"
            return str(value)
        if isinstance(value, (list, tuple)):
            return [Options._json(v) for v in value]
        if isinstance(value, dict):
            return {str(k): Options._json(v) for k, v in value.items()}
        return value

    def _call_text(self, full, args, kwargs):
        parts = [_literal(a) for a in args]
        parts += ["%s=%s" % (k, _literal(v)) for k, v in kwargs.items()]
        line = "%s(%s)\n" % (full, ", ".join(parts))
        fd, path = tempfile.mkstemp(prefix="popc-options-", suffix=".txt")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(line)
            st = _lib.core.popc_options_load_file(self._handle,
                                                  _lib.b(path))
            if st != _lib.OK:
                msg = _lib.last_error()
                # the file is ours, not the user's: keep only the reason
                head, sep, rest = msg.partition(": ")
                if " at line 1 of " in head:
                    msg = rest.split("\n> ")[0]
                raise _exception_for(st)(msg)
        finally:
            os.unlink(path)

    # ---- PopTorch's non-setter methods -------------------------------------
    def clone(self):
        h = ctypes.c_void_p()
        _lib.check(_lib.core.popc_options_clone(self._handle,
                                                ctypes.byref(h)), Error)
        out = Options(_handle=h.value)
        object.__setattr__(out, "_strategy", self._strategy)
        return out

    def loadFromFile(self, filepath):
        st = _lib.core.popc_options_load_file(self._handle, _lib.b(filepath))
        if st != _lib.OK:
            raise _exception_for(st)(_lib.last_error())
        return self

    def toDict(self):
        out = {}
        buf = ctypes.create_string_buffer(4096)
        for i in range(_lib.core.popc_options_count()):
            name = _lib.core.popc_options_info(i).contents.name
            if _lib.core.popc_options_format(self._handle, name, buf,
                                             len(buf)):
                out[name.decode()] = buf.value.decode()
        return out

    def defaultOutputMode(self):
        """True while outputMode is Default (All for inference, Final for
        training)."""
        return self._get_int("outputMode") == enums.OutputMode.Default

    def setLogLevel(self, level):
        from . import setLogLevel
        setLogLevel(level)
        return self

    # ---- getters PopTorch's users and DataLoader read ----------------------
    def _get_int(self, name):
        return int(_lib.core.popc_options_get_int(self._handle,
                                                  _lib.b(name)))

    @property
    def device_iterations(self):
        return self._get_int("deviceIterations")

    @property
    def replication_factor(self):
        return self._get_int("replicationFactor")

    @property
    def input_group_size(self):
        return self._get_int("inputReplicaGrouping.size")

    @property
    def output_mode(self):
        return enums.OutputMode(self._get_int("outputMode"))

    @property
    def output_return_period(self):
        return self._get_int("outputReturnPeriod")

    @property
    def connection_type(self):
        return enums.ConnectionType(self._get_int("connectionType"))

    @property
    def random_seed(self):
        return self._get_int("randomSeed")

    def _frozen(self):
        return bool(_lib.core.popc_options_frozen(self._handle))

    def __repr__(self):
        return "Options(%s)" % ", ".join(
            "%s=%s" % kv for kv in self.toDict().items())
