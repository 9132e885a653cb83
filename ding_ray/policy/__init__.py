"""Policies: the ``Policy`` base with learn/collect/eval modes, the registry, and the algorithms."""

from ding_ray.policy.a2c import A2CPolicy
from ding_ray.policy.base import CommandModePolicy, Policy, create_policy, get_policy_cls
from ding_ray.policy.bc import BehaviourCloningPolicy
from ding_ray.policy.c51 import C51Policy
from ding_ray.policy.cql import CQLPolicy, DiscreteCQLPolicy
from ding_ray.policy.ddpg import DDPGPolicy
from ding_ray.policy.discrete_sac import DiscreteSACPolicy
from ding_ray.policy.dqn import DQNPolicy
from ding_ray.policy.impala import IMPALAPolicy
from ding_ray.policy.iqn import IQNPolicy
from ding_ray.policy.ppo import PPOPolicy
from ding_ray.policy.ppo_offpolicy import PPOOffPolicy
from ding_ray.policy.qrdqn import QRDQNPolicy
from ding_ray.policy.rainbow import RainbowDQNPolicy
from ding_ray.policy.sac import SACPolicy
from ding_ray.policy.td3 import TD3Policy
from ding_ray.utils.registry import POLICY_REGISTRY

__all__ = [
    "POLICY_REGISTRY",
    "A2CPolicy",
    "BehaviourCloningPolicy",
    "C51Policy",
    "CommandModePolicy",
    "CQLPolicy",
    "DDPGPolicy",
    "DiscreteCQLPolicy",
    "DiscreteSACPolicy",
    "DQNPolicy",
    "IMPALAPolicy",
    "IQNPolicy",
    "PPOOffPolicy",
    "PPOPolicy",
    "Policy",
    "QRDQNPolicy",
    "RainbowDQNPolicy",
    "SACPolicy",
    "TD3Policy",
    "create_policy",
    "get_policy_cls",
]
