"""The C library through ctypes: libpopc and libpopc-onnx, their status
codes turned into exceptions, and tensors in and out.

Why ctypes: popc's public API is plain C (opaque handles, POD views, status
codes), which ctypes calls directly; the package is then pure Python, needs
no Python headers at build time and works with any python3 the system has.
The cost is per call, and popc's calls are coarse (one run per combined
batch), so it does not show.
"""
import ctypes
import os

import numpy as np

try:
    from . import _paths   # written by make install: where libpopc went
except ImportError:        # the source tree: POPC_LIBRARY_DIR says
    _paths = None

# popc_status (popc/status.h)
OK, ENOMEM, EINVAL, ENOTFOUND, EEXIST, EABI, EPLUGIN, ECONFIG, EBACKEND, \
    ECALLBACK, EIO, ECOMPILE, ESTATE, EUNSUPPORTED, EINTERRUPTED, EINTERNAL, \
    EPERM, EDISTRIBUTED = range(18)

# popc_dtype (popc/types.h)
F32, F16, I32, I64, U8, BOOL, F64, I8, I16, U16, U32, U64, BF16 = range(1, 14)
_NUMPY_OF = {F32: np.float32, F16: np.float16, I32: np.int32, I64: np.int64,
             U8: np.uint8, BOOL: np.bool_, F64: np.float64, I8: np.int8,
             I16: np.int16, U16: np.uint16, U32: np.uint32, U64: np.uint64}
_DTYPE_OF = {np.dtype(v): k for k, v in _NUMPY_OF.items()}

MAX_RANK = 8
LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERR, LOG_OFF = range(6)


