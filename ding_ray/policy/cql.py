"""Conservative Q-learning (Kumar et al., 2020, arXiv:2006.04779): DI-engine's ``CQLPolicy`` (``'cql'``,
continuous actions, on SAC) and ``DiscreteCQLPolicy`` (``'discrete_cql'``, on QR-DQN).

Both add to the critic's TD loss a penalty that lowers the Q-values of actions the data does not
hold and raises those of the actions it does, so that a policy learned from a fixed dataset does not
pick actions whose values nothing in the data corrects. They train offline
(``serial_pipeline_offline``); collect and eval are SAC's and QR-DQN's.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from ding_ray.errors import ConfigError
from ding_ray.policy.optim import make_adam
from ding_ray.policy.qrdqn import QRDQNPolicy
from ding_ray.policy.sac import SACPolicy, uniform_init
from ding_ray.utils.registry import POLICY_REGISTRY

# The largest Lagrange multiplier of the penalty (DI-engine's clamp of exp(log_alpha_prime)).
ALPHA_PRIME_MAX = 1e6


@POLICY_REGISTRY.register("cql")
class CQLPolicy(SACPolicy):
    """Learn: SAC's step, the critics' TD targets without the entropy term (``with_q_entropy``), and
    each critic's loss plus ``min_q_weight * (logsumexp_a Q(s, a) - Q(s, a_data))``, the log-sum-exp
    estimated by importance sampling over ``num_actions`` uniform actions and ``num_actions`` of the
    policy's at ``s`` and at ``s'`` (DI-engine's ``min_q_version`` 3). With ``with_lagrange`` and a
    positive ``lagrange_thresh`` the penalty's weight is a learned multiplier that holds the gap near
    the threshold. Collect: a sample of the squashed Gaussian. Eval: ``tanh(mu)``."""

    # Over SACPolicy's config, DI-engine's CQLPolicy defaults:
    config = dict(
        type="cql",
        model=dict(actor_head_hidden_size=256, critic_head_hidden_size=256),
        learn=dict(
            num_actions=10,  # actions sampled per state for the penalty (uniform; the policy's at s, at s')
            # learn the penalty's weight (a Lagrange multiplier, lr learning_rate_q) so that the gap
            # stays near lagrange_thresh (> 0)
            with_lagrange=False,
            lagrange_thresh=-1.0,  # the target of the conservative gap with with_lagrange
            min_q_weight=1.0,  # weight of the conservative penalty in each critic's loss
            with_q_entropy=False,  # subtract alpha * log pi(a'|s') in the TD target's next value (SAC's)
            train_epoch=None,  # passes over the dataset (collect.data_path) of the offline entries
        ),
    )

    def _init_learn(self) -> None:
        super()._init_learn()
        learn = self._cfg.learn
        self._num_actions = int(learn.num_actions)
        self._min_q_weight = float(learn.min_q_weight)
        self._lagrange_thresh = float(learn.lagrange_thresh)
        self._with_lagrange = bool(learn.with_lagrange)
        if self._with_lagrange:
            # DI-engine's code means a multiplier only for a positive threshold (0.5.3 reads
            # lagrange_thresh before it sets it: an AttributeError with with_lagrange=True).
            if self._lagrange_thresh <= 0:
                raise ConfigError(
                    f"policy.learn.with_lagrange=True needs lagrange_thresh > 0 (the conservative gap the "
                    f"learned multiplier holds the penalty at), got {learn.lagrange_thresh}: set it "
                    "(CQL's paper uses 5 or 10) or set with_lagrange=False for the fixed min_q_weight."
                )
            self._log_alpha_prime = torch.zeros((), device=self._device, requires_grad=True)
            self._alpha_prime_optim = make_adam([self._log_alpha_prime], learn.learning_rate_q)

    def _init_output_layers(self) -> None:
        super()._init_output_layers()
        # DI-engine's CQL starts each critic's output layer small too, after the actor's (a model of
        # one's own without ContinuousQAC's MLP critics keeps its layers as they are).
        critics = getattr(self._model, "critic", ())
        last = tuple(critic.layers[-1] for critic in critics if hasattr(critic, "layers"))
        uniform_init(last, self._cfg.learn.init_w)

    def _next_value_alpha(self) -> torch.Tensor | float:
        return self._alpha if self._cfg.learn.with_q_entropy else 0.0

    def _critic_losses(
        self,
        q_value: torch.Tensor | list[torch.Tensor],
        q_target: torch.Tensor,
        weight: torch.Tensor | None,
        obs: torch.Tensor,
        next_obs: torch.Tensor,
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        losses, td_error = super()._critic_losses(q_value, q_target, weight, obs, next_obs)
        q_values = [q_value] if isinstance(q_value, torch.Tensor) else list(q_value)
        gaps = self._conservative_gaps(q_values, obs, next_obs)
        if self._with_lagrange:
            gaps = self._lagrange_step(gaps)
        return [loss + gap for loss, gap in zip(losses, gaps)], td_error

    def _conservative_gaps(
        self, q_values: list[torch.Tensor], obs: torch.Tensor, next_obs: torch.Tensor
    ) -> list[torch.Tensor]:
        """Per critic, ``min_q_weight * (mean_s logsumexp_a Q(s, a) - mean Q(s, a_data))``."""
        n, batch = self._num_actions, len(obs)
        obs_n = obs.repeat_interleave(n, 0)  # each state n times in a row
        # The sampled actions take no gradient: only the critics learn from the penalty. The random
        # draws come in DI-engine's order (torch's global generator; the uniform ones on the CPU).
        with torch.no_grad():
            policy_action, policy_log_prob = self._sample_actions(obs_n)
            next_action, next_log_prob = self._sample_actions(next_obs.repeat_interleave(n, 0))
            random_action = torch.empty(policy_action.shape).uniform_(-1, 1).to(policy_action.device)
        random_log_density = math.log(0.5 ** policy_action.shape[-1])  # uniform on [-1, 1]^A
        q_random = self._critic_table(obs_n, random_action, batch)
        q_next = self._critic_table(obs_n, next_action, batch)
        q_policy = self._critic_table(obs_n, policy_action, batch)
        gaps = []
        for q_data, q_r, q_n, q_p in zip(q_values, q_random, q_next, q_policy):
            importance_sampled = torch.cat(
                [
                    q_r - random_log_density,
                    q_n - next_log_prob.view(batch, n),
                    q_p - policy_log_prob.view(batch, n),
                ],
                dim=1,
            )
            logsumexp = torch.logsumexp(importance_sampled, dim=1).mean()
            gaps.append(logsumexp * self._min_q_weight - q_data.mean() * self._min_q_weight)
        return gaps

    def _critic_table(self, obs_n: torch.Tensor, action: torch.Tensor, batch: int) -> list[torch.Tensor]:
        """Each critic's values of ``num_actions`` actions per state, [batch, num_actions]."""
        q = self._learn_model.compute_critic({"obs": obs_n, "action": action})["q_value"]
        return [value.view(batch, self._num_actions) for value in ([q] if isinstance(q, torch.Tensor) else q)]

    def _lagrange_step(self, gaps: list[torch.Tensor]) -> list[torch.Tensor]:
        """One step of the multiplier ``alpha' = exp(log_alpha_prime)`` up while the gaps exceed
        ``lagrange_thresh`` and down below it; the penalties ``alpha' * (gap - lagrange_thresh)``
        with the multiplier before the step, as the critics' loss takes them."""
        alpha_prime = self._log_alpha_prime.exp().clamp(0.0, ALPHA_PRIME_MAX)
        excess = [gap.detach() - self._lagrange_thresh for gap in gaps]
        alpha_prime_loss = -alpha_prime * (sum(excess) / len(excess))
        self._alpha_prime_optim.zero_grad(set_to_none=True)
        alpha_prime_loss.backward()
        self._alpha_prime_optim.step()
        alpha_prime = alpha_prime.detach()
        return [alpha_prime * (gap - self._lagrange_thresh) for gap in gaps]

    def _state_dict_learn(self) -> dict[str, Any]:
        state = super()._state_dict_learn()
        if self._with_lagrange:
            state["log_alpha_prime"] = self._log_alpha_prime.detach().clone()
            state["optimizer_alpha_prime"] = self._alpha_prime_optim.state_dict()
        return state

    def _learn_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers = super()._learn_optimizers()
        if self._with_lagrange:
            optimizers["optimizer_alpha_prime"] = self._alpha_prime_optim
        return optimizers

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        super()._load_state_dict_learn(state_dict)
        if self._with_lagrange and "log_alpha_prime" in state_dict:
            with torch.no_grad():
                self._log_alpha_prime.copy_(state_dict["log_alpha_prime"])
        if self._with_lagrange and "optimizer_alpha_prime" in state_dict:
            self._alpha_prime_optim.load_state_dict(copy.deepcopy(state_dict["optimizer_alpha_prime"]))


@POLICY_REGISTRY.register("discrete_cql")
class DiscreteCQLPolicy(QRDQNPolicy):
    """Learn: QR-DQN's n-step quantile loss plus ``min_q_weight * (mean_s logsumexp_a Q(s, a) -
    mean Q(s, a_data))`` on the quantiles' means. Collect: epsilon-greedy. Eval: greedy."""

    # Over QRDQNPolicy's config, DI-engine's DiscreteCQLPolicy defaults:
    config = dict(
        type="discrete_cql",
        learn=dict(
            update_per_collect=1,
            min_q_weight=1.0,  # weight of the conservative penalty in the loss
            train_epoch=None,  # passes over the dataset (collect.data_path) of the offline entries
        ),
    )

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "q_target", "q_value"]

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        data = self._nstep_inputs(batch)
        output, target, next_action = self._forward_online_and_target(data)
        loss, td_error_per_sample = self._quantile_loss(output, target, next_action, data)
        q = output["q"].mean(-1)  # [B, A]: each action's mean return
        q_data = q.gather(1, data["action"].unsqueeze(1)).squeeze(1)
        gap = torch.logsumexp(q, dim=1).mean() - q_data.mean()
        loss = loss + float(self._cfg.learn.min_q_weight) * gap
        logged = {"q_target": target["q"].mean(), "q_value": output["q"].detach().mean()}
        return loss, td_error_per_sample, logged
