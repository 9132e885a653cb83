"""Pure RL math: tensors in, tensors out, no state."""

from ding_ray.rl_utils.exploration import get_epsilon_greedy_fn
from ding_ray.rl_utils.gae import gae, gae_data
from ding_ray.rl_utils.ppo import (
    ppo_data,
    ppo_error,
    ppo_error_continuous,
    ppo_info,
    ppo_loss,
    ppo_policy_data,
    ppo_policy_error,
    ppo_policy_error_continuous,
    ppo_value_data,
    ppo_value_error,
)
from ding_ray.rl_utils.sac import (
    discrete_sac_policy_loss,
    sac_alpha_loss,
    sac_critic_loss,
    sac_policy_loss,
    soft_q_target,
    soft_update,
    tanh_gaussian_sample,
)
from ding_ray.rl_utils.td import double_dqn_next_value, nstep_td_target, q_nstep_td_error, td_loss
from ding_ray.rl_utils.vtrace import (
    compute_importance_weights,
    vtrace,
    vtrace_advantage,
    vtrace_data,
    vtrace_error_continuous_action,
    vtrace_error_discrete_action,
    vtrace_loss,
    vtrace_nstep_return,
    vtrace_returns,
)

__all__ = [
    "compute_importance_weights",
    "discrete_sac_policy_loss",
    "double_dqn_next_value",
    "gae",
    "gae_data",
    "get_epsilon_greedy_fn",
    "nstep_td_target",
    "ppo_data",
    "ppo_error",
    "ppo_error_continuous",
    "ppo_info",
    "ppo_loss",
    "ppo_policy_data",
    "ppo_policy_error",
    "ppo_policy_error_continuous",
    "ppo_value_data",
    "ppo_value_error",
    "q_nstep_td_error",
    "sac_alpha_loss",
    "sac_critic_loss",
    "sac_policy_loss",
    "soft_q_target",
    "soft_update",
    "tanh_gaussian_sample",
    "td_loss",
    "vtrace",
    "vtrace_advantage",
    "vtrace_data",
    "vtrace_error_continuous_action",
    "vtrace_error_discrete_action",
    "vtrace_loss",
    "vtrace_nstep_return",
    "vtrace_returns",
]
