"""popc: PopTorch for C, from Python.

popc.poptorch offers PopTorch's API (trainingModel, inferenceModel,
Options, optimizers, DataLoader, blocks) over popc's C engine; see
docs/python.md.
"""
__version__ = "0.4.0"
