"""Discrete SAC: a categorical actor, twin soft Q critics (one Q-value per action) with Polyak
targets, and a fixed or learned temperature. Names and config keys are DI-engine's
``DiscreteSACPolicy`` (``'discrete_sac'``); the temperature, optimizers, target critics and
state dicts are SAC's (``SACPolicy``), the losses take expectations over the actions instead of
samples."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ding_ray.errors import ConfigError
from ding_ray.policy.base import Policy
from ding_ray.policy.common import check_finite_loss, set_mode, to_tensor_batch
from ding_ray.policy.sac import SACPolicy
from ding_ray.rl_utils import (
    discrete_sac_policy_loss,
    sac_critic_loss,
    soft_q_target,
    soft_update,
)
from ding_ray.utils.registry import POLICY_REGISTRY

# DI-engine's discrete SAC log keys and meanings: q_value_1 / q_value_2 are the target critics'
# means over all actions of the next states, target_value the soft value of the next state
_LOG_KEYS = (
    "policy_loss",
    "alpha_loss",
    "alpha",
    "target_value",
    "q_value_1",
    "q_value_2",
    "td_error",
    "entropy",
)


@POLICY_REGISTRY.register("discrete_sac")
class DiscreteSACPolicy(SACPolicy):
    """Learn: the soft value of the next state is the expectation over the actor's distribution of
    ``min Q_target - alpha log pi`` (no sampling: the actions are few); the actor minimises
    ``E_pi[alpha log pi - min Q]``; alpha moves the expected ``-log pi`` toward ``target_entropy``.
    Collect: with probability ``eps`` (one draw per step, for all envs, as DI-engine's
    ``eps_greedy_multinomial_sample``) uniform actions, else a sample of the actor. Eval: argmax.

    Collect and eval forwards return ``{env_id: {'action': 0-d tensor, 'logit': [A]}}``.
    """

    action_space = "discrete"
    squashed_actions = False
    # Over SACPolicy's config (the same keys, DI-engine's discrete SAC has them too):
    config = dict(
        type="discrete_sac",
        # True: the first random_collect_size steps are the policy's own (DI-engine keeps the
        # policy's outputs, which discrete SAC's transitions carry, in them)
        transition_with_policy_data=True,
        model=dict(twin_critic=True),  # kwargs of DiscreteQAC (free-form); two critics, as DI-engine's
        learn=dict(
            target_entropy=None,  # None: -action_shape (DI-engine's choice)
            init_w=3e-3,  # DI-engine's key; its discrete SAC does not use it either
        ),
        collect=dict(
            collector_logit=False,  # DI-engine's key; transitions always keep the actor's logit
            env_num=None,  # dizoo's discrete SAC configs repeat the env count here; nothing reads it
        ),
        eval=dict(env_num=None),  # likewise
        other=dict(
            # exploration by env step, dict(type='exp'|'linear', start, end, decay) as DQN's; None:
            # no uniform actions, the actor's samples only
            eps=None,
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "discrete_qac", ["ding_ray.model.discrete_qac"]

    @classmethod
    def default_config(cls) -> Any:
        cfg = super().default_config()
        cfg.model.pop("action_space")  # SAC's reparameterization actor; a categorical one has no such key
        return cfg

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        if cfg.multi_agent:
            raise ConfigError(
                "policy.multi_agent=True (DI-engine's multi-agent discrete SAC) is not supported yet: "
                "ding_ray's discrete SAC is single-agent. Set multi_agent=False."
            )
        if int(cfg.collect.unroll_len) != 1:
            raise ConfigError(
                f"policy.collect.unroll_len={cfg.collect.unroll_len} is not supported by discrete SAC; use 1."
            )
        cfg.model.setdefault("twin_critic", True)  # a config compiled before it was a default
        return Policy._create_model(self, cfg, model)  # SAC's would give the model action_space

    # ----- learn (set up by SACPolicy._init_learn) -----------------------------------------
    def _forward_learn(self, data: Any) -> dict[str, Any]:
        learn = self._cfg.learn
        batch = to_tensor_batch(data, self._device)
        obs, next_obs = batch["obs"], batch["next_obs"]
        reward = batch["reward"].reshape(-1)
        done = torch.zeros_like(reward) if learn.ignore_done else batch["done"].reshape(-1)
        weight = batch.get("IS") if self._cfg.priority_IS_weight else None
        action = batch["action"].reshape(-1, 1)
        model, alpha = self._learn_model, self._alpha
        set_mode(model, True)

        # ----- critics: the soft value of next_obs is an expectation over the actor's distribution
        with torch.no_grad():
            next_log_prob = F.log_softmax(model.compute_actor(next_obs)["logit"], dim=-1)
            next_prob = next_log_prob.exp()
            next_q = self._target_model.compute_critic(next_obs)["q_value"]
            next_q_all = next_q if isinstance(next_q, list) else [next_q]
            target_q = (next_prob * _min_q(next_q)).sum(-1)
            q_target, next_value = soft_q_target(
                target_q, (next_prob * next_log_prob).sum(-1), reward, done, self._gamma, alpha
            )
        q_all = model.compute_critic(obs)["q_value"]
        q_all = q_all if isinstance(q_all, list) else [q_all]
        q_taken = [q.gather(1, action).squeeze(1) for q in q_all]
        critic_losses, td_error = sac_critic_loss(q_taken, q_target, weight)
        critic_loss = sum(critic_losses)
        check_finite_loss(critic_loss, batch, "discrete SAC critic")
        self._optimizer_q.zero_grad(set_to_none=True)
        critic_loss.backward()
        self._optimizer_q.step()

        # ----- actor, judged by the critics just updated (no gradient into them)
        log_prob = F.log_softmax(model.compute_actor(obs)["logit"], dim=-1)
        prob = log_prob.exp()
        with torch.no_grad():
            q_new = _min_q(model.compute_critic(obs)["q_value"])
        policy_loss = discrete_sac_policy_loss(prob, log_prob, q_new, alpha)
        self._optimizer_policy.zero_grad(set_to_none=True)
        policy_loss.backward()
        self._optimizer_policy.step()

        # the temperature: the expected log-probability plays the continuous one's sample
        alpha_loss = self._temperature_step((prob.detach() * log_prob.detach()).sum(-1))

        soft_update(self._target_params, self._source_params, float(learn.target_theta))
        # DI-engine logs the entropy of the collecting actor (the transitions' logit)
        behaviour_logit = batch.get("logit", log_prob.detach())
        entropy = torch.distributions.Categorical(logits=behaviour_logit).entropy().mean()
        stats = torch.stack(
            [
                policy_loss.detach(),
                alpha_loss.detach().reshape(()),
                self._alpha.reshape(()),
                next_value.mean(),
                next_q_all[0].mean(),
                next_q_all[-1].mean(),
                td_error.mean(),
                entropy,
            ]
        ).tolist()
        return self._learn_output(_LOG_KEYS, stats, critic_losses, td_error)

    def _monitor_vars_learn(self) -> list[str]:
        twin = ["twin_critic_loss"] if self._twin_critic else []
        return ["cur_lr_q", "cur_lr_p", "total_loss", "critic_loss", *twin, *_LOG_KEYS]

    # ----- collect ----------------------------------------------------------------------------
    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], eps: float = 0.0) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        logit = self._collect_model.compute_actor(obs)["logit"]
        g = self._collect_generator
        if eps > 0 and torch.rand((), generator=g, device=logit.device) < eps:
            action = torch.randint(logit.shape[-1], logit.shape[:1], generator=g, device=logit.device)
        else:
            action = torch.multinomial(torch.softmax(logit, dim=-1), 1, generator=g).squeeze(-1)
        return env_ids, {"logit": logit, "action": action}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep, "logit")

    # ----- eval -------------------------------------------------------------------------------
    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        logit = self._eval_model.compute_actor(obs)["logit"]
        return {"logit": logit, "action": logit.argmax(-1)}


def _min_q(q: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
    """The twin critics' elementwise minimum (one critic: its values)."""
    return torch.min(*q) if isinstance(q, list) else q
