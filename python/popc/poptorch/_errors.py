"""PopTorch's exception classes."""


class Error(RuntimeError):
    """poptorch.Error: an error of the engine (popc's message)."""


class RecoverableError(Error):
    pass


class UnrecoverableError(Error):
    pass


class ConfigFileError(Error):
    pass
