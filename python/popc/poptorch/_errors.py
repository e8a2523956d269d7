"""PopTorch's exception classes. poptorch.Error is the binding's error of
a failed popc call, so every engine error is one."""
from .._lib import Error


class RecoverableError(Error):
    pass


class UnrecoverableError(Error):
    pass


class ConfigFileError(Error):
    pass
