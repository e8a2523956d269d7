"""PopTorch's weight sync on the user's module.

After a training model runs, the trained weights are on the device (in
popc's model). Reading the module's parameters or buffers (an attribute
such as model.fc.weight, parameters(), named_parameters(), buffers(),
named_buffers(), state_dict()) first copies them to the host, once per
run (copyWeightsToHostIfNeeded). Each module of the tree gets a subclass
of its own class that makes these reads call the executor's sync first.
"""
import weakref

_SYNCED = {}
_READERS = ("parameters", "named_parameters", "buffers", "named_buffers",
            "state_dict")


def _reader(base, name):
    original = getattr(base, name)

    def read(self, *args, **kwargs):
        _sync(self)
        return original(self, *args, **kwargs)
    read.__name__ = name
    read.__doc__ = original.__doc__
    return read


def _sync(module):
    ref = module.__dict__.get("_popc_sync")
    executor = ref() if ref is not None else None
    if executor is not None:
        executor.copyWeightsToHostIfNeeded()


def _synced_class(base):
    if base in _SYNCED:
        return _SYNCED[base]
    original_getattr = base.__getattr__

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()) or name in d.get("_buffers", ()):
            _sync(self)
        return original_getattr(self, name)

    attrs = {"__getattr__": __getattr__, "_popc_base_class": base,
             "__module__": base.__module__, "__qualname__": base.__qualname__}
    for name in _READERS:
        attrs[name] = _reader(base, name)
    cls = type(base.__name__, (base,), attrs)
    _SYNCED[base] = cls
    return cls


def install(model, executor):
    """Make reads of model's weights sync from executor first."""
    ref = weakref.ref(executor)
    for m in model.modules():
        m.__dict__["_popc_sync"] = ref
        if "_popc_base_class" not in type(m).__dict__:
            m.__class__ = _synced_class(type(m))


def uninstall(model, executor):
    for m in model.modules():
        ref = m.__dict__.get("_popc_sync")
        if ref is not None and ref() in (executor, None):
            del m.__dict__["_popc_sync"]
            base = type(m).__dict__.get("_popc_base_class")
            if base is not None:
                m.__class__ = base
