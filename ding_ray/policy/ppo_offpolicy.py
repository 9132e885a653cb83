"""Off-policy PPO: DI-engine's ``PPOOffPolicy`` (``'ppo_offpolicy'``). The collector computes GAE
advantages per trajectory chunk with the critic of the moment, the samples go into a replay
buffer, and each learn call is one clipped-PPO gradient step on a batch drawn from it (so
``update_per_collect`` steps per collect, in ``serial_pipeline`` like DQN's)."""

from __future__ import annotations

from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.policy.ppo import PPOPolicy
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("ppo_offpolicy")
class PPOOffPolicy(PPOPolicy):
    """PPO's model, forwards, GAE and loss; learning on replayed samples with the advantages,
    values and logits stored at collection (none are recomputed: the data may be several
    updates old, and the clipped ratio against the stored logit bounds each step)."""

    initial_log_sigma = -2.0  # DI-engine's PPOOffPolicy starts its Gaussian actor narrower than PPO's
    # Over PPOPolicy's config, DI-engine's PPOOffPolicy defaults:
    config = dict(
        type="ppo_offpolicy",
        on_policy=False,
        recompute_adv=False,  # only False: the stored advantages are used
        nstep_return=False,  # DI-engine's n-step value target (not supported yet; True is an error)
        nstep=3,  # its n (read only with nstep_return)
        learn=dict(
            epoch_per_collect=1,  # only 1: one gradient step per learn call
            update_per_collect=5,  # gradient steps per collect call (serial pipeline)
            batch_size=64,  # samples per gradient step
            learning_rate=0.001,
            entropy_weight=0.01,
            adv_norm=False,
            weight_decay=0.0,  # DI-engine's key; its off-policy PPO does not use it either
            # dizoo's lunarlander_offppo_config puts these here; DI-engine reads policy.nstep and
            # policy.nstep_return and ignores them, and so does ding_ray
            nstep=None,
            nstep_return=None,
        ),
        other=dict(
            replay_buffer=dict(replay_buffer_size=10000),
        ),
    )

    def __init__(self, cfg: dict, model: Any = None, enable_field: Any = None) -> None:
        learn = cfg.get("learn") or {}
        if cfg.get("recompute_adv") or learn.get("epoch_per_collect", 1) != 1:
            raise ConfigError(
                "ppo_offpolicy trains one step per learn call on replayed samples with their stored "
                "advantages: leave policy.recompute_adv=False and policy.learn.epoch_per_collect=1."
            )
        super().__init__(cfg, model, enable_field)

    def _forward_learn(self, data: Any) -> dict[str, Any] | list[dict[str, Any]]:
        """One gradient step on ``data`` (the learner's ``batch_size`` samples): PPO's learn with one
        epoch and the stored advantages; its log dict (a list, one per step, for a larger batch)."""
        logs = super()._forward_learn(data)
        return logs[0] if len(logs) == 1 else logs
