"""``BaseSerialCommander``: adjusts collect settings from the run's state (e.g. epsilon by env step)."""

from __future__ import annotations

from typing import Any

from easydict import EasyDict

from ding_ray.config.compile import COMMANDER_CONFIG
from ding_ray.config.merge import default_config_of
from ding_ray.rl_utils import get_epsilon_greedy_fn


class BaseSerialCommander:
    """``step()`` returns the collect kwargs for the next ``collector.collect`` call.

    Policies with a ``command_mode`` decide themselves; otherwise an ``eps`` schedule from
    ``policy.other.eps`` is applied when the config has one.
    """

    config = COMMANDER_CONFIG

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def __init__(
        self, cfg: dict, learner: Any, collector: Any, evaluator: Any, replay_buffer: Any, policy: Any = None
    ):
        self._cfg = EasyDict(cfg or {})
        self._learner, self._collector = learner, collector
        self._evaluator, self._replay_buffer = evaluator, replay_buffer
        self._policy = policy
        eps = self._cfg.get("eps")
        self._eps_fn = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type) if eps else None

    @property
    def policy(self) -> Any:
        return self._policy

    def step(self) -> dict[str, Any]:
        info = {"learner_train_iter": self._learner.train_iter, "collector_envstep": self._collector.envstep}
        if self._policy is not None and hasattr(self._policy, "get_setting_collect"):
            return self._policy.get_setting_collect(info)
        if self._eps_fn is not None:
            return {"eps": self._eps_fn(self._collector.envstep)}
        return {}
