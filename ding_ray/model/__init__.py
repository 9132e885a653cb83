"""Torch modules and ``create_model``."""

from ding_ray.model.common import MLP, DiscreteHead, DuelingHead, FCEncoder
from ding_ray.model.conv import ConvEncoder
from ding_ray.model.discrete_qac import DiscreteQAC
from ding_ray.model.factory import create_model
from ding_ray.model.q_network import DQN
from ding_ray.model.qac import ContinuousQAC
from ding_ray.model.vac import VAC

__all__ = [
    "ContinuousQAC",
    "ConvEncoder",
    "DQN",
    "DiscreteQAC",
    "MLP",
    "VAC",
    "DiscreteHead",
    "DuelingHead",
    "FCEncoder",
    "create_model",
]