class Error(RuntimeError):
    """A popc call failed (poptorch.Error): the text is popc's message,
    .status popc's code (None when Python raised it)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class View(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK),
                ("data", ctypes.c_void_p)]


class Annotations(ctypes.Structure):
    _fields_ = [("scope", ctypes.c_char_p), ("block", ctypes.c_char_p),
                ("ipu", ctypes.c_int), ("stage", ctypes.c_int),
                ("phase", ctypes.c_int), ("recompute", ctypes.c_int),
                ("available_memory", ctypes.c_double)]


class OnnxAnnotation(ctypes.Structure):
    _fields_ = [("prefix", ctypes.c_char_p), ("annot", Annotations)]


class OnnxImportOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("trainable", ctypes.c_int),
                ("registry", ctypes.c_void_p),
                ("n_shapes", ctypes.c_int),
                ("shape_names", ctypes.POINTER(ctypes.c_char_p)),
                ("shapes", ctypes.POINTER(View)),
                ("n_values", ctypes.c_int),
                ("value_names", ctypes.POINTER(ctypes.c_char_p)),
                ("values", ctypes.POINTER(ctypes.c_void_p)),
                ("n_annotations", ctypes.c_int),
                ("annotations", ctypes.POINTER(OnnxAnnotation)),
                ("no_outputs", ctypes.c_int)]


class OptionInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int),
                ("default", ctypes.c_char_p), ("help", ctypes.c_char_p),
                ("values", ctypes.c_char_p), ("supported", ctypes.c_int)]


def _library_dir():
    # POPC_LIBRARY_DIR: the build tree's libraries, for the tests
    return os.environ.get("POPC_LIBRARY_DIR") or (_paths.LIBDIR if _paths
                                                  else "")


def _open(name):
    path = os.path.join(_library_dir(), name)
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "popc: cannot load %s (%s); set POPC_LIBRARY_DIR to the folder "
            "holding libpopc.so.0 and libpopc-onnx.so.0" % (path, e)) from e


_SOVERSION = _paths.SOVERSION if _paths else "0"
core = _open("libpopc.so." + _SOVERSION)
onnx = _open("libpopc-onnx.so." + _SOVERSION)

P = ctypes.c_void_p
S = ctypes.c_char_p
I = ctypes.c_int
PP = ctypes.POINTER(ctypes.c_void_p)

_SIGNATURES = {
    core: {
        "popc_last_error": (S, []),
        "popc_status_name": (S, [I]),
        "popc_log": (None, [I, S, S]),
        "popc_set_error": (I, [I, S, S]),
        "popc_log_level": (I, []),
        "popc_log_set_level": (None, [I]),
        "popc_tensor_from_data": (I, [I, ctypes.POINTER(ctypes.c_int64), I,
                                      P, PP]),
        "popc_tensor_unref": (None, [P]),
        "popc_tensor_ref": (P, [P]),
        "popc_tensor_dtype": (I, [P]),
        "popc_tensor_rank": (I, [P]),
        "popc_tensor_dims": (ctypes.POINTER(ctypes.c_int64), [P]),
        "popc_tensor_nbytes": (ctypes.c_size_t, [P]),
        "popc_tensor_cdata": (P, [P]),
        "popc_graph_free": (None, [P]),
        "popc_graph_n_inputs": (I, [P]),
        "popc_graph_n_outputs": (I, [P]),
        "popc_graph_input": (I, [P, I]),
        "popc_graph_value_name": (S, [P, I]),
        "popc_graph_value_trainable": (I, [P, I]),
        "popc_graph_n_values": (I, [P]),
        "popc_graph_value_kind": (I, [P, I]),
        "popc_options_new": (I, [PP]),
        "popc_options_free": (None, [P]),
        "popc_options_clone": (I, [P, PP]),
        "popc_options_frozen": (I, [P]),
        "popc_options_freeze": (None, [P]),
        "popc_options_set": (I, [P, S, S]),
        "popc_options_load_json": (I, [P, S]),
        "popc_options_load_file": (I, [P, S]),
        "popc_options_format": (S, [P, S, ctypes.c_char_p, ctypes.c_size_t]),
        "popc_options_get_int": (ctypes.c_int64, [P, S]),
        "popc_options_get_string": (S, [P, S]),
        "popc_options_is_set": (I, [P, S]),
        "popc_options_count": (I, []),
        "popc_options_info": (ctypes.POINTER(OptionInfo), [I]),
        "popc_options_find_info": (ctypes.POINTER(OptionInfo), [S]),
        "popc_options_validate": (I, [P, I]),
        "popc_optimizer_new": (I, [S, PP]),
        "popc_optimizer_free": (None, [P]),
        "popc_optimizer_set": (I, [P, S, ctypes.c_double]),
        "popc_optimizer_add_group": (I, [P, S, ctypes.POINTER(I)]),
        "popc_optimizer_set_group": (I, [P, I, S, ctypes.c_double]),
        "popc_optimizer_mark_variable": (I, [P, S]),
        "popc_optimizer_get": (ctypes.c_double, [P, I, S]),
        "popc_model_new_inference": (I, [P, P, PP]),
        "popc_model_new_training": (I, [P, P, P, PP]),
        "popc_model_free": (None, [P]),
        "popc_model_compile": (I, [P, PP, I]),
        "popc_model_is_compiled": (I, [P]),
        "popc_model_run": (I, [P, PP, I, PP, I]),
        "popc_model_destroy": (I, [P]),
        "popc_model_detach_from_device": (I, [P]),
        "popc_model_attach_to_device": (I, [P]),
        "popc_model_is_attached": (I, [P]),
        "popc_model_copy_weights_to_host": (I, [P]),
        "popc_model_copy_weights_to_device": (I, [P]),
        "popc_model_get_weight": (I, [P, S, PP]),
        "popc_model_set_weight": (I, [P, S, P]),
        "popc_model_n_tensors": (I, [P]),
        "popc_model_tensor_name": (S, [P, I]),
        "popc_model_share_weights": (I, [P, P]),
        "popc_model_set_optimizer": (I, [P, P]),
        "popc_model_latency": (None, [P, ctypes.POINTER(ctypes.c_double),
                                      ctypes.POINTER(ctypes.c_double),
                                      ctypes.POINTER(ctypes.c_double)]),
        "popc_model_compilation_time": (ctypes.c_double, [P]),
        "popc_model_steps": (ctypes.c_int64, [P]),
        "popc_model_training": (I, [P]),
        "popc_model_graph": (P, [P]),
        "popc_model_input_info": (I, [P, I, ctypes.POINTER(View)]),
        "popc_model_get_anchored_tensor": (I, [P, S, PP]),
        "popc_model_compile_and_export": (I, [P, PP, I, S]),
        "popc_model_save": (I, [P, S]),
        "popc_load": (I, [S, P, PP]),
        "popc_model_load_executable": (I, [P, S]),
    },
    onnx: {
        "popc_onnx_import_options_init": (None,
                                          [ctypes.POINTER(OnnxImportOptions)]),
        "popc_onnx_import_bytes": (I, [ctypes.c_char_p, ctypes.c_size_t, S, S,
                                       ctypes.POINTER(OnnxImportOptions),
                                       PP]),
    },
}

for _lib, _sigs in _SIGNATURES.items():
    for _name, (_res, _args) in _sigs.items():
        _f = getattr(_lib, _name)
        _f.restype = _res
        _f.argtypes = _args


def b(text):
    return text.encode() if isinstance(text, str) else text


def last_error():
    return core.popc_last_error().decode(errors="replace")


def check(status, exc=None):
    """Raise popc's message for a failed call (exc: the class to raise)."""
    if status != OK:
        message = last_error()
        if exc is not None:
            raise exc(message)
        raise Error(message, status)


