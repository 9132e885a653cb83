"""Self-play on Ray: battle collector actors feeding one replay-buffer actor.

``BattleCollectorActor`` is a ``BattleRolloutWorker``, made remote by the driver,
that pulls the learner's and its opponent's weights from the object store and puts its batches
there. ``selfplay_on_ray`` is a small synchronous driver: the learning side (``SelfPlayLearner``:
policy, opponent pool, evaluation against a random player) lives in the driver; each round every
collector plays against its own opponent drawn from the pool, the batches go to the buffer actor
without passing through the driver, and the learner trains on minibatches sampled from it.
"""

from __future__ import annotations

from typing import Any

import ray
from easydict import EasyDict

from ding_ray.distributed.actors import enter_actor
from ding_ray.distributed.buffer_actor import BufferActor
from ding_ray.distributed.cluster import start_local_ray
from ding_ray.distributed.errors import get
from ding_ray.distributed.ray_port import remote_class
from ding_ray.distributed.user_modules import UserCode, user_code
from ding_ray.distributed.weights import WeightsPublisher, WeightsRef, pull
from ding_ray.errors import ConfigError
from ding_ray.utils.runtime import set_torch_threads
from ding_ray.worker.selfplay import BattleRolloutWorker, SelfPlayLearner


class BattleCollectorActor(BattleRolloutWorker):
    """A ``BattleRolloutWorker`` that takes its weights as object-store references; ``code``: the
    user's code to load first (``user_code``)."""

    def __init__(
        self, cfg: EasyDict, index: int, torch_threads: int = 1, code: UserCode | None = None
    ) -> None:
        enter_actor(code, f"battle collector-{index} actor", torch_threads)
        super().__init__(cfg, index)

    def collect(
        self,
        weights: WeightsRef,
        opponent: WeightsRef,
        train_iter: int = 0,
        policy_kwargs: dict | None = None,
        n_sample: int | None = None,
    ) -> dict[str, Any]:
        """Roll out with the newest learner weights against ``opponent``; the info's ``data`` is a
        reference to the batch, owned by this actor, for the driver to hand to the buffer."""
        pull(self, weights)
        if self.wants_opponent(opponent.version):
            self.set_opponent(opponent.version, ray.get(opponent.ref))
        batch, info = self.rollout(n_sample, train_iter, policy_kwargs)
        info["data"] = ray.put(batch)
        return info


class _PoolRefs:
    """One object-store copy per opponent-pool member, dropped when the member leaves the pool."""

    def __init__(self) -> None:
        self._refs: dict[int, WeightsRef] = {}

    def ref(self, version: int, weights: Any, live: set[int]) -> WeightsRef:
        if version not in self._refs:
            self._refs[version] = WeightsRef(version, ray.put(weights))
        for gone in set(self._refs) - live:
            del self._refs[gone]
        return self._refs[version]


def selfplay_on_ray(
    cfg: EasyDict,
    selfplay_cfg: dict,
    n_collectors: int = 2,
    max_env_step: int = 200_000,
    collector_cpus: float = 1.0,
) -> dict[str, Any]:
    """Self-play with ``n_collectors`` battle collector actors and one buffer actor.

    ``selfplay_cfg`` holds ``update_per_collect`` (gradient steps per collected batch, as in the
    serial example, so the replay ratio does not depend on ``n_collectors``), ``refresh_freq``,
    ``pool_size`` and ``target_win_rate``. Uses the running Ray instance, or starts a local one
    (and stops it at the end). Returns the figures of ``SelfPlayLearner.final_report`` plus
    ``n_collectors``.
    """
    if n_collectors < 1:
        raise ConfigError(f"selfplay_on_ray needs n_collectors >= 1, got {n_collectors}.")
    started = not ray.is_initialized()
    if started:
        start_local_ray()  # on 127.0.0.1 only, without the dashboard
    set_torch_threads(1)
    learner = SelfPlayLearner(
        cfg, selfplay_cfg["refresh_freq"], selfplay_cfg["pool_size"], selfplay_cfg["target_win_rate"]
    )
    buffer_ = (
        remote_class(BufferActor)
        .options(num_cpus=0)
        .remote(cfg.policy.other.replay_buffer, cfg.exp_name, int(cfg.seed))
    )
    code = user_code(cfg)
    collectors = [
        remote_class(BattleCollectorActor).options(num_cpus=collector_cpus).remote(cfg, index, 1, code)
        for index in range(n_collectors)
    ]
    publisher, pool_refs = WeightsPublisher(), _PoolRefs()
    batch_size, envstep = cfg.policy.learn.batch_size, 0
    try:
        while not learner.should_stop(envstep, max_env_step):
            weights = publisher.publish(learner.train_iter, learner.weights())
            live = learner.pool.versions
            calls = []
            for collector in collectors:
                opponent = pool_refs.ref(*learner.pool.sample(), live)
                kwargs = {"eps": learner.eps(envstep)}
                calls.append(collector.collect.remote(weights, opponent, learner.train_iter, kwargs))
            infos = get(calls)
            envstep += sum(info["new_env_steps"] for info in infos)
            get([buffer_.push.remote(info["data"], envstep) for info in infos])
            # all minibatches of the round asked for at once: the round trips overlap the training
            n_updates = selfplay_cfg["update_per_collect"] * len(infos)
            for ref in [buffer_.sample.remote(batch_size, learner.train_iter) for _ in range(n_updates)]:
                learner.train(get(ref))
        result = learner.final_report(envstep)
        result["n_collectors"] = n_collectors
        result["buffer_count"] = get(buffer_.ping.remote())
        return result
    finally:
        for actor in [*collectors, buffer_]:
            ray.kill(actor)
        learner.close()
        if started:
            ray.shutdown()
