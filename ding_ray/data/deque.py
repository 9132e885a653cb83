"""DI-engine's ``DequeBufferWrapper``: the ``deque`` buffer type most dizoo DQN configs name.
(``DequeBuffer(size)``, the buffer DI-engine's framework scripts build, is ``ding_ray.data.buffer``'s.)"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import merge_config
from ding_ray.data.advanced import AdvancedReplayBuffer
from ding_ray.data.base import IBuffer
from ding_ray.data.columnar import Batch, unstack_batch
from ding_ray.data.monitors import PRIORITY_MAX, PRIORITY_MEAN, SIZE, USE_COUNT_MEAN
from ding_ray.data.ring_buffer import family_config
from ding_ray.utils.registry import BUFFER_REGISTRY


@BUFFER_REGISTRY.register("deque")
class DequeBufferWrapper(IBuffer):
    """Uniform replay by default, prioritized with ``priority=True``, under DI-engine's key names.

    As DI-engine's wrapper (a ``DequeBuffer`` sampled with ``ignore_insufficient``): uniform
    ``sample(n)`` returns None until ``n`` items are held, so the learner trains nothing before,
    and then ``n`` distinct items drawn by Python's ``random.sample``;
    prioritized ``sample(n)`` draws ``n`` items from the priority tree with repeats once any item is
    held. A priority given to ``update`` is capped at ``priority_max_limit``. The storage is an
    ``AdvancedReplayBuffer`` (alpha 0 when uniform), so pushing, sampling and files work as there.
    """

    config = dict(
        type="deque",
        replay_buffer_size=10000,  # capacity in items; when full the oldest item is overwritten
        max_use=float("inf"),  # an item is removed after being sampled this many times
        train_iter_per_log=100,  # learner iterations between two TensorBoard reports
        priority=False,  # prioritized sampling (p ** priority_power_factor) instead of uniform
        priority_IS_weight=False,  # add importance-sampling weights 'IS' to the samples
        priority_power_factor=0.6,  # alpha of prioritized replay
        IS_weight_power_factor=0.4,  # initial beta, annealed to 1
        IS_weight_anneal_train_iter=int(1e5),  # sample calls over which beta reaches 1
        priority_max_limit=1000.0,  # updated priorities are capped at this value
        frame_dedup=True,  # store uint8 (stack, H, W) image stacks (Atari obs) with each frame held once
    )

    def __init__(
        self,
        cfg: Mapping | None = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "buffer",
    ) -> None:
        self._cfg = merge_config(self.default_config(), family_config(type(self), cfg))
        cfg = self._cfg
        self._buffer = AdvancedReplayBuffer(
            dict(
                replay_buffer_size=cfg.replay_buffer_size,
                max_use=cfg.max_use,
                alpha=cfg.priority_power_factor if cfg.priority else 0.0,
                beta=cfg.IS_weight_power_factor,
                anneal_step=cfg.IS_weight_anneal_train_iter,
                frame_dedup=cfg.frame_dedup,
                # uniform: n items held for sample(n); prioritized: the tree draws n from any held
                thruput_controller=dict(sample_min_limit_ratio=0.0 if cfg.priority else 1.0),
            ),
            None,  # the wrapper reports to TensorBoard itself, every train_iter_per_log iterations
            exp_name,
            instance_name,
        )
        self._tb_logger = tb_logger
        # uniform draws come from Python's global generator, as DI-engine's (set_pkg_seed seeds it)
        self._random: Any = random
        self._name = f"{instance_name}_iter"
        self._last_log_iter: int | None = None

    @property
    def cfg(self) -> EasyDict:
        return self._cfg

    def seed(self, seed: int) -> None:
        """Make sampling reproducible (uniform draws then use their own generator, not ``random``'s)."""
        self._buffer.seed(seed)
        self._random = random.Random(seed)

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        if not self._cfg.priority and isinstance(data, (list, tuple)):
            data = [{k: v for k, v in d.items() if k != "priority"} for d in data]
        self._buffer.push(data, cur_collector_envstep)

    def sample(self, size: int, cur_learner_iter: int = 0, columnar: bool = False) -> list | Batch | None:
        """``size`` items, or None while the buffer cannot serve them (see the class docstring)."""
        if self._cfg.priority:
            batch = self._buffer.sample(size, cur_learner_iter, columnar=True)
        else:  # as DI-engine's: distinct items, drawn by Python's random.sample
            batch = self._buffer.sample_held(size, self._random.sample, cur_learner_iter)
        if batch is None:
            return None
        self._maybe_log(batch, cur_learner_iter)
        if not self._cfg.priority_IS_weight:
            del batch["IS"]
        if columnar:
            return batch
        for key in ("priority", "replay_unique_id", "replay_buffer_idx"):
            batch[key] = batch[key].tolist()
        if "IS" in batch:
            batch["IS"] = batch["IS"].tolist()
        return unstack_batch(batch)

    def _maybe_log(self, batch: Batch, train_iter: int) -> None:
        if self._tb_logger is None:
            return
        if (
            self._last_log_iter is not None
            and train_iter - self._last_log_iter < self._cfg.train_iter_per_log
        ):
            return
        self._last_log_iter = train_iter
        scalars = {SIZE: self._buffer.count()}
        if self._cfg.priority:
            scalars[PRIORITY_MEAN] = float(np.mean(batch["priority"]))
            scalars[PRIORITY_MAX] = float(np.max(batch["priority"]))
        if self._cfg.max_use != float("inf"):
            scalars[USE_COUNT_MEAN] = float(self._buffer.stats().get(USE_COUNT_MEAN, 0.0))
        for key, value in scalars.items():
            self._tb_logger.add_scalar(key, value, train_iter)

    def update(self, info: dict) -> None:
        """New priorities of sampled items, capped at ``priority_max_limit`` (uniform: nothing to do)."""
        if not self._cfg.priority or not info:
            return
        info = dict(info)
        info["priority"] = np.minimum(
            np.asarray(info["priority"], dtype=np.float64), self._cfg.priority_max_limit
        )
        self._buffer.update(info)

    def count(self) -> int:
        return self._buffer.count()

    def clear(self) -> None:
        self._buffer.clear()

    def state_dict(self) -> dict:
        return self._buffer.state_dict()

    def load_state_dict(self, _state_dict: dict) -> None:
        self._buffer.load_state_dict(_state_dict)

    @property
    def frame_stores(self) -> list:
        return self._buffer.frame_stores

    def save_data(self, file_name: str) -> None:
        self._buffer.save_data(file_name)

    def load_data(self, file_name: str) -> None:
        self._buffer.load_data(file_name)

    def stats(self) -> dict[str, float]:
        return self._buffer.stats()

    def close(self) -> None:
        self._buffer.close()
