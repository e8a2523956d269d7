"""popc.poptorch: PopTorch's Python API on popc's engine.

    import popc.poptorch as poptorch

Models are traced with torch.onnx.export, imported into popc and compiled
and run by popc's C library; see docs/python.md for what is supported and
how each API maps onto popc.
"""
import torch

from .. import _lib
from ._errors import Error, RecoverableError, UnrecoverableError, \
    ConfigFileError
from .enums import (OutputMode, ConnectionType, ReductionType,
                    MeanReductionStrategy, SyncPattern, AutoStage, Liveness,
                    CommGroupType, VariableRetrievalMode, DataLoaderMode,
                    SharingStrategy, OverlapMode, MatMulSerializationMode,
                    MultiConvPlanType, HalfFloatCastingBehavior)
from ._options import Options, TensorLocationSettings
from ._executor import PoplarExecutor, trainingModel, inferenceModel, load
from ._dataloader import DataLoader, AsynchronousDataAccessor
from ._blocks import (Block, BeginBlock, BlockFunction, removeBlocks, Stage,
                      Phase, PipelinedExecution, ShardedExecution,
                      SerialPhasedExecution, ParallelPhasedExecution)
from ._ops import (identity_loss, ipu_print_tensor, nop,
                   recomputationCheckpoint, set_available_memory,
                   serializedMatMul, dynamic_slice, for_loop, custom_op,
                   NameScope, ctc_beam_search_decoder, set_overlap_for_input,
                   set_overlap_for_output, MultiConv, CPU)
from . import optim
from . import _options as options
from . import profiling

__version__ = "3.3.0+popc"

_LEVELS = {"TRACE": _lib.LOG_TRACE, "TRACE_ALL": _lib.LOG_TRACE,
           "DEBUG": _lib.LOG_DEBUG, "DEBUG_IR": _lib.LOG_DEBUG,
           "INFO": _lib.LOG_INFO, "WARN": _lib.LOG_WARN,
           "ERR": _lib.LOG_ERR, "OFF": _lib.LOG_OFF}


def setLogLevel(level):
    """poptorch.setLogLevel: popc's log level (a name or 0..5)."""
    if isinstance(level, str):
        if level.upper() not in _LEVELS:
            raise ValueError("Unknown log level '%s'. Valid values are %s" %
                             (level, ", ".join(_LEVELS)))
        level = _LEVELS[level.upper()]
    _lib.core.popc_log_set_level(int(level))


def isRunningOnIpu():
    """True while popc traces a model (PopTorch: while tracing for the
    IPU)."""
    return torch._C._get_tracing_state() is not None


def ipuHardwareIsAvailable(num_ipus=1):
    """There is no IPU hardware: popc's backends stand in for it."""
    return False


def ipuHardwareVersion():
    """The IPU version popc's default options model (Options.ipuVersion)."""
    return int(_lib.core.popc_options_get_int(
        Options()._handle, b"ipuVersion"))
