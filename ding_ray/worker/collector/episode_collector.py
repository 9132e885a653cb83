"""``EpisodeSerialCollector``: collect a given number of whole episodes."""

from __future__ import annotations

from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker.collector.vector_collector import VectorCollector


@SERIAL_COLLECTOR_REGISTRY.register("episode")
class EpisodeSerialCollector(VectorCollector):
    """Returns ``n_episode`` episodes (lists of transitions), or their train samples.

    An episode cut short by a crashing env is not returned: it never finished.
    """

    config = dict(
        type="episode",
        n_episode=None,  # default episodes per collect call (copied from policy.collect.n_episode)
        get_train_sample=False,  # return policy.get_train_sample of each episode instead of episodes
        reward_shaping=False,  # pass each finished episode through its env's reward_shaping(transitions)
    )

    def collect(
        self, n_episode: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> list[Any]:
        n_episode = n_episode if n_episode is not None else self._cfg.n_episode
        if n_episode is None or n_episode <= 0:
            raise ConfigError(
                "EpisodeSerialCollector.collect needs n_episode > 0 (policy.collect.n_episode)."
            )
        episodes: list[list[dict[str, Any]]] = []
        with self._timer():
            while len(episodes) < n_episode:
                for env_id, transition, episode_over in self._step(
                    self._forward, policy_kwargs or {}, train_iter
                ):
                    traj = self._traj[env_id]
                    if transition is not None:
                        traj.append(transition)
                    if episode_over:
                        if transition is not None:
                            if self._cfg.reward_shaping:
                                traj = self._env.reward_shaping(env_id, traj)
                            episodes.append(traj)
                        self._traj[env_id] = []
        self._maybe_report(train_iter)
        episodes = episodes[:n_episode]
        if self._cfg.get_train_sample:
            return [sample for episode in episodes for sample in self._policy.get_train_sample(episode)]
        return episodes
