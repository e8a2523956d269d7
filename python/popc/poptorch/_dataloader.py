"""poptorch.DataLoader: torch's DataLoader whose batches are combined
batches, batch_size x deviceIterations x (replicationFactor /
inputReplicaGrouping size) x gradientAccumulation samples (docs/semantics.md
§0), as the model's runs take them. The asynchronous modes load ahead in
a background thread (AsynchronousDataAccessor)."""
import queue
import threading

import torch

from .enums import DataLoaderMode
from ._options import Options


def _combined(options):
    return (options.device_iterations *
            (options.replication_factor // max(options.input_group_size, 1))
            * options.Training.gradient_accumulation)


class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, options, dataset, batch_size=1, shuffle=None,
                 num_workers=0, drop_last=True, persistent_workers=None,
                 auto_distributed_partitioning=True,
                 mode=DataLoaderMode.Sync, async_options=None,
                 rebatched_worker_size=None, batch_sampler=None, **kwargs):
        if not isinstance(options, Options):
            raise TypeError("Invalid type: 'options' is of type %s "
                            "(Expected poptorch.Options)" %
                            type(options).__name__)
        if batch_sampler is not None:
            raise ValueError("popc.poptorch.DataLoader: batch_sampler is not "
                             "supported yet; give batch_size")
        if isinstance(dataset, torch.utils.data.IterableDataset):
            raise ValueError("popc.poptorch.DataLoader: iterable datasets "
                             "are not supported yet")
        if rebatched_worker_size is not None:
            raise ValueError("popc.poptorch.DataLoader: rebatched_worker_size "
                             "is not supported yet")
        if options.Distributed.num_processes > 1:
            raise ValueError("popc.poptorch.DataLoader: distributed runs "
                             "(Distributed.numProcesses > 1) are not "
                             "supported yet from Python; use popc launch "
                             "with a run file (docs/distributed.md)")
        if not isinstance(mode, DataLoaderMode):
            raise ValueError("mode must be a poptorch.DataLoaderMode")
        self._combined_batch_size = batch_size * _combined(options)
        self.options = options
        self.mode = mode
        self._async_options = dict(async_options or {})
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        super().__init__(dataset, batch_size=self._combined_batch_size,
                         shuffle=bool(shuffle), num_workers=num_workers,
                         drop_last=drop_last,
                         persistent_workers=persistent_workers, **kwargs)

    @property
    def combinedBatchSize(self):
        return self._combined_batch_size

    def __iter__(self):
        if self.mode == DataLoaderMode.Sync:
            return super().__iter__()
        return iter(AsynchronousDataAccessor(
            _Reiterable(super().__iter__), **self._async_options))


class _Reiterable:
    def __init__(self, make):
        self._make = make

    def __iter__(self):
        return self._make()


class AsynchronousDataAccessor:
    """poptorch.AsynchronousDataAccessor: loads up to buffer_size batches
    ahead in a thread while the model runs."""

    def __init__(self, dataset, buffer_size=3, miss_sleep_time_in_ms=0.1,
                 load_indefinitely=True, early_preload=False,
                 sharing_strategy=None, rebatched_size=None):
        if buffer_size < 1:
            raise ValueError("buffer_size must be >= 1")
        if rebatched_size is not None:
            raise ValueError("popc.poptorch: rebatched_size is not "
                             "supported yet")
        self._source = dataset
        self._size = buffer_size

    def __len__(self):
        return len(self._source)

    def __iter__(self):
        q = queue.Queue(self._size)
        done = object()
        stop = threading.Event()

        def load():
            try:
                for item in self._source:
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(done)
            except BaseException as e:  # handed to the consumer
                q.put(e)

        worker = threading.Thread(target=load, daemon=True)
        worker.start()
        try:
            while True:
                item = q.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()

    def terminate(self):
        pass
