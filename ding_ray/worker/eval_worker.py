"""``EvalWorker``: a self-contained evaluator (envs + eval-mode policy) for any process."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import torch
from easydict import EasyDict

from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.policy import Policy, create_policy
from ding_ray.utils.runtime import set_pkg_seed
from ding_ray.worker import metrics
from ding_ray.worker.evaluator import InteractionSerialEvaluator
from ding_ray.worker.rollout_worker import check_env_fits_policy
from ding_ray.worker.weights_holder import WeightsHolder


class EvalWorker(WeightsHolder):
    """Evaluates published weights; keeps the best ones as ``<exp_name>/ckpt/ckpt_best.pth.tar``.

    The calling loop::

        worker.load_weights(version, weights)
        info = worker.eval(train_iter, envstep)     # info['stop'] once env.stop_value is reached
    """

    def __init__(self, cfg: EasyDict, tb_logger: Any = None) -> None:
        set_pkg_seed(int(cfg.seed))
        env_fn, _, env_cfgs = get_vec_env_setting(cfg.env)
        env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])
        env.seed(int(cfg.seed), dynamic_seed=False)  # env.replay_path is the eval entry's, as in DI-engine
        self._policy = create_policy(cfg.policy, enable_field=["eval"])
        check_env_fits_policy(self._policy, env)
        self._evaluator = InteractionSerialEvaluator(
            cfg.policy.eval.evaluator, env, self._policy.eval_mode, tb_logger, exp_name=cfg.exp_name
        )
        self._ckpt_dir = os.path.join(cfg.exp_name, "ckpt")

    def _acting_mode(self) -> Any:
        return self._policy.eval_mode

    def eval(self, train_iter: int = -1, envstep: int = -1) -> dict[str, Any]:
        """Run the evaluation episodes with the weights held; a small dict of results."""
        stop, info = self._evaluator.eval(self._save_checkpoint, train_iter, envstep)
        return {
            "stop": bool(stop),
            "policy_version": self.version,
            "train_iter": train_iter,
            "envstep": envstep,
            "best_return": self._evaluator.best_return,
            metrics.EVAL_RETURN_MEAN: info["eval_episode_return_mean"],
            metrics.EVAL_RETURN_STD: info["eval_episode_return_std"],
            metrics.EVAL_RETURN_MAX: info["eval_episode_return_max"],
            metrics.EVAL_RETURN_MIN: info["eval_episode_return_min"],
            metrics.EVAL_ENV_STEPS_PER_S: info["avg_envstep_per_sec"],
            metrics.EVAL_NONFINITE_EPISODES: self._evaluator.nonfinite_episodes,
        }

    def _save_checkpoint(self, name: str) -> str:
        """Save the evaluated weights (not the learner's newer ones) under ``name``."""
        os.makedirs(self._ckpt_dir, exist_ok=True)
        path = os.path.join(self._ckpt_dir, name)
        state = {"model": self._policy.eval_mode.state_dict()["model"], "policy_version": self.version}
        torch.save(state, path + ".tmp")
        os.replace(path + ".tmp", path)
        return path

    @property
    def best_return(self) -> float:
        return self._evaluator.best_return

    @property
    def policy(self) -> Policy:
        """The policy it evaluates (eval mode only): ``load_weights`` loads into it."""
        return self._policy

    def close(self) -> None:
        self._evaluator.close()
