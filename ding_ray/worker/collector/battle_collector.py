"""The stepping loop of the battle collectors: several policies act together in one env, policy i
for player i, each with one batched forward per env-manager step.

A battle env (``ding_ray.envs.TicTacToeEnv``, DI-engine's 1v1 envs) takes one action per player,
``env.step({env_id: [a_0, a_1]})``, and answers lists indexed by player: ``obs``, ``reward`` and
``info``; ``done`` is shared. At an episode's end ``info[i]['eval_episode_return']`` is player i's
return.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.errors import ConfigError
from ding_ray.policy.common import numpy_forward
from ding_ray.worker.collector.base import EpisodeStats
from ding_ray.worker.collector.vector_collector import VectorCollector, _policy_attribute
from ding_ray.worker.env_stepper import battle_forward


def player_return_key(player: int) -> str:
    """Metric key of player ``player``'s mean episode return (``collector/player1_return_mean``)."""
    return f"collector/player{player}_return_mean"


class BattleEpisodeStats(EpisodeStats):
    """``EpisodeStats`` (whose returns are player 0's) plus every player's returns."""

    def __init__(self, n_players: int) -> None:
        super().__init__()
        self.player_returns: list[list[float]] = [[] for _ in range(n_players)]

    def add_battle_episode(self, returns: Sequence[float], length: int) -> None:
        self.add_episode(returns[0], length)
        for per_player, value in zip(self.player_returns, returns):
            per_player.append(float(value))

    def report(self, total_envstep: int, env_errors: int) -> dict[str, float]:
        out = super().report(total_envstep, env_errors)
        for player, returns in enumerate(self.player_returns):
            if returns:
                out[player_return_key(player)] = float(np.mean(returns))
        self.player_returns = [[] for _ in self.player_returns]
        return out


def player_timestep(timestep: BaseEnvTimestep, player: int) -> BaseEnvTimestep:
    """Player ``player``'s view of a battle timestep (its obs, reward and info; the shared done)."""
    return BaseEnvTimestep(
        timestep.obs[player], float(timestep.reward[player]), bool(timestep.done), timestep.info[player]
    )


class BattleVectorCollector(VectorCollector):
    """Holds the env manager and a list of policy modes; ``_step`` advances every ready env once.

    A policy whose mode has ``collect_data = False`` (a frozen or scripted opponent, e.g.
    ``RandomLegalPolicy``) acts but keeps no trajectory. Whether only whole episodes
    are handed over (``traj_len_inf``) is policy 0's setting.
    """

    def reset_env(self, _env: Any = None) -> None:
        super().reset_env(_env)
        if self._env is not None:
            self._traj = defaultdict(list)  # (env_id, player) -> that player's transitions

    def reset_policy(self, _policy: Sequence[Any] | None = None) -> None:
        if _policy is not None:
            if isinstance(_policy, (str, bytes)) or not isinstance(_policy, Sequence) or len(_policy) < 2:
                raise ConfigError(
                    f"{type(self).__name__} needs a list of at least 2 policy modes (one per player), "
                    f"got {_policy!r}."
                )
            self._policy = list(_policy)
        if self._policy is None:
            return
        for policy in self._policy:
            policy.reset()
        if self._env is not None:
            self._stepper.policies = self._policy_modes()
        self._forward = battle_forward([numpy_forward(policy) for policy in self._policy])
        lead = self._policy[0]
        attribute = _policy_attribute if hasattr(lead, "get_attribute") else (lambda _p, _n, default: default)
        self._traj_len_inf = bool(attribute(lead, "traj_len_inf", False))
        self._collect_data = [bool(getattr(p, "collect_data", True)) for p in self._policy]
        if not any(self._collect_data):
            raise ConfigError(
                "No policy of the battle collects data (all have collect_data=False): give the learning "
                "policy's collect_mode as one of them."
            )
        stats = self._stats
        if not isinstance(stats, BattleEpisodeStats) or len(stats.player_returns) != len(self._policy):
            self._stats = BattleEpisodeStats(len(self._policy))

    def _policy_modes(self) -> list[Any]:
        return list(self._policy or [])

    @property
    def policy_num(self) -> int:
        return len(self._policy)

    def _step(
        self, policy_kwargs: dict, train_iter: int = 0
    ) -> list[tuple[int, list[dict | None] | None, bool, list[dict] | None]]:
        """Step every ready env once. Returns ``(env_id, transitions, episode_over, infos)`` per env:
        one transition per player (None for players that keep no data; each carries
        ``collect_iter``) and, at a normal episode end, the final info of each player. A crashed
        env's step has ``transitions=None``."""
        batch = self._stepper.act(self._forward, self._stepper.ready_obs(), **policy_kwargs)
        self._total_envstep_count += batch.steps
        self._stats.env_steps += batch.steps
        events = []
        abnormal, done, length = batch.abnormal.tolist(), batch.done.tolist(), batch.length.tolist()
        for k, env_id in enumerate(batch.env_ids.tolist()):
            if abnormal[k]:
                events.append((env_id, None, True, None))
                continue
            timestep, obs, outputs = batch.timesteps[k], batch.obs[k], batch.outputs[k]["players"]
            transitions = [
                {
                    **policy.process_transition(obs[p], outputs[p], player_timestep(timestep, p)),
                    "collect_iter": train_iter,
                }
                if self._collect_data[p]
                else None
                for p, policy in enumerate(self._policy)
            ]
            infos = None
            if done[k]:
                infos = list(timestep.info)
                self._stats.add_battle_episode([info["eval_episode_return"] for info in infos], length[k])
            events.append((env_id, transitions, done[k], infos))
        return events
