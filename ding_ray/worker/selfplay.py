"""Self-play pieces shared by the serial example and the Ray driver: an opponent pool of frozen
weights, a battle rollout worker (envs + the learner's and an opponent's collect modes), and the
learning side (the policy, its pool, its evaluation against a fixed opponent).

The calling loop (``examples/selfplay.py``; ``ding_ray.distributed.battle`` runs the workers as
actors feeding one buffer actor)::

    side = SelfPlayLearner(cfg)
    worker = BattleRolloutWorker(cfg, index=0)
    while not side.should_stop(worker.envstep):   # evaluates against the random player when due
        worker.load_weights(side.train_iter, side.weights())
        worker.set_opponent(*side.pool.sample())
        batch, info = worker.rollout(policy_kwargs={'eps': side.eps(worker.envstep)})
        buffer.push(batch)
        for _ in range(update_per_collect):
            side.train(buffer.sample(batch_size, side.train_iter, columnar=True))
    result = side.final_report(worker.envstep)
"""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.data.columnar import Batch, stack_items
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
from ding_ray.policy.action_mask import RandomLegalPolicy
from ding_ray.policy.weights import Weights, load_weights, state_dict_to_numpy
from ding_ray.rl_utils import get_epsilon_greedy_fn
from ding_ray.utils.runtime import set_pkg_seed
from ding_ray.worker.collector.battle_sample_collector import BattleSampleSerialCollector
from ding_ray.worker.evaluator.battle_evaluator import BattleInteractionSerialEvaluator
from ding_ray.worker.weights_holder import WeightsHolder

SEED_STRIDE = 1000  # battle worker i seeds its envs from cfg.seed + i * SEED_STRIDE


class OpponentPool:
    """The last ``max_size`` frozen copies of the learning policy, each with its version (the
    training iteration it was taken at). An opponent is one of them, drawn uniformly, so the
    learner keeps beating its older selves and not just the newest."""

    def __init__(self, max_size: int = 5, seed: int = 0) -> None:
        if max_size < 1:
            raise ConfigError(f"The opponent pool needs max_size >= 1, got {max_size}.")
        self._max_size = max_size
        self._members: list[tuple[int, Weights]] = []
        self._rng = random.Random(seed)

    def add(self, version: int, weights: Weights) -> None:
        self._members.append((int(version), weights))
        del self._members[: -self._max_size]

    def sample(self) -> tuple[int, Weights]:
        """``(version, weights)`` of a member drawn uniformly."""
        if not self._members:
            raise ConfigError("The opponent pool is empty: add the learner's weights first.")
        return self._members[self._rng.randrange(len(self._members))]

    @property
    def versions(self) -> set[int]:
        return {version for version, _ in self._members}

    def __len__(self) -> int:
        return len(self._members)


def _env_manager(cfg: EasyDict, which: str) -> Any:
    env_fn, collector_cfgs, evaluator_cfgs = get_vec_env_setting(cfg.env)
    env_cfgs = collector_cfgs if which == "collector" else evaluator_cfgs
    return create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])


