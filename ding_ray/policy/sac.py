"""SAC: tanh-squashed Gaussian actor, twin soft Q critics with Polyak targets, learned temperature.

Names and config keys are DI-engine's ``SACPolicy`` (continuous actions). Actions leave the policy
in [-1, 1] (tanh); as in DI-engine, mapping them onto the env's bounds is the env's job
(``env.act_scale=True``). The warm-up is the policy's own (``transition_with_policy_data``), so every
action in the replay buffer is in the units the critic is trained on.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from ding_ray.errors import ConfigError
from ding_ray.policy.base import Policy
from ding_ray.policy.common import check_finite_loss, polyak_target, set_mode, to_tensor_batch
from ding_ray.policy.optim import make_adam
from ding_ray.rl_utils import (
    sac_alpha_loss,
    sac_critic_loss,
    sac_policy_loss,
    soft_q_target,
    soft_update,
    tanh_gaussian_sample,
)
from ding_ray.utils.registry import POLICY_REGISTRY

# DI-engine's SAC log keys and meanings: critic_loss is the first critic's (twin_critic_loss the
# second's), target_q_value the soft value of the next state, td_error the squared TD error, and
# transformed_log_prob log pi + target_entropy when alpha is learned
_LOG_KEYS = (
    "policy_loss",
    "alpha_loss",
    "alpha",
    "target_q_value",
    "q_value",
    "transformed_log_prob",
    "td_error",
)


@POLICY_REGISTRY.register("sac")
class SACPolicy(Policy):
    """Learn: soft Q targets from the twin target critics, reparameterized policy loss, alpha tuned
    toward ``target_entropy``. Collect: a sample of the squashed Gaussian. Eval: ``tanh(mu)``.

    Collect and eval forwards return ``{env_id: {'action': float32 [A], 'logit': [mu, sigma]}}``.
    """

    action_space = "continuous"
    columnar_collect = True  # _collect_columns and _eval_tensors: forwards of all envs at once
    columnar_eval = True
    squashed_actions = True  # actions in [-1, 1]: a wider Box needs env.act_scale=True
    config = dict(
        type="sac",
        on_policy=False,
        priority=False,  # return the per-sample squared TD error as 'priority' (DI-engine's)
        priority_IS_weight=False,  # weight the critic loss by the buffer's importance-sampling weights 'IS'
        random_collect_size=10000,  # env steps collected before training, with the untrained policy
        # True (DI-engine's SAC): the random_collect_size steps are the policy's own collect forward
        # with its initial weights (tanh of a sample of about N(0, 1)), not uniform random actions
        transition_with_policy_data=True,
        multi_agent=False,  # MASAC (not supported; True is an error)
        # kwargs of the model (free-form); DI-engine's SAC defaults: two critics (the minimum in targets
        # and policy loss) and the reparameterization actor, in the compiled config as in DI-engine's
        # (a script that builds ContinuousQAC(**cfg.policy.model) itself gets them too)
        model=dict(twin_critic=True, action_space="reparameterization"),
        learn=dict(
            update_per_collect=1,  # gradient steps per collect call (serial pipeline)
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,  # Polyak rate of the target critics
            discount_factor=0.99,  # gamma
            alpha=0.2,  # entropy temperature (its start value with auto_alpha)
            auto_alpha=True,  # learn alpha so that the policy's entropy approaches target_entropy
            log_space=True,  # learn log(alpha) instead of alpha
            target_entropy=None,  # None: -action_dim
            ignore_done=False,  # bootstrap through terminal states too (envs that only time out)
            init_w=3e-3,  # the actor's output layers start uniform in [-init_w, init_w]
            reparameterization=True,  # DI-engine's flag; the policy loss is always reparameterized here
            num_threads=1,  # torch intra-op threads of the process that trains
        ),
        collect=dict(
            n_sample=1,  # transitions per collect call
            unroll_len=1,  # only 1
            collector_logit=False,  # DI-engine's flag: keep the actor's [mu, sigma] in transitions
        ),
        eval=dict(),
        other=dict(
            replay_buffer=dict(replay_buffer_size=1000000),
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "continuous_qac", ["ding_ray.model.qac"]

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        # Checked here, before a model is built from a config it cannot serve.
        if cfg.multi_agent:
            raise ConfigError(
                "policy.multi_agent=True (MASAC) is not supported: ding_ray's SAC is single-agent. "
                "Set multi_agent=False."
            )
        if int(cfg.collect.unroll_len) != 1:
            raise ConfigError(
                f"policy.collect.unroll_len={cfg.collect.unroll_len} is not supported by SAC; use 1."
            )
        if not cfg.learn.reparameterization:
            raise ConfigError(
                "policy.learn.reparameterization=False is not supported: ding_ray's SAC always uses "
                "the reparameterized policy gradient. Set it to True."
            )
        # defaults now; a config compiled (and saved with a run) before they were lacks them
        cfg.model.setdefault("twin_critic", True)
        cfg.model.setdefault("action_space", "reparameterization")
        return super()._create_model(cfg, model)

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        model = self._model
        self._init_output_layers()
        self._learn_model = model
        self._twin_critic = bool(getattr(model, "twin_critic", self._cfg.model.get("twin_critic", False)))
        self._gamma = float(learn.discount_factor)
        self._optimizer_q = make_adam(model.critic.parameters(), learn.learning_rate_q)
        self._optimizer_policy = make_adam(model.actor.parameters(), learn.learning_rate_policy)
        self._critic_params = list(model.critic.parameters())
        self._auto_alpha = bool(learn.auto_alpha)
        self._log_space = bool(learn.log_space)
        start = torch.tensor([float(learn.alpha)], device=self._device)
        if self._auto_alpha:
            if learn.target_entropy is None:
                self._target_entropy = -float(np.prod(self._cfg.model.action_shape))
            else:
                self._target_entropy = float(learn.target_entropy)
            self._alpha_param = (start.log() if self._log_space else start).requires_grad_()
            self._alpha_optim = make_adam([self._alpha_param], learn.learning_rate_alpha)
        else:
            self._alpha_param = start
        self._alpha = self._current_alpha()
        self._target_model, self._target_params, self._source_params = polyak_target(model)

    def _init_output_layers(self) -> None:
        """Near-zero actor outputs at the start (weights and biases uniform in ``[-init_w, init_w]``):
        mean actions near 0 and sigma near 1 in every state."""
        actor = getattr(self._model, "actor", None)
        if hasattr(actor, "mu") and hasattr(actor, "log_sigma_layer"):
            uniform_init((actor.mu, actor.log_sigma_layer), self._cfg.learn.init_w)

    def _current_alpha(self) -> torch.Tensor:
        alpha = self._alpha_param.detach()
        if self._auto_alpha and self._log_space:
            return alpha.exp()
        return alpha.clamp(min=0.0)  # a learned alpha in linear space must not turn negative

    def _temperature_step(self, log_prob: torch.Tensor) -> torch.Tensor:
        """With ``auto_alpha``, one step of the temperature towards the target entropy given the
        actor's (detached) log-probabilities; the temperature's loss (0 without)."""
        if not self._auto_alpha:
            return torch.zeros(())
        alpha_loss = sac_alpha_loss(self._alpha_param, log_prob, self._target_entropy)
        self._alpha_optim.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self._alpha_optim.step()
        self._alpha = self._current_alpha()
        return alpha_loss

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        learn = self._cfg.learn
        batch = to_tensor_batch(data, self._device)
        obs, next_obs = batch["obs"], batch["next_obs"]
        reward = batch["reward"].reshape(-1)
        done = torch.zeros_like(reward) if learn.ignore_done else batch["done"].reshape(-1)
        weight = batch.get("IS") if self._cfg.priority_IS_weight else None
        action = batch["action"].reshape(len(obs), -1)
        model, alpha = self._learn_model, self._alpha
        set_mode(model, True)

        # ----- critic
        with torch.no_grad():
            # Two actor passes, as DI-engine: one pass over [obs; next_obs] would also backpropagate
            # (zeros) through the next-state half, twice the backward work of the actor.
            next_action, next_log_prob = self._sample_actions(next_obs)
            next_q = self._target_model.compute_critic({"obs": next_obs, "action": next_action})["q_value"]
            next_alpha = self._next_value_alpha()
            q_target, next_value = soft_q_target(next_q, next_log_prob, reward, done, self._gamma, next_alpha)
        q_value = model.compute_critic({"obs": obs, "action": action})["q_value"]
        critic_losses, td_error = self._critic_losses(q_value, q_target, weight, obs, next_obs)
        critic_loss = sum(critic_losses)
        check_finite_loss(critic_loss, batch, "SAC critic")
        self._optimizer_q.zero_grad(set_to_none=True)
        critic_loss.backward()
        self._optimizer_q.step()

        # ----- actor: the critics just updated judge fresh actions; their weights stay put
        new_action, log_prob = self._sample_actions(obs)
        for p in self._critic_params:
            p.requires_grad_(False)
        q_new = model.compute_critic({"obs": obs, "action": new_action})["q_value"]
        policy_loss = sac_policy_loss(log_prob, q_new, alpha)
        self._optimizer_policy.zero_grad(set_to_none=True)
        policy_loss.backward()
        self._optimizer_policy.step()
        for p in self._critic_params:
            p.requires_grad_(True)

        alpha_loss = self._temperature_step(log_prob)
        soft_update(self._target_params, self._source_params, float(learn.target_theta))
        q_mean = torch.stack(q_value).mean() if self._twin_critic else q_value.mean()
        transformed_log_prob = log_prob.detach() + (self._target_entropy if self._auto_alpha else 0.0)
        stats = torch.stack(
            [
                policy_loss.detach(),
                alpha_loss.detach().reshape(()),
                self._alpha.reshape(()),
                next_value.mean(),
                q_mean.detach(),
                transformed_log_prob.mean(),
                td_error.mean(),
            ]
        ).tolist()
        return self._learn_output(_LOG_KEYS, stats, critic_losses, td_error)

    def _sample_actions(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Squashed actions the learn model's actor samples at ``obs`` and their log-densities."""
        mu, sigma = self._learn_model.compute_actor(obs)["logit"]
        return tanh_gaussian_sample(mu, sigma)

    def _next_value_alpha(self) -> torch.Tensor | float:
        """The temperature of the entropy term in the next state's value of the TD target."""
        return self._alpha

    def _critic_losses(
        self,
        q_value: torch.Tensor | list[torch.Tensor],
        q_target: torch.Tensor,
        weight: torch.Tensor | None,
        obs: torch.Tensor,
        next_obs: torch.Tensor,
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Each critic's loss and the per-sample squared TD error (``rl_utils.sac_critic_loss``); a
        policy that regularizes the critics (CQL) adds its terms from the batch's observations."""
        return sac_critic_loss(q_value, q_target, weight)

    def _learn_output(
        self,
        keys: tuple[str, ...],
        stats: list[float],
        critic_losses: list[torch.Tensor],
        td_error: torch.Tensor,
    ) -> dict:
        """One learn step's log, as DI-engine's: ``stats`` under ``keys`` (policy and alpha losses
        first), each critic's loss (``critic_loss``, ``twin_critic_loss``), the learning rates, the
        total of the losses, and the priorities when the buffer asks for them."""
        out = dict(zip(keys, stats))
        critic_losses = torch.stack(critic_losses).detach().tolist()
        out.update(zip(("critic_loss", "twin_critic_loss"), critic_losses))
        out.update(
            cur_lr_q=self._optimizer_q.param_groups[0]["lr"],
            cur_lr_p=self._optimizer_policy.param_groups[0]["lr"],
            total_loss=sum(critic_losses) + stats[0] + stats[1],
        )
        if self._cfg.priority:
            out["priority"] = td_error.cpu().numpy()
        return out

    def _monitor_vars_learn(self) -> list[str]:
        twin = ["twin_critic_loss"] if self._twin_critic else []
        return ["cur_lr_q", "cur_lr_p", "total_loss", "critic_loss", *twin, *_LOG_KEYS]

    def _state_dict_learn(self) -> dict[str, Any]:
        state = {
            "model": self._learn_model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer_q": self._optimizer_q.state_dict(),
            "optimizer_policy": self._optimizer_policy.state_dict(),
            # DI-engine saves only alpha's optimizer; without the value itself a resumed run would
            # restart from learn.alpha.
            "alpha_param": self._alpha_param.detach().clone(),
        }
        if self._auto_alpha:
            state["optimizer_alpha"] = self._alpha_optim.state_dict()
        return state

    def _learn_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers = {"optimizer_q": self._optimizer_q, "optimizer_policy": self._optimizer_policy}
        if self._auto_alpha:
            optimizers["optimizer_alpha"] = self._alpha_optim
        return optimizers

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        self._learn_model.load_state_dict(state_dict["model"])
        self._target_model.load_state_dict(state_dict.get("target_model", state_dict["model"]))
        # Deep copies: torch keeps loaded CPU optimizer tensors as they are, which would share
        # Adam's moments with the policy the state dict came from.
        if "optimizer_q" in state_dict:
            self._optimizer_q.load_state_dict(copy.deepcopy(state_dict["optimizer_q"]))
        if "optimizer_policy" in state_dict:
            self._optimizer_policy.load_state_dict(copy.deepcopy(state_dict["optimizer_policy"]))
        if "alpha_param" in state_dict:
            with torch.no_grad():
                self._alpha_param.copy_(state_dict["alpha_param"])
            self._alpha = self._current_alpha()
        if self._auto_alpha and "optimizer_alpha" in state_dict:
            self._alpha_optim.load_state_dict(copy.deepcopy(state_dict["optimizer_alpha"]))

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model
        self._unroll_len = int(self._cfg.collect.unroll_len)
        # Seeded from torch's global generator so that set_pkg_seed makes collection reproducible.
        self._collect_generator = torch.Generator(device=self._device).manual_seed(
            int(torch.randint(2**31, ()).item())
        )

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        mu, sigma = self._collect_model.compute_actor(obs)["logit"]
        noise = torch.randn(mu.shape, generator=self._collect_generator, device=mu.device)
        return env_ids, {"action": torch.tanh(mu + sigma * noise), "logit": [mu, sigma]}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        step = self._transition(obs, policy_output, timestep)
        if self._cfg.collect.collector_logit and "logit" in policy_output:
            step["logit"] = policy_output["logit"]
        return step

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions  # unroll_len is 1: one sample per transition

    # ----- eval -------------------------------------------------------------------------------

    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        mu, sigma = self._eval_model.compute_actor(obs)["logit"]
        return {"action": torch.tanh(mu), "logit": [mu, sigma]}


def uniform_init(layers: tuple[torch.nn.Module, ...], bound: float) -> None:
    """Each layer's weight and bias drawn uniform in ``[-bound, bound]``, in that order."""
    for layer in layers:
        torch.nn.init.uniform_(layer.weight, -bound, bound)
        torch.nn.init.uniform_(layer.bias, -bound, bound)
