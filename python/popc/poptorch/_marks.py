"""Marks that tracing leaves in ONNX node names, turned into popc
annotations after import.

torch.onnx.export names every node after the tracing scopes it was made
in ("/encoder/layer1/Gemm"). A block, a serialized MatMul or an
available-memory setting pushes a scope "__popc_mark_<n>" while tracing;
after popc imports the model, apply() walks the graph's nodes in order and
gives each the annotations its marks (and the block before it) call for,
through popc's graph API.
"""
import contextlib
import ctypes

import torch

from .. import _lib
from ._errors import Error

_PREFIX = "__popc_mark_"
_marks = []


class Block:
    def __init__(self, user_id, ipu_id):
        self.user_id = user_id
        self.ipu_id = ipu_id


class SerializedMatMul:
    MODES = {"input_channels": 1, "reducing_dim": 2, "output_channels": 3}

    def __init__(self, mode, factor, keep_precision):
        self.mode = self.MODES[mode.value]
        self.factor = factor
        self.keep_precision = keep_precision


class Overlap:
    """set_overlap_for_input / _output: the marked Identity becomes popc's
    overlapped host copy (attribute __overlap_input or __overlap_output,
    popc/attrs.h)."""

    def __init__(self, attr, mode):
        self.attr = attr
        self.mode = mode


class MultiConv:
    """The convolutions of one `with poptorch.MultiConv()` scope and its
    settings (popc/attrs.h's __multiconv attributes)."""

    def __init__(self, settings):
        self.settings = settings
        self.convs = []


class AvailableMemory:
    def __init__(self, proportion):
        self.proportion = proportion


def reset():
    del _marks[:]


def push(mark):
    """Push mark's scope when tracing; returns whether it did."""
    state = torch._C._get_tracing_state()
    if state is None:
        return False
    _marks.append(mark)
    state.push_scope("popc::%s%d" % (_PREFIX, len(_marks) - 1))
    return True


def pop():
    torch._C._get_tracing_state().pop_scope()


@contextlib.contextmanager
def scope(mark):
    pushed = push(mark)
    try:
        yield
    finally:
        if pushed:
            pop()


def _marks_of(name):
    out = []
    for seg in name.split("/"):
        if seg.startswith(_PREFIX):
            idx = seg[len(_PREFIX):]
            if idx.isdigit() and int(idx) < len(_marks):
                out.append(_marks[int(idx)])
    return out


class _Attr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int),
                ("i", ctypes.c_int64), ("f", ctypes.c_double),
                ("s", ctypes.c_char_p), ("n", ctypes.c_int64),
                ("ints", ctypes.c_void_p), ("floats", ctypes.c_void_p),
                ("strings", ctypes.c_void_p), ("tensor", ctypes.c_void_p),
                ("graph", ctypes.c_void_p)]


_ATTR_INT = 1
_core = _lib.core
_sigs = {
    "popc_graph_set_node_attr": (ctypes.c_int, [ctypes.c_void_p,
                                                ctypes.c_int,
                                                ctypes.POINTER(_Attr)]),
    "popc_graph_n_nodes": (ctypes.c_int, [ctypes.c_void_p]),
    "popc_graph_node_name": (ctypes.c_char_p, [ctypes.c_void_p,
                                               ctypes.c_int]),
    "popc_graph_node_op": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]),
    "popc_graph_node_input": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                             ctypes.c_int]),
    "popc_graph_value_producer": (ctypes.c_int, [ctypes.c_void_p,
                                                 ctypes.c_int]),
    "popc_graph_node_annotations": (_lib.Annotations, [ctypes.c_void_p,
                                                       ctypes.c_int]),
    "popc_graph_set_node_annotations": (
        ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                       ctypes.POINTER(_lib.Annotations)]),
    "popc_serialize_matmul_node": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
        ctypes.c_int]),
}
for _n, (_r, _a) in _sigs.items():
    getattr(_core, _n).restype = _r
    getattr(_core, _n).argtypes = _a


_ATTR_FLOAT, _ATTR_STRING = 2, 3


