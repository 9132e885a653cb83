"""Torch modules and ``create_model``."""

from ding_ray.model.common import MLP, DiscreteHead, DuelingHead, FCEncoder
from ding_ray.model.factory import create_model
from ding_ray.model.q_network import DQN

__all__ = ["DQN", "MLP", "DiscreteHead", "DuelingHead", "FCEncoder", "create_model"]
