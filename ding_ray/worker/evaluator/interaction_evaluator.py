"""``InteractionSerialEvaluator``: run the greedy policy for some episodes and judge the run by them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.utils.registry import SERIAL_EVALUATOR_REGISTRY
from ding_ray.worker import metrics
from ding_ray.worker.env_runner import EnvRunner
from ding_ray.worker.evaluator.vector_eval_monitor import VectorEvalMonitor

logger = logging.getLogger(__name__)


class ISerialEvaluator:
    """Evaluator interface: ``should_eval(train_iter)`` and ``eval(...) -> (stop_flag, info)``."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)


@SERIAL_EVALUATOR_REGISTRY.register("interaction")
class InteractionSerialEvaluator(EnvRunner, ISerialEvaluator):
    """Evaluates ``n_episode`` episodes spread over the env manager's envs (see VectorEvalMonitor).

    Saves a checkpoint through ``save_ckpt_fn('ckpt_best.pth.tar')`` whenever the mean return is
    the best so far; ``stop_flag`` is True once the mean reaches ``stop_value`` after training began.
    """

    config = dict(
        type="interaction",
        eval_freq=1000,  # learner iterations between evaluations
        n_episode=5,  # episodes per evaluation (copied from env.n_evaluator_episode)
        stop_value=None,  # mean return that ends training (copied from env.stop_value)
        render=dict(render_freq=-1, mode="train_iter"),  # kept for DI-engine configs; use env.replay_path
        figure_path=None,
    )

    def __init__(
        self,
        cfg: dict,
        env: Any = None,
        policy: Any = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "evaluator",
    ) -> None:
        cfg = checked_config(type(self), cfg, "policy.eval.evaluator")
        self._cfg = cfg
        self._exp_name, self._instance_name = exp_name, instance_name
        self._tb_logger = tb_logger
        self._default_n_episode = cfg.n_episode
        self._stop_value = cfg.stop_value
        self._env = None
        self._policy = None
        self._end_flag = False
        self.reset(policy, env)

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        self.reset_env(_env)
        self.reset_policy(_policy)
        self._max_episode_return = float("-inf")
        self._last_eval_iter = -1

    def should_eval(self, train_iter: int) -> bool:
        """True at iteration 0 and then every ``eval_freq`` iterations."""
        if train_iter == self._last_eval_iter:
            return False
        if train_iter - self._last_eval_iter < self._cfg.eval_freq and train_iter != 0:
            return False
        self._last_eval_iter = train_iter
        return True

    def eval(
        self,
        save_ckpt_fn: Callable[[str], Any] | None = None,
        train_iter: int = -1,
        envstep: int = -1,
        n_episode: int | None = None,
        force_render: bool = False,
        policy_kwargs: dict | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        n_episode = n_episode or self._default_n_episode
        start = time.perf_counter()
        self._env.reset()
        self._policy.reset()
        monitor = VectorEvalMonitor(self._env.env_num, n_episode)
        env_steps = 0
        while not monitor.is_finished():
            obs = {i: o for i, o in self._env.ready_obs.items() if monitor.needs_episode(i)}
            output = self._policy.forward(obs, **(policy_kwargs or {}))
            timesteps = self._env.step({i: out["action"] for i, out in output.items()})
            for env_id, timestep in timesteps.items():
                if timestep.info.get("abnormal", False):
                    self._policy.reset([env_id])
                    continue
                env_steps += 1
                if timestep.done:
                    self._policy.reset([env_id])
                    monitor.update_info(env_id, timestep.info)
                    monitor.update_reward(env_id, timestep.info["eval_episode_return"])
        duration = time.perf_counter() - start
        returns = np.asarray(monitor.get_episode_return(), dtype=np.float64)
        info: dict[str, Any] = {
            "train_iter": train_iter,
            "envstep": envstep,
            "episode_count": len(returns),
            "eval_episode_return": returns.tolist(),
            "eval_episode_return_mean": float(returns.mean()),
            "eval_episode_return_std": float(returns.std()),
            "eval_episode_return_max": float(returns.max()),
            "eval_episode_return_min": float(returns.min()),
            "evaluate_time": duration,
            "avg_envstep_per_sec": env_steps / max(duration, 1e-9),
        }
        info.update({k: v for k, v in monitor.get_episode_info().items() if k not in info})
        mean = info["eval_episode_return_mean"]
        metrics.log_scalars(
            self._tb_logger,
            {
                metrics.EVAL_RETURN_MEAN: mean,
                metrics.EVAL_RETURN_STD: info["eval_episode_return_std"],
                metrics.EVAL_RETURN_MAX: info["eval_episode_return_max"],
                metrics.EVAL_RETURN_MIN: info["eval_episode_return_min"],
                metrics.EVAL_EPISODE_LENGTH: env_steps / max(len(returns), 1),
                metrics.EVAL_ENV_STEPS_PER_S: info["avg_envstep_per_sec"],
            },
            max(envstep, 0),
        )
        if mean > self._max_episode_return:
            if save_ckpt_fn is not None:
                save_ckpt_fn("ckpt_best.pth.tar")
            self._max_episode_return = mean
        stop_flag = self._stop_value is not None and mean >= self._stop_value and train_iter > 0
        logger.info(
            "[%s] iter %d envstep %d eval return %.2f +- %.2f (best %.2f)%s",
            self._instance_name,
            train_iter,
            envstep,
            mean,
            info["eval_episode_return_std"],
            self._max_episode_return,
            " -> stop value reached" if stop_flag else "",
        )
        return stop_flag, info

    @property
    def best_return(self) -> float:
        return self._max_episode_return


def create_serial_evaluator(cfg: dict, **kwargs: Any) -> ISerialEvaluator:
    return SERIAL_EVALUATOR_REGISTRY.build(cfg.get("type", "interaction"), cfg=cfg, **kwargs)
