"""TD3: DDPG with twin critics (the minimum in the target), target policy smoothing and delayed actor
updates. DI-engine's ``TD3Policy`` is its ``DDPGPolicy`` with other defaults, and so is this one."""

from __future__ import annotations

from ding_ray.policy.ddpg import DDPGPolicy
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("td3")
class TD3Policy(DDPGPolicy):
    """``DDPGPolicy`` with ``model.twin_critic``, ``learn.noise`` and ``learn.actor_update_freq=2``."""

    config = dict(
        type="td3",
        model=dict(twin_critic=True),  # clipped double Q: the minimum of two target critics
        learn=dict(
            actor_update_freq=2,  # the actor (and nothing else) steps every second critic step
            noise=True,  # target policy smoothing
            noise_sigma=0.2,
            noise_range=dict(min=-0.5, max=0.5),
        ),
    )
