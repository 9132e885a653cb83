"""``BaseLearner``: trains a policy's learn mode one batch at a time, with hooks around each step."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

from ding_ray.config.merge import EXTRA_ENTRIES, checked_config, default_config_of
from ding_ray.utils.registry import LEARNER_REGISTRY
from ding_ray.worker import metrics
from ding_ray.worker.learner.hook_config import add_learner_hook, build_learner_hook_by_cfg, check_hook_entry
from ding_ray.worker.learner.hooks import POSITIONS, LearnerHook
from ding_ray.worker.learner.log_buffer import LogBuffer

logger = logging.getLogger(__name__)


class CountVar:
    """A counter object shared by reference (the learner's ``last_iter``)."""

    def __init__(self, init_val: int = 0) -> None:
        self.val = init_val

    def update(self, val: int) -> None:
        self.val = val

    def add(self, n: int = 1) -> None:
        self.val += n


@LEARNER_REGISTRY.register("base")
class BaseLearner:
    """The calling loop::

    learner.call_hook('before_run')
    for data in batches:
        learner.train(data, envstep)          # before_iter hooks, policy.forward, after_iter hooks
        buffer.update(learner.priority_info)  # when the policy reports priorities
    learner.call_hook('after_run')
    """

    config = dict(
        type="base",
        train_iterations=int(1e9),  # stop after this many iterations (parallel loops)
        dataloader=dict(num_workers=0),  # kept for DI-engine configs
        log_policy=True,  # log the policy's description (policy.info()) when the learner gets it
        hook=dict(
            load_ckpt_before_run="",  # checkpoint to load before training ('' for none)
            log_show_after_iter=100,  # iterations between log lines / TensorBoard points
            save_ckpt_after_iter=10000,  # iterations between checkpoints
            save_ckpt_after_run=True,  # save ckpt_final.pth.tar when the run ends
            # also accepted: log_reduce_after_iter=True, and long-form entries under any name,
            # dict(name=..., type=..., priority=..., position=..., ext_args=dict(...))
            **{EXTRA_ENTRIES: check_hook_entry},
        ),
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def __init__(
        self,
        cfg: dict,
        policy: Any = None,
        tb_logger: Any = None,
        dist_info: tuple[int, int] | None = None,
        exp_name: str = "default_experiment",
        instance_name: str = "learner",
    ) -> None:
        cfg = checked_config(type(self), cfg, "policy.learn.learner")
        self._cfg = cfg
        self._exp_name, self._instance_name = exp_name, instance_name
        self._tb_logger = tb_logger
        self._dist_info = dist_info  # None: the torch.distributed process group's, when asked
        self._last_iter = CountVar(0)
        self._collector_envstep = 0
        self._priority_info: dict[str, Any] | None = None
        self._polled: list[dict[str, Any]] | None = None  # submit's output until poll takes it
        self._log_buffer = LogBuffer()
        hook_cfg = dict(cfg.hook or {})
        if self.world_size > 1:  # as DI-engine: several learners average what they log
            hook_cfg["log_reduce_after_iter"] = True
        self._hooks = build_learner_hook_by_cfg(hook_cfg)
        self._policy = None
        if policy is not None:
            self.policy = policy
        self._ckpt_dir = os.path.join(exp_name, "ckpt")
        self._start_time = time.perf_counter()
        self._iters_at_start = 0

    # ----- hooks -------------------------------------------------------------------------------
    def register_hook(self, hook: LearnerHook) -> None:
        add_learner_hook(self._hooks, hook)

    def call_hook(self, name: str) -> None:
        if name not in POSITIONS:
            raise ValueError(f"Hook position '{name}' unknown; choose from {list(POSITIONS)}.")
        if name == "before_run":
            self._start_time, self._iters_at_start = time.perf_counter(), self._last_iter.val
        for hook in self._hooks[name]:
            hook(self)
        if name == "after_run" and self._tb_logger is not None:
            self._tb_logger.flush()

    # ----- training ----------------------------------------------------------------------------
    def train(self, data: Any, envstep: int = -1, policy_kwargs: dict | None = None) -> list[dict[str, Any]]:
        """Train on ``data`` (a list of samples or a columnar batch) with one call of the policy's
        learn forward; one iteration per gradient step it reports.

        As DI-engine's learner: a forward returning a list of log dicts (PPO: one per minibatch per
        epoch) made that many gradient steps, a dict one. ``before_iter`` hooks run once per call;
        per step, its values enter the log buffer, the ``after_iter`` hooks run (they see the
        iteration count before that step: 0 on the very first) and ``last_iter`` goes up by one.
        Returns the list of the steps' log dicts.
        """
        self._collector_envstep = envstep
        self.call_hook("before_iter")
        log_vars = self._policy.forward(data, **(policy_kwargs or {}))
        steps = log_vars if isinstance(log_vars, list) else [log_vars]
        priority = steps[-1].pop("priority", None) if steps else None
        self._priority_info = None if priority is None else self._priority_of(data, priority)
        for step in steps:
            self._log_buffer.update(step)
            self.call_hook("after_iter")
            self._last_iter.add(1)
        return steps

    def submit(self, data: Any, envstep: int = -1) -> None:
        """``train`` now (the ``Learner`` protocol of the Task stages); ``poll`` hands over its output."""
        self._polled = self.train(data, envstep)

    def poll(self) -> list[dict[str, Any]] | None:
        out, self._polled = self._polled, None
        return out

    @property
    def pending(self) -> bool:
        return self._polled is not None

    @staticmethod
    def _priority_of(data: Any, priority: Any) -> dict[str, Any]:
        if isinstance(data, Mapping):
            return {
                "replay_unique_id": data.get("replay_unique_id"),
                "replay_buffer_idx": data.get("replay_buffer_idx"),
                "priority": np.asarray(priority),
            }
        return {
            "replay_unique_id": [d.get("replay_unique_id") for d in data],
            "replay_buffer_idx": [d.get("replay_buffer_idx") for d in data],
            "priority": np.asarray(priority),
        }

    def save_checkpoint(self, ckpt_name: str | None = None) -> str:
        """Write the policy's learn state, the iteration count (``last_iter``) and the collector's
        env step count (``last_step``, DI-engine's key) to ``<exp_name>/ckpt/``."""
        os.makedirs(self._ckpt_dir, exist_ok=True)
        name = ckpt_name or f"iteration_{self._last_iter.val}.pth.tar"
        path = os.path.join(self._ckpt_dir, name)
        state = dict(self._policy.state_dict())
        state["last_iter"] = self._last_iter.val
        state["last_step"] = self._collector_envstep
        tmp = path + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, path)  # a reader never sees half a checkpoint
        return path

    def info(self, s: str) -> None:
        logger.info("[%s] %s", self._instance_name, s)

    def close(self) -> None:
        if self._tb_logger is not None:
            self._tb_logger.flush()

    def throughput(self) -> dict[str, float]:
        """Iterations per second since ``before_run``."""
        seconds = max(time.perf_counter() - self._start_time, 1e-9)
        return {metrics.LEARNER_ITERS_PER_S: (self._last_iter.val - self._iters_at_start) / seconds}

    # ----- properties --------------------------------------------------------------------------
    @property
    def policy(self) -> Any:
        return self._policy

    @policy.setter
    def policy(self, policy: Any) -> None:
        self._policy = policy
        if self._cfg.log_policy and hasattr(policy, "info"):
            self.info(str(policy.info()))

    @property
    def last_iter(self) -> CountVar:
        return self._last_iter

    @property
    def train_iter(self) -> int:
        return self._last_iter.val

    @property
    def priority_info(self) -> dict[str, Any] | None:
        return self._priority_info

    @property
    def learn_info(self) -> dict[str, Any]:
        return {"learner_step": self._last_iter.val, "priority_info": self._priority_info}

    @property
    def collector_envstep(self) -> int:
        return self._collector_envstep

    @collector_envstep.setter
    def collector_envstep(self, value: int) -> None:
        self._collector_envstep = value

    @property
    def tb_logger(self) -> Any:
        return self._tb_logger

    @property
    def log_buffer(self) -> LogBuffer:
        return self._log_buffer

    @property
    def hooks(self) -> dict[str, list[LearnerHook]]:
        return self._hooks

    @property
    def exp_name(self) -> str:
        return self._exp_name

    @property
    def instance_name(self) -> str:
        return self._instance_name

    @property
    def rank(self) -> int:
        """This learner's rank: ``dist_info``'s, else that of the process group it is in now (a
        learner-group member joins its group after its learner is built)."""
        return (self._dist_info or _torch_dist_info())[0]

    @property
    def world_size(self) -> int:
        return (self._dist_info or _torch_dist_info())[1]


def _torch_dist_info() -> tuple[int, int]:
    """(rank, world size) of the torch.distributed process group, (0, 1) without one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def create_learner(cfg: dict, **kwargs: Any) -> BaseLearner:
    return LEARNER_REGISTRY.build(cfg.get("type", "base"), cfg=cfg, **kwargs)