def _set(graph, node, name, value):
    if isinstance(value, float):
        attr = _Attr(name=name.encode(), type=_ATTR_FLOAT, f=value)
    elif isinstance(value, str):
        attr = _Attr(name=name.encode(), type=_ATTR_STRING,
                     s=value.encode())
    else:
        attr = _Attr(name=name.encode(), type=_ATTR_INT, i=int(value))
    _lib.check(_core.popc_graph_set_node_attr(graph, node,
                                              ctypes.byref(attr)), Error)


def _multiconv(graph, node, i, group, s, memory):
    def each(value):
        return value[i] if isinstance(value, (list, tuple)) else value
    _set(graph, node, "__multiconv", group)
    _set(graph, node, "__multiconv_plan", s["plan"])
    _set(graph, node, "__multiconv_reserved_tiles", s["reserved"])
    _set(graph, node, "__multiconv_cycle_back_off", float(s["back_off"]))
    if s["dithering"] is not None:
        _set(graph, node, "__conv_dithering", int(bool(each(s["dithering"]))))
    if s["partials"] is not None:
        _set(graph, node, "partials_type", each(s["partials"]))
    if s["memory"] is not None:
        memory[node] = float(each(s["memory"]))


def apply(graph, stages):
    """Annotate graph's nodes from the marks in their names; stages maps
    a block's user id to ("stage" or "phase", index, ipu or None) when
    the execution strategy lists stages or phases. Returns the number of
    nodes annotated."""
    n_nodes = _core.popc_graph_n_nodes(graph)
    current = None
    changed = 0
    memory = {}
    for node in range(n_nodes):
        name = (_core.popc_graph_node_name(graph, node) or b"").decode()
        marks = _marks_of(name)
        blocks = [m for m in marks if isinstance(m, Block)]
        if blocks:
            current = blocks[-1]
        for m in marks:
            if isinstance(m, SerializedMatMul) and \
                    _core.popc_graph_node_op(graph, node) in (b"MatMul",
                                                              b"Gemm"):
                _lib.check(_core.popc_serialize_matmul_node(
                    graph, node, m.mode, m.factor, int(m.keep_precision)),
                    Error)
                changed += 1
            elif isinstance(m, Overlap) and \
                    _core.popc_graph_node_op(graph, node) == b"Identity":
                attr = _Attr(name=m.attr.encode(), type=_ATTR_INT, i=m.mode)
                _lib.check(_core.popc_graph_set_node_attr(
                    graph, node, ctypes.byref(attr)), Error)
                changed += 1
            elif isinstance(m, AvailableMemory) and \
                    _core.popc_graph_node_op(graph, node) == b"Identity":
                value = _core.popc_graph_node_input(graph, node, 0)
                producer = _core.popc_graph_value_producer(graph, value)
                if producer >= 0:
                    memory[producer] = m.proportion
            if isinstance(m, MultiConv) and \
                    _core.popc_graph_node_op(graph, node) == b"Conv":
                m.convs.append(node)
        if current is None:
            continue
        a = _core.popc_graph_node_annotations(graph, node)
        block_id = current.user_id
        keep = [block_id.encode()]
        a.block = keep[0]
        a.ipu = -1 if current.ipu_id is None else int(current.ipu_id)
        if block_id in stages:
            field, index, ipu = stages[block_id]
            setattr(a, field, index)
            if ipu is not None:
                a.ipu = ipu
        _lib.check(_core.popc_graph_set_node_annotations(
            graph, node, ctypes.byref(a)), Error)
        changed += 1
    group = 0
    for m in _marks:
        if isinstance(m, MultiConv) and m.convs:
            group += 1
            for i, node in enumerate(m.convs):
                _multiconv(graph, node, i, group, m.settings, memory)
                changed += 1
    for node, proportion in memory.items():
        a = _core.popc_graph_node_annotations(graph, node)
        a.available_memory = proportion
        _lib.check(_core.popc_graph_set_node_annotations(
            graph, node, ctypes.byref(a)), Error)
        changed += 1
    return changed
