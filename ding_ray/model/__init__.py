"""Torch modules and ``create_model``."""

# This facade installs DI-engine's parameter names (checkpoints saved by DI-engine load into these
# models); the models themselves know only ding_ray.model.foreign_state.
import ding_ray.compat.di_engine_names  # noqa: F401
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
