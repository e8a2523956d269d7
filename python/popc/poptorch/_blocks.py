"""Placement: Block, BeginBlock, BlockFunction, Stage, the execution
strategies. Blocks become popc's block/IPU/stage annotations on the nodes
traced inside them (_marks.py); a strategy sets popc's
setExecutionStrategy option and, when it lists stages, their block ids.
"""
import functools

import torch

from . import _marks
from .enums import AutoStage, Liveness

_auto_id = [0]


def _next_id(user_id):
    if user_id is None:
        user_id = str(_auto_id[0])
        _auto_id[0] += 1
    return str(user_id)


class Block:
    """poptorch.Block: `with poptorch.Block("B1", ipu_id=1):` places the
    ops traced inside (and those after it, until the next block) in block
    B1 on IPU 1."""

    def __init__(self, user_id=None, ipu_id=None):
        self.user_id = _next_id(user_id)
        self.ipu_id = ipu_id
        self._pushed = False

    def __enter__(self):
        self._pushed = _marks.push(_marks.Block(self.user_id, self.ipu_id))
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _marks.pop()
        return False

    @staticmethod
    def useAutoId():
        _auto_id[0] = 0

    @staticmethod
    def start(user_id=None, ipu_id=None):
        raise NotImplementedError(
            "popc.poptorch.Block.start is not supported yet: use `with "
            "poptorch.Block(...)` or poptorch.BeginBlock")


def _pre_hook(module, inputs):
    spec = module.__dict__["_popc_begin_block"]
    spec["pushed"] = _marks.push(_marks.Block(spec["user_id"],
                                              spec["ipu_id"]))


def _post_hook(module, inputs, output):
    spec = module.__dict__["_popc_begin_block"]
    if spec.pop("pushed", False):
        _marks.pop()


def BeginBlock(layer_to_call, user_id=None, ipu_id=None):
    """poptorch.BeginBlock: a new block starts at this module; the module
    and everything traced after it belong to the block until the next."""
    if not isinstance(layer_to_call, torch.nn.Module):
        raise ValueError("BeginBlock: layer_to_call must be a "
                         "torch.nn.Module (got %s); use BlockFunction for "
                         "functions" % type(layer_to_call).__name__)
    removeBlocks(layer_to_call, recurse=False)
    layer_to_call.__dict__["_popc_begin_block"] = {
        "user_id": _next_id(user_id), "ipu_id": ipu_id,
        "handles": [layer_to_call.register_forward_pre_hook(_pre_hook),
                    layer_to_call.register_forward_hook(_post_hook)]}
    return layer_to_call


def BlockFunction(user_id=None, ipu_id=None):
    """poptorch.BlockFunction: a decorator running the function in a
    Block."""
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with Block(user_id, ipu_id):
                return fn(*args, **kwargs)
        return wrapper
    return decorator


def removeBlocks(module, recurse=True):
    """poptorch.removeBlocks: drop BeginBlock from module (and its
    submodules)."""
    for m in (module.modules() if recurse else [module]):
        spec = m.__dict__.pop("_popc_begin_block", None)
        if spec:
            for h in spec["handles"]:
                h.remove()


class Stage:
    """poptorch.Stage: the blocks of one pipeline stage."""

    def __init__(self, *block_ids):
        self.blocks = [str(b) for b in block_ids]
        self._ipu = None

    def ipu(self, ipu):
        self._ipu = int(ipu)
        return self

    @property
    def _ipu_id(self):
        return self._ipu


class Phase:
    def __init__(self, *arg):
        self.stages = [a if isinstance(a, Stage) else Stage(a) for a in arg]

    def ipus(self, *ipus):
        for s, i in zip(self.stages, ipus):
            s.ipu(i)
        return self


class ExecutionStrategy:
    """The execution strategies: their popc option value, and the stage of
    each listed block (applied as node annotations)."""

    _name = None

    def __init__(self, *args):
        self.auto_stage = AutoStage.SameAsIpu
        self.stages = []
        for a in args:
            if isinstance(a, AutoStage):
                self.auto_stage = a
            elif isinstance(a, Stage):
                self.stages.append(a)
            elif isinstance(a, (str, int)):
                self.stages.append(Stage(a))
            elif isinstance(a, (list, tuple)):
                self.stages.append(Stage(*a))
            else:
                raise ValueError("%s: expected poptorch.Stage, a block id or "
                                 "poptorch.AutoStage, got %r" %
                                 (type(self).__name__, a))
        self._calls = []

    def stage_map(self):
        out = {}
        for i, s in enumerate(self.stages):
            for b in s.blocks:
                out[b] = ("stage", i, s._ipu)
        return out

    def _text(self):
        arg = ("poptorch.AutoStage.%s" % self.auto_stage.name
               if not self.stages else "")
        return "poptorch.%s(%s)%s" % (type(self).__name__, arg, "".join(
            ".%s(%s)" % (n, v) for n, v in self._calls))


class PipelinedExecution(ExecutionStrategy):
    pass


class ShardedExecution(ExecutionStrategy):
    pass


class _PhasedExecution(ExecutionStrategy):
    def __init__(self, *phases):
        super().__init__()
        self.phases = [p if isinstance(p, Phase) else Phase(p)
                       for p in phases]

    def stage_map(self):
        out = {}
        for i, p in enumerate(self.phases):
            for s in p.stages:
                for b in s.blocks:
                    out[b] = ("phase", i, s._ipu)
        return out

    def _text(self):
        return "poptorch.%s()%s" % (type(self).__name__, "".join(
            ".%s(%s)" % (n, v) for n, v in self._calls))

    def useSeparateBackwardPhase(self, use=True):
        self._calls.append(("useSeparateBackwardPhase", repr(bool(use))))
        return self


class SerialPhasedExecution(_PhasedExecution):
    def setTensorsLiveness(self, liveness):
        if not isinstance(liveness, Liveness):
            raise ValueError("setTensorsLiveness: expected a "
                             "poptorch.Liveness")
        self._calls.append(("setTensorsLiveness",
                            "poptorch.Liveness.%s" % liveness.name))
        return self


class ParallelPhasedExecution(_PhasedExecution):
    def sendTensorsOffChipAfterFwd(self, off_chip=True):
        self._calls.append(("sendTensorsOffChipAfterFwd",
                            repr(bool(off_chip))))
        return self
