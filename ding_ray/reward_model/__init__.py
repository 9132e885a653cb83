"""Reward models: components that rewrite the rewards of training data (DI-engine's ``ding.reward_model``)."""

from ding_ray.reward_model.her import HerRewardModel

__all__ = ["HerRewardModel"]
