"""``nstep_reward_enhancer``: n-step rewards for the transitions a step collector just gathered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ding_ray.framework.context import OnlineRLContext
from ding_ray.rl_utils.adder import nstep_samples


def nstep_reward_enhancer(cfg: Any) -> Callable[[OnlineRLContext], None]:
    """Turn each collected transition into an n-step sample (``cfg.policy.nstep``, discount
    ``cfg.policy.discount_factor``): ``reward`` becomes the ``[nstep]`` rewards from that step on,
    ``value_gamma`` the discount of the bootstrap. Windows never cross the end of an episode or of
    an env's steps in this collect (``ctx.trajectory_end_idx``); there they are shortened.

    Unlike DI-engine's stage, which keeps each step's own ``next_obs``, the sample's ``next_obs``
    and ``done`` are those of its window's last step, so that ``value_gamma`` discounts the value
    of the state it belongs to.

    Reads ctx: trajectories, trajectory_end_idx.
    Writes ctx: trajectories (n-step samples).
    """
    nstep, gamma = int(cfg.policy.nstep), float(cfg.policy.discount_factor)

    def _enhance(ctx: OnlineRLContext) -> None:
        if not ctx.trajectories:
            return
        ends = ctx.trajectory_end_idx or [len(ctx.trajectories) - 1]
        samples: list[Any] = []
        start = 0
        for end in ends:
            samples.extend(nstep_samples(ctx.trajectories[start : end + 1], nstep, gamma))
            start = end + 1
        ctx.trajectories = samples

    return _enhance
