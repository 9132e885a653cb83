"""``BattleEpisodeSerialCollector``: whole episodes of several policies playing one env, per policy."""

from __future__ import annotations

from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker.collector.battle_collector import BattleVectorCollector


@SERIAL_COLLECTOR_REGISTRY.register("episode_1v1")
class BattleEpisodeSerialCollector(BattleVectorCollector):
    """Returns ``n_episode`` episodes, as seen by each data-collecting policy, per ``collect`` call.

    Episode k of policy i and episode k of policy j are the same game from the two sides. An
    episode cut short by a crashing env is not returned: it never finished.
    """

    config = dict(
        type="episode_1v1",
        n_episode=None,  # default episodes per collect call (copied from policy.collect.n_episode)
        get_train_sample=False,  # return each policy's get_train_sample of its episodes instead
    )

    def collect(
        self, n_episode: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> tuple[list[list[Any]], list[list[dict[str, Any]]]]:
        """Returns ``(return_data, return_info)``, one list per policy: its episodes (lists of
        transitions; its train samples with ``get_train_sample``; empty for a policy with
        ``collect_data = False``), and the final info of each returned episode."""
        n_episode = n_episode if n_episode is not None else self._cfg.n_episode
        if n_episode is None or n_episode <= 0:
            raise ConfigError(
                "BattleEpisodeSerialCollector.collect needs n_episode > 0 (policy.collect.n_episode)."
            )
        players = range(self.policy_num)
        collecting = [p for p in players if self._collect_data[p]]
        episodes: list[list[list[dict[str, Any]]]] = [[] for _ in players]
        return_info: list[list[dict[str, Any]]] = [[] for _ in players]
        with self._timer():
            while len(return_info[0]) < n_episode:
                for env_id, transitions, episode_over, infos in self._step(
                    policy_kwargs or {}, train_iter=train_iter
                ):
                    for p in collecting:
                        if transitions is not None:
                            self._traj[env_id, p].append(transitions[p])
                        if episode_over:
                            if infos is not None:
                                episodes[p].append(self._traj[env_id, p])
                            self._traj[env_id, p] = []
                    if infos is not None:
                        for p in players:
                            return_info[p].append(infos[p])
        self._maybe_report(train_iter)
        episodes = [per_policy[:n_episode] for per_policy in episodes]
        return_info = [per_policy[:n_episode] for per_policy in return_info]
        if self._cfg.get_train_sample:
            episodes = [
                [sample for episode in per_policy for sample in self._policy[p].get_train_sample(episode)]
                for p, per_policy in enumerate(episodes)
            ]
        return episodes, return_info
