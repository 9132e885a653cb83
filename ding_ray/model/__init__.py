"""Torch modules and ``create_model``."""

# This facade installs DI-engine's parameter names (checkpoints saved by DI-engine load into these
# models); the models themselves know only ding_ray.model.foreign_state.
import ding_ray.compat.di_engine_names  # noqa: F401
from ding_ray.model.bc import ContinuousBC, DiscreteBC
from ding_ray.model.common import MLP, DiscreteHead, DuelingHead, FCEncoder
from ding_ray.model.conv import ConvEncoder
from ding_ray.model.discrete_qac import DiscreteQAC
from ding_ray.model.distributional import (
    C51DQN,
    IQN,
    QRDQN,
    DistributionHead,
    QRDQNHead,
    QuantileHead,
    RainbowDQN,
    RainbowHead,
)
from ding_ray.model.drqn import DRQN
from ding_ray.model.factory import create_model
from ding_ray.model.noisy import NoiseLinearLayer, reset_noise
from ding_ray.model.q_network import DQN
from ding_ray.model.qac import ContinuousQAC
from ding_ray.model.vac import VAC
from ding_ray.model.wrapper import IModelWrapper, model_wrap, register_wrapper

__all__ = [
    "C51DQN",
    "ContinuousBC",
    "DiscreteBC",
    "ContinuousQAC",
    "ConvEncoder",
    "DQN",
    "DRQN",
    "DiscreteQAC",
    "IQN",
    "QRDQN",
    "RainbowDQN",
    "MLP",
    "VAC",
    "DiscreteHead",
    "DistributionHead",
    "DuelingHead",
    "NoiseLinearLayer",
    "QRDQNHead",
    "QuantileHead",
    "RainbowHead",
    "FCEncoder",
    "create_model",
    "IModelWrapper",
    "model_wrap",
    "register_wrapper",
    "reset_noise",
]
