"""``VectorEvalMonitor``: spread evaluation episodes evenly over envs so short episodes don't dominate."""

from __future__ import annotations

from typing import Any

import numpy as np


class VectorEvalMonitor:
    """Env i runs ``n_episode // env_num`` episodes, the first ``n_episode % env_num`` one more.

    Without a fixed quota per env, envs with short episodes finish more of them first and the
    mean return is biased low; with it, every env contributes its share whatever its episode length.
    """

    def __init__(self, env_num: int, n_episode: int) -> None:
        if n_episode < 1:
            raise ValueError(f"n_episode must be >= 1, got {n_episode}")
        base, extra = divmod(n_episode, env_num)
        self._quota = [base + (1 if i < extra else 0) for i in range(env_num)]
        self._returns: list[list[float]] = [[] for _ in range(env_num)]
        self._infos: list[list[dict]] = [[] for _ in range(env_num)]
        self._latest_reward: dict[int, float] = {}

    @property
    def quota(self) -> list[int]:
        return list(self._quota)

    def needs_episode(self, env_id: int) -> bool:
        return len(self._returns[env_id]) < self._quota[env_id]

    def is_finished(self) -> bool:
        return all(len(r) >= q for r, q in zip(self._returns, self._quota))

    def update_info(self, env_id: int, info: dict[str, Any]) -> None:
        if self.needs_episode(env_id) or len(self._infos[env_id]) < len(self._returns[env_id]):
            self._infos[env_id].append(info)

    def update_reward(self, env_id: int, reward: float) -> None:
        if self.needs_episode(env_id):
            self._returns[env_id].append(float(reward))
        self._latest_reward[env_id] = float(reward)

    def get_episode_return(self) -> list[float]:
        return [r for per_env in self._returns for r in per_env]

    def get_latest_reward(self, env_id: int) -> float:
        return self._latest_reward[env_id]

    def get_current_episode(self) -> int:
        return sum(len(r) for r in self._returns)

    def get_episode_info(self) -> dict[str, float]:
        """Mean of each numeric info value over the finished episodes (``<key>_mean``)."""
        infos = [info for per_env in self._infos for info in per_env]
        out = {}
        for key in {k for info in infos for k in info}:
            values = [info[key] for info in infos if isinstance(info.get(key), (int, float, np.number))]
            if values and not isinstance(values[0], bool):
                out[f"{key}_mean"] = float(np.mean(values))
        return out
