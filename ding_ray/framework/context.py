"""Contexts: what the stages of one pipeline iteration hand to each other.

A context lives for one iteration of ``Task.run``; ``renew`` starts the next one with the fields
named by ``keep`` carried over (the counters) and everything else back at its default. Every field
is declared once, here, with its meaning; a stage says in its docstring which ones it reads and
writes. Data fields hold numpy batches or lists of transition dicts, never treetensors.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


@dataclasses.dataclass
class Context:
    """Base of the contexts: an iteration counter and the set of fields kept across iterations."""

    total_step: int = 0  # iterations of the task so far
    _kept_keys: set = dataclasses.field(default_factory=set, repr=False)

    def renew(self) -> Context:
        """A fresh context for the next iteration: kept fields copied, ``total_step`` + 1."""
        new = type(self)()
        new._kept_keys = set(self._kept_keys)
        for key in self._kept_keys:
            setattr(new, key, getattr(self, key))
        new.total_step = self.total_step + 1
        return new

    def keep(self, *keys: str) -> None:
        """Carry these fields over to the next iteration."""
        for key in keys:
            if not hasattr(self, key):
                raise AttributeError(f"{type(self).__name__} has no field '{key}' to keep.")
            self._kept_keys.add(key)

    def has_attr(self, key: str) -> bool:
        return hasattr(self, key)


@dataclasses.dataclass
class OnlineRLContext(Context):
    """One iteration of online RL: collect, push, fetch, train, evaluate."""

    env_step: int = 0  # env steps collected so far (kept)
    env_episode: int = 0  # episodes finished so far (kept)
    train_iter: int = 0  # learner iterations so far (kept)
    train_data: Any = None  # the batch the trainer learns from (list of dicts, Batch, or dict of those)
    train_output: Any = None  # what the learner returned for it (dict, or list of dicts for several steps)
    collect_kwargs: dict = dataclasses.field(default_factory=dict)  # extra kwargs of collect (e.g. eps)
    obs: Any = None  # {env_id: obs} the inferencer acted on
    action: Any = None  # {env_id: action} it chose
    inference_output: Any = None  # {env_id: policy output} of that forward
    trajectories: Any = None  # collected transitions waiting to be pushed
    episodes: Any = None  # collected whole episodes waiting to be pushed
    trajectory_end_idx: list = dataclasses.field(default_factory=list)  # ends of episodes in trajectories
    eval_value: float = -np.inf  # mean return of this iteration's evaluation
    last_eval_iter: int = -1  # train_iter of the last evaluation (kept)
    last_eval_value: float = -np.inf  # its mean return (kept)
    eval_output: dict = dataclasses.field(default_factory=dict)  # the evaluator's episode info
    info_for_logging: dict = dataclasses.field(default_factory=dict)  # extra scalars for the loggers
    wandb_url: str = ""  # the wandb run page, once a wandb logger started one (kept)

    def __post_init__(self) -> None:
        self.keep("env_step", "env_episode", "train_iter", "last_eval_iter", "last_eval_value", "wandb_url")


@dataclasses.dataclass
class OfflineRLContext(Context):
    """One iteration of offline RL: fetch from a dataset, train, evaluate."""

    trained_env_step: int = 0  # transitions trained on so far (kept)
    train_epoch: int = 0  # passes over the dataset so far (kept)
    train_iter: int = 0  # learner iterations so far (kept)
    train_data: Any = None  # the batch the trainer learns from
    train_output: Any = None  # what the learner returned for it
    eval_value: float = -np.inf  # mean return of this iteration's evaluation
    last_eval_iter: int = -1  # train_iter of the last evaluation (kept)
    last_eval_value: float = -np.inf  # its mean return (kept)
    eval_output: dict = dataclasses.field(default_factory=dict)  # the evaluator's episode info
    info_for_logging: dict = dataclasses.field(default_factory=dict)  # extra scalars for the loggers
    wandb_url: str = ""  # (kept)

    def __post_init__(self) -> None:
        self.keep(
            "trained_env_step", "train_epoch", "train_iter", "last_eval_iter", "last_eval_value", "wandb_url"
        )
