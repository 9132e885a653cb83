"""``montecarlo_return_estimator``: the discounted return of every step of whole episodes, what a
policy-gradient (REINFORCE) learner trains on, as DI-engine's stage of that name computes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.framework.context import OnlineRLContext


def montecarlo_return_estimator(policy: Any) -> Callable[[OnlineRLContext], None]:
    """Give each step of ``ctx.episodes`` its ``return``, ``r_t + gamma * return_{t+1}`` summed back
    from the episode's last step (``gamma``: the policy's ``collect.discount_factor``), and make
    the steps ``ctx.train_data``: a list of transitions, or of unrolls of ``collect.unroll_len``
    steps (``get_train_sample``).

    ``policy``: the ``Policy`` (its ``cfg`` is read). Every episode must end with a ``done`` step,
    as ``EpisodeCollector`` makes them; ``learn.ignore_done=True`` is refused, as in DI-engine.

    Reads ctx: episodes.
    Writes ctx: train_data.
    """
    cfg = getattr(policy, "cfg", None)
    if cfg is None:
        raise ConfigError(
            f"montecarlo_return_estimator() takes the Policy (it reads policy.cfg), got "
            f"{type(policy).__name__}."
        )
    if cfg.learn.get("ignore_done", False):
        raise ConfigError(
            "montecarlo_return_estimator sums each episode's rewards back from its end, so it needs the "
            "episodes' done flags: set policy.learn.ignore_done=False."
        )
    gamma, unroll_len = float(cfg.collect.discount_factor), int(cfg.collect.get("unroll_len", 1))
    import torch  # here, not at the top: a driver of actors needs no torch to build its stages

    from ding_ray.rl_utils import generalized_lambda_returns, get_train_sample

    def _estimate(ctx: OnlineRLContext) -> None:
        train_data = []
        for episode in ctx.episodes:
            if not episode or not episode[-1]["done"]:
                raise DataFormatError(
                    "montecarlo_return_estimator needs whole episodes (the last step done); collect "
                    "them with EpisodeCollector."
                )
            rewards = torch.as_tensor(
                np.array([np.asarray(t["reward"]).item() for t in episode], dtype=np.float32)
            ).unsqueeze(1)
            # lambda 1 and nothing after the end: the plain discounted sum
            returns = generalized_lambda_returns(torch.zeros(len(episode) + 1, 1), rewards, gamma, 1.0)
            steps = [{**t, "return": float(r)} for t, r in zip(episode, returns[:, 0].tolist())]
            train_data.extend(get_train_sample(steps, unroll_len))
        ctx.train_data = train_data

    return _estimate
