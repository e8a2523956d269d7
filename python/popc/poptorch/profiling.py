"""poptorch.profiling: PopVision's trace channels, which popc does not
have (its profiles come from Options.enableProfiling, docs/architecture.md)."""


class Channel:
    def __init__(self, name):
        raise NotImplementedError(
            "popc.poptorch.profiling.Channel is not supported yet: popc has "
            "no PopVision trace channels; use Options.enableProfiling(dir) "
            "for popc's profile report")
