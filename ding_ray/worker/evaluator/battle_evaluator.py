"""``BattleInteractionSerialEvaluator``: games of policy 0 against fixed opponents, judged by policy 0's
returns (a win rate, when the env reports one)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError
from ding_ray.policy.common import numpy_forward
from ding_ray.utils.registry import SERIAL_EVALUATOR_REGISTRY
from ding_ray.worker import metrics
from ding_ray.worker.env_stepper import EnvStepper, battle_forward
from ding_ray.worker.evaluator.interaction_evaluator import EvalCall, InteractionSerialEvaluator
from ding_ray.worker.evaluator.vector_eval_monitor import VectorEvalMonitor

logger = logging.getLogger(__name__)


@SERIAL_EVALUATOR_REGISTRY.register("battle_interaction")
class BattleInteractionSerialEvaluator(InteractionSerialEvaluator):
    """Plays ``n_episode`` games in a battle env, policy i as player i; policy 0 is the one judged.

    ``eval`` returns ``(stop_flag, return_info)`` as DI-engine's: ``return_info[i]`` holds player
    i's final info of each game. The summary of the evaluation (policy 0's mean return as
    ``reward_mean``, each player's as ``player<i>_return_mean``, and the mean of every numeric key
    of policy 0's final infos as ``<key>_mean``: ``win_mean`` is the win rate of TicTacToeEnv) is
    logged, written to TensorBoard and kept in ``last_summary``. ``stop_flag`` is True once
    ``reward_mean`` reaches ``stop_value`` after training began; a new best ``reward_mean`` saves
    ``ckpt_best.pth.tar`` through ``save_ckpt_fn``.
    """

    config = dict(type="battle_interaction")

    def __init__(
        self,
        cfg: dict,
        env: Any = None,
        policy: Sequence[Any] | None = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "evaluator",
    ) -> None:
        self.last_summary: dict[str, Any] = {}
        super().__init__(cfg, env, policy, tb_logger, exp_name, instance_name)
        if self._render.render_freq != -1:
            raise ConfigError(
                "BattleInteractionSerialEvaluator saves no videos: set "
                "policy.eval.evaluator.render.render_freq=-1."
            )

    def reset_policy(self, _policy: Sequence[Any] | None = None) -> None:
        if _policy is not None:
            if isinstance(_policy, (str, bytes)) or not isinstance(_policy, Sequence) or len(_policy) < 2:
                raise ConfigError(
                    "BattleInteractionSerialEvaluator needs a list of at least 2 policy modes (policy 0 "
                    f"is evaluated, the others are its opponents), got {_policy!r}."
                )
            self._policy = list(_policy)
        for policy in self._policy or []:
            policy.reset()

    def _run_episodes(self, call: EvalCall) -> tuple[bool, list[list[dict[str, Any]]]]:
        start = time.perf_counter()
        self._env.reset()
        self.reset_policy()
        players = range(len(self._policy))
        forward = battle_forward([numpy_forward(policy) for policy in self._policy])
        stepper = EnvStepper(self._env, self._policy)
        monitor = VectorEvalMonitor(self._env.env_num, call.n_episode)
        return_info: list[list[dict[str, Any]]] = [[] for _ in players]
        env_steps = 0
        while not monitor.is_finished():
            obs = {i: o for i, o in stepper.ready_obs().items() if monitor.needs_episode(i)}
            batch = stepper.act(forward, obs, **call.policy_kwargs)
            env_steps += batch.steps
            for k in np.flatnonzero(batch.done).tolist():
                env_id, info = int(batch.env_ids[k]), batch.timesteps[k].info
                if monitor.needs_episode(env_id):
                    for p in players:
                        return_info[p].append(info[p])
                monitor.update_info(env_id, info[0])
                monitor.update_reward(env_id, info[0]["eval_episode_return"])
        duration = time.perf_counter() - start
        summary = self._summarize(monitor, return_info, call.train_iter, call.envstep, env_steps, duration)
        stop_flag = self._judge(summary["reward_mean"], call.save_ckpt_fn, call.train_iter)
        logger.info(
            "[%s] iter %d envstep %d: policy 0 return %.3f over %d games%s%s",
            self._instance_name,
            call.train_iter,
            call.envstep,
            summary["reward_mean"],
            summary["episode_count"],
            f", win rate {summary['win_mean']:.3f}" if "win_mean" in summary else "",
            " -> stop value reached" if stop_flag else "",
        )
        return stop_flag, return_info

    def _summarize(
        self,
        monitor: VectorEvalMonitor,
        return_info: list[list[dict[str, Any]]],
        train_iter: int,
        envstep: int,
        env_steps: int,
        duration: float,
    ) -> dict[str, Any]:
        returns = np.asarray(monitor.get_episode_return(), dtype=np.float64)
        summary: dict[str, Any] = {
            "train_iter": train_iter,
            "envstep": envstep,
            "episode_count": len(returns),
            "envstep_count": env_steps,
            "evaluate_time": duration,
            "avg_envstep_per_sec": env_steps / max(duration, 1e-9),
            "reward_mean": float(returns.mean()),
            "reward_std": float(returns.std()),
            "reward_max": float(returns.max()),
            "reward_min": float(returns.min()),
        }
        for p, infos in enumerate(return_info):
            summary[f"player{p}_return_mean"] = float(np.mean([i["eval_episode_return"] for i in infos]))
        summary.update({k: v for k, v in monitor.get_episode_info().items() if k not in summary})
        self.last_summary = summary
        scalars = {
            metrics.EVAL_RETURN_MEAN: summary["reward_mean"],
            metrics.EVAL_RETURN_STD: summary["reward_std"],
            metrics.EVAL_RETURN_MAX: summary["reward_max"],
            metrics.EVAL_RETURN_MIN: summary["reward_min"],
            metrics.EVAL_EPISODE_LENGTH: env_steps / max(len(returns), 1),
            metrics.EVAL_ENV_STEPS_PER_S: summary["avg_envstep_per_sec"],
        }
        scalars.update(
            {
                f"evaluator/{k}": v
                for k, v in summary.items()
                if k.endswith("_mean") and k not in ("reward_mean",)
            }
        )
        metrics.log_scalars(self._tb_logger, scalars, max(envstep, 0))
        return summary