def log(level, text):
    core.popc_log(level, b"%s", b(text))


def log_enabled(level):
    return core.popc_log_level() <= level


class Tensor:
    """One reference to a popc_tensor, dropped when this object goes."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if self.handle:
            core.popc_tensor_unref(self.handle)
            self.handle = None


def dtype_of(numpy_dtype):
    """popc's dtype for a NumPy dtype."""
    if np.dtype(numpy_dtype) not in _DTYPE_OF:
        raise TypeError("popc: no popc dtype for %s" % numpy_dtype)
    return _DTYPE_OF[np.dtype(numpy_dtype)]


def view_array(view):
    """A NumPy array over a popc_view's data (no copy; valid while the
    view's owner keeps it)."""
    shape = tuple(view.dims[i] for i in range(view.rank))
    dt = np.dtype(_NUMPY_OF[view.dtype])
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if n == 0:
        return np.zeros(shape, dt)
    buf = (ctypes.c_char * n).from_address(view.data)
    return np.frombuffer(buf, dt).reshape(shape)


def to_popc(array):
    """A new popc tensor holding a copy of array (numpy or torch)."""
    a = np.ascontiguousarray(array)
    if a.dtype not in _DTYPE_OF:
        raise TypeError("popc: no popc dtype for %s" % a.dtype)
    if a.ndim > MAX_RANK:
        raise ValueError("popc: rank %d is over popc's %d" % (a.ndim,
                                                              MAX_RANK))
    dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    out = ctypes.c_void_p()
    check(core.popc_tensor_from_data(_DTYPE_OF[a.dtype], dims, a.ndim,
                                     a.ctypes.data if a.size else None,
                                     ctypes.byref(out)))
    return Tensor(out.value)


def from_popc(handle, owned):
    """A numpy array over a popc tensor's storage, without a copy: the
    array keeps a reference to the tensor (taken here unless owned)."""
    if not owned:
        core.popc_tensor_ref(handle)
    keeper = Tensor(handle)
    dt = core.popc_tensor_dtype(handle)
    if dt not in _NUMPY_OF:
        raise TypeError("popc: no numpy dtype for popc dtype %d" % dt)
    rank = core.popc_tensor_rank(handle)
    dims = core.popc_tensor_dims(handle)
    shape = tuple(dims[i] for i in range(rank))
    nbytes = core.popc_tensor_nbytes(handle)
    if nbytes == 0:
        return np.zeros(shape, dtype=_NUMPY_OF[dt])
    buf = (ctypes.c_char * nbytes).from_address(
        core.popc_tensor_cdata(handle))
    buf._popc_keeper = keeper
    return np.frombuffer(buf, dtype=_NUMPY_OF[dt]).reshape(shape)