class BattleRolloutWorker(WeightsHolder):
    """Battle envs with the learner's collect mode as player 0 and a frozen opponent as player 1.

    Same contract as ``RolloutWorker`` (``version``, ``load_weights``, ``rollout`` -> columnar
    ``Batch`` + info), so a collector actor wraps either the same way. The batch holds both
    players' samples: the opponent is an older copy of the same network, and its games are
    experience of the same game from the other side.
    """

    def __init__(self, cfg: EasyDict, index: int = 0) -> None:
        self.index, self.name = index, f"battle-collector-{index}"
        seed = int(cfg.seed) + index * SEED_STRIDE
        set_pkg_seed(seed)
        env = _env_manager(cfg, "collector")
        env.seed(seed, dynamic_seed=True)
        self._policy = create_policy(cfg.policy, enable_field=["collect"])
        self._opponent = create_policy(cfg.policy, enable_field=["collect"])
        self._collector = BattleSampleSerialCollector(
            cfg.policy.collect.collector,
            env,
            [self._policy.collect_mode, self._opponent.collect_mode],
            exp_name=cfg.exp_name,
            instance_name=self.name,
        )
        self.opponent_version: int | None = None

    def _acting_mode(self) -> Any:
        return self._policy.collect_mode  # the learner's weights; the opponent's are set_opponent's

    def wants_opponent(self, version: int) -> bool:
        """Whether the pool member ``version`` is another opponent than the one held (asked before
        fetching its weights)."""
        return version != self.opponent_version

    def set_opponent(self, version: int, weights: Weights) -> None:
        """Play against the pool member ``version`` from now on (loaded unless already held)."""
        if self.wants_opponent(version):
            load_weights(self._opponent.collect_mode, weights)
            self.opponent_version = int(version)

    def rollout(
        self, n_sample: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> tuple[Batch, dict[str, Any]]:
        """``n_sample`` samples of each player as one ``Batch`` (with a ``policy_version`` column)."""
        before, start = self._collector.envstep, time.perf_counter()
        data, return_info = self._collector.collect(n_sample, train_iter, policy_kwargs=policy_kwargs)
        samples = data[0] + data[1]
        batch = stack_items(samples)
        batch["policy_version"] = np.full(len(samples), self.version, dtype=np.int64)
        returns = [info["eval_episode_return"] for info in return_info[0]]
        info = {
            "collector": self.name,
            "n": len(samples),
            "policy_version": self.version,
            "new_env_steps": self._collector.envstep - before,
            "episodes": len(returns),
            "player0_return_mean": float(np.mean(returns)) if returns else float("nan"),
            "seconds": time.perf_counter() - start,
        }
        return batch, info

    @property
    def envstep(self) -> int:
        return self._collector.envstep

    def close(self) -> None:
        self._collector.close()


class SelfPlayLearner:
    """The learning side: the policy's learn mode, its opponent pool (a frozen copy added every
    ``refresh_freq`` training iterations) and its evaluation against a uniformly random player
    every ``policy.eval.evaluator.eval_freq`` iterations, which ends the run at ``target_win_rate``."""

    def __init__(
        self, cfg: EasyDict, refresh_freq: int = 500, pool_size: int = 5, target_win_rate: float = 0.9
    ) -> None:
        self._start = time.perf_counter()
        set_pkg_seed(int(cfg.seed))
        self.cfg = cfg
        self.policy = create_policy(cfg.policy, enable_field=["learn", "eval"])
        self.pool = OpponentPool(pool_size, seed=int(cfg.seed))
        self.train_iter = 0
        self.pool.add(self.train_iter, self.weights())
        self.refresh_freq, self.target_win_rate = refresh_freq, target_win_rate
        eps = cfg.policy.other.eps
        self.eps = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type)
        self._evaluator_env = _env_manager(cfg, "evaluator")
        self._evaluator_env.seed(int(cfg.seed), dynamic_seed=False)
        self.evaluator = BattleInteractionSerialEvaluator(
            cfg.policy.eval.evaluator,
            self._evaluator_env,
            [self.policy.eval_mode, RandomLegalPolicy(seed=int(cfg.seed))],
            exp_name=cfg.exp_name,
        )
        self.evaluations: list[tuple[int, int, float]] = []  # (train_iter, envstep, win rate)

    def weights(self) -> Weights:
        return state_dict_to_numpy(self.policy.learn_mode.state_dict()["model"])

    def train(self, batch: Any) -> dict[str, Any]:
        """One gradient step; every ``refresh_freq`` steps the current weights join the pool."""
        out = self.policy.learn_mode.forward(batch)
        self.train_iter += 1
        if self.train_iter % self.refresh_freq == 0:
            self.pool.add(self.train_iter, self.weights())
        return out

    def should_stop(self, envstep: int, max_env_step: int | float = float("inf")) -> bool:
        """True past ``max_env_step``, or when an evaluation (run here when due) reaches the target."""
        if envstep >= max_env_step:
            return True
        if not self.evaluator.should_eval(self.train_iter):
            return False
        win_rate = self.evaluate(envstep)["win_mean"]
        self.evaluations.append((self.train_iter, envstep, win_rate))
        return win_rate >= self.target_win_rate

    def evaluate(self, envstep: int = -1, n_episode: int | None = None, seed: int | None = None) -> dict:
        """Games against the random player; returns the evaluator's summary (``win_mean`` is the
        win rate). ``seed`` replays the random player's and the envs' draws from a new seed."""
        if seed is not None:
            self.evaluator.reset_policy([self.policy.eval_mode, RandomLegalPolicy(seed=seed)])
            self._evaluator_env.seed(seed, dynamic_seed=False)
        self.evaluator.eval(train_iter=self.train_iter, envstep=envstep, n_episode=n_episode)
        return self.evaluator.last_summary

    def final_report(self, envstep: int) -> dict[str, Any]:
        """A last evaluation of ``env.n_evaluator_episode`` new games (other seeds than the ones
        the run stopped on), and the figures of the run."""
        final = self.evaluate(envstep, self.cfg.env.n_evaluator_episode, seed=int(self.cfg.seed) + 12345)
        return dict(
            seed=int(self.cfg.seed),
            win_rate=final["win_mean"],
            draw_rate=final["draw_mean"],
            loss_rate=final["loss_mean"],
            games=final["episode_count"],
            env_steps=envstep,
            train_iter=self.train_iter,
            pool_size=len(self.pool),
            evaluations=self.evaluations,
            wall_s=round(time.perf_counter() - self._start, 1),
        )

    def close(self) -> None:
        self.evaluator.close()
