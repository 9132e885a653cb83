"""``BattleSampleSerialCollector``: training samples for each of several policies playing one env."""

from __future__ import annotations

from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker.collector.battle_collector import BattleVectorCollector
from ding_ray.worker.collector.sample_collector import SampleSerialCollector


@SERIAL_COLLECTOR_REGISTRY.register("sample_1v1")
class BattleSampleSerialCollector(BattleVectorCollector, SampleSerialCollector):
    """Returns ``n_sample`` train samples per data-collecting policy per ``collect`` call.

    Each (env, player) pair keeps its own trajectory, cut into samples as the ``SampleSerialCollector``
    cuts an env's trajectory (at an episode's end, or at ``traj_len`` steps).

    The calling loop::

        collector = BattleSampleSerialCollector(cfg, env, [learner.collect_mode, opponent.collect_mode])
        (data_0, data_1), (infos_0, infos_1) = collector.collect(n_sample=64, train_iter=i)
    """

    config = dict(type="sample_1v1")

    def collect(
        self,
        n_sample: int | None = None,
        train_iter: int = 0,
        drop_extra: bool = True,
        policy_kwargs: dict | None = None,
    ) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
        """Collect until every data-collecting policy has ``n_sample`` samples (exactly that many
        with ``drop_extra``).

        Returns ``(return_data, return_info)``, one list per policy (in the order of the policies):
        the samples (empty for a policy with ``collect_data = False``), and the final info of each
        episode that ended during the call (``info['eval_episode_return']`` is the player's return).
        """
        n_sample = n_sample if n_sample is not None else self._cfg.n_sample
        if n_sample is None or n_sample <= 0:
            raise ConfigError(
                "BattleSampleSerialCollector.collect needs n_sample > 0 (policy.collect.n_sample)."
            )
        players = range(self.policy_num)
        return_data: list[list[dict[str, Any]]] = [[] for _ in players]
        return_info: list[list[dict[str, Any]]] = [[] for _ in players]
        collecting = [p for p in players if self._collect_data[p]]
        with self._timer():
            while any(len(return_data[p]) < n_sample for p in collecting):
                for env_id, transitions, episode_over, infos in self._step(
                    policy_kwargs or {}, train_iter=train_iter
                ):
                    for p in collecting:
                        traj = self._traj[env_id, p]
                        if transitions is not None:
                            traj.append(transitions[p])
                        samples, self._traj[env_id, p] = self._ready_samples(
                            traj, episode_over, self._policy[p].get_train_sample
                        )
                        return_data[p].extend(samples)
                    if infos is not None:
                        for p in players:
                            return_info[p].append(infos[p])
        self._maybe_report(train_iter)
        if drop_extra:
            return_data = [samples[:n_sample] for samples in return_data]
        return return_data, return_info
