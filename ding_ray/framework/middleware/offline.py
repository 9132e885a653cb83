"""Offline RL stages: save collected transitions to a file, and train from a dataset in batches.

A demonstration run collects with an expert and ends with ``offline_data_saver``; an offline run
builds a dataset over that file (``NaiveRLDataset`` or ``HDF5Dataset``) and starts its pipeline
with ``offline_data_fetcher``::

    with Task(OnlineRLContext()) as task:            # collect demonstrations
        task.use(my_collect_stage)                   # writes ctx.trajectories
        task.use(offline_data_saver("expert.msgpack", data_type="naive"))
        task.run(max_step=1)

    with Task(OfflineRLContext()) as task:           # learn from them
        task.use(offline_data_fetcher(cfg, NaiveRLDataset("expert.msgpack")))
        task.use(my_train_stage)                     # reads ctx.train_data
        task.run(max_step=1000)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from easydict import EasyDict
from torch.utils.data import DataLoader, Dataset

from ding_ray.data.columnar import batch_size as columns_size
from ding_ray.errors import ConfigError, DingRayError
from ding_ray.framework.middleware.offline_dataset import check_data_type, import_h5py, save_offline_data


def offline_data_saver(data_path: str, data_type: str = "hdf5") -> Callable:
    """Write the collected transitions to ``data_path`` (replacing the file) and clear them.

    ``data_type``: ``'hdf5'`` (h5py, the ``hdf5`` extra) or ``'naive'``. ding_ray's ``'naive'``
    file is msgpack with a checksummed header, not DI-engine's pickle; read it back with
    ``NaiveRLDataset``. The file goes exactly to ``data_path`` (DI-engine names an HDF5 file
    ``<data_path without .pkl>_demos.hdf5``). Each call writes the current ``ctx.trajectories``,
    so collect everything to save in the iteration that saves it.

    Reads ctx: trajectories.
    Writes ctx: trajectories (set to None once saved).
    """
    check_data_type(data_type)
    if data_type == "hdf5":
        import_h5py()  # a missing extra is reported when the pipeline is built, not after collecting

    def _save(ctx: Any) -> None:
        if not getattr(ctx, "trajectories", None):
            raise DingRayError(
                "offline_data_saver found no ctx.trajectories to save: put a collector stage (one that "
                "writes ctx.trajectories) before it."
            )
        save_offline_data(ctx.trajectories, data_path, data_type)
        ctx.trajectories = None

    return _save


def offline_data_fetcher(cfg: EasyDict, dataset: Dataset, collate_fn: Callable = lambda x: x) -> Callable:
    """Hand out ``dataset`` in shuffled batches of ``cfg.policy.learn.batch_size``, one per iteration.

    When a pass over the dataset ends, ``train_epoch`` grows by one and the next pass starts with
    a new shuffle (the last batch of a pass may be smaller). ``collate_fn`` turns the list of
    items of a batch into ``train_data``; the default keeps the list (the policy collates).
    Shuffling draws from torch's random generator, so ``torch.manual_seed`` repeats a run.

    Reads ctx: train_epoch, trained_env_step (an ``OfflineRLContext``).
    Writes ctx: train_data, train_epoch, trained_env_step (+ the batch's size).
    """
    if len(dataset) == 0:
        raise ConfigError("offline_data_fetcher got an empty dataset: there is nothing to train on.")
    loader = DataLoader(
        dataset, batch_size=int(cfg.policy.learn.batch_size), shuffle=True, collate_fn=collate_fn
    )
    batches = iter(loader)

    def _fetch(ctx: Any) -> None:
        nonlocal batches
        if not hasattr(ctx, "train_epoch"):
            raise DingRayError(
                "offline_data_fetcher counts epochs in ctx.train_epoch: run it with an OfflineRLContext."
            )
        try:
            ctx.train_data = next(batches)
        except StopIteration:
            ctx.train_epoch += 1
            batches = iter(loader)
            ctx.train_data = next(batches)
        ctx.trained_env_step += _size(ctx.train_data)

    return _fetch


def _size(batch: Any) -> int:
    """Items in a batch: a list's length, or the leading axis of a dict of columns."""
    if isinstance(batch, Mapping):
        return columns_size(batch)
    return len(batch)
