"""DDPG: a deterministic tanh actor and a Q critic with Polyak targets, Gaussian exploration noise.

Names, config keys and semantics are DI-engine's ``DDPGPolicy``; TD3 (``policy/td3.py``) is this
policy with twin critics, target policy smoothing and delayed actor updates switched on. Actions
leave the policy in [-1, 1]; mapping them onto the env's bounds is the env's job
(``env.act_scale=True``), as for SAC.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from ding_ray.errors import ConfigError
from ding_ray.policy.base import Policy
from ding_ray.policy.common import check_finite_loss, polyak_target, set_mode, to_tensor_batch
from ding_ray.policy.optim import make_adam
from ding_ray.rl_utils import deterministic_q_target, gaussian_action_noise, sac_critic_loss, soft_update
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("ddpg")
class DDPGPolicy(Policy):
    """Learn: the critic(s) regress on ``r + gamma * (1 - done) * Q'(s', mu'(s'))`` (target networks,
    with TD3's clipped noise on ``mu'`` when ``learn.noise``); every ``actor_update_freq``-th step
    the actor ascends the first critic's Q. Collect: ``clamp(mu(s) + N(0, collect.noise_sigma), -1,
    1)``. Eval: ``mu(s)``. Collect and eval forwards return ``{env_id: {'action': float32 [A]}}``.
    """

    action_space = "continuous"
    columnar_collect = True
    columnar_eval = True
    squashed_actions = True  # actions in [-1, 1]: a wider Box needs env.act_scale=True
    config = dict(
        type="ddpg",
        on_policy=False,
        priority=False,  # return the per-sample squared TD error as 'priority'
        priority_IS_weight=False,  # weight the critic loss by the buffer's importance-sampling weights 'IS'
        random_collect_size=25000,  # env steps of uniform random actions collected before training
        transition_with_policy_data=False,  # the random_collect_size steps are uniform, not the policy's
        action_space="continuous",  # DI-engine's 'hybrid' (parameterised actions) is not supported
        reward_batch_norm=False,  # standardise each batch's rewards (mean 0, std 1) before the target
        multi_agent=False,  # MADDPG (not supported; True is an error)
        # kwargs of the model (free-form): DDPG's actor is deterministic ('regression'), one critic
        model=dict(twin_critic=False, action_space="regression"),
        learn=dict(
            update_per_collect=1,  # gradient steps per collect call (serial pipeline)
            batch_size=256,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            ignore_done=False,  # bootstrap through terminal states too (envs that only time out)
            target_theta=0.005,  # Polyak rate of the target actor and critic(s)
            discount_factor=0.99,  # gamma
            actor_update_freq=1,  # one actor step per this many critic steps (TD3: 2)
            noise=False,  # target policy smoothing: noise on the target actor's action (TD3: True)
            noise_sigma=0.2,  # with noise: std of the Gaussian smoothing noise, in [-1, 1] action units
            noise_range=dict(min=-0.5, max=0.5),  # with noise: the noise is clipped to [min, max]
        ),
        collect=dict(
            n_sample=1,  # transitions per collect call
            unroll_len=1,  # only 1
            noise_sigma=0.1,  # std of the Gaussian exploration noise added to the actor's action
        ),
        eval=dict(),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "continuous_qac", ["ding_ray.model.qac"]

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        name = type(self).__name__
        if cfg.multi_agent:
            raise ConfigError(f"policy.multi_agent=True is not supported by {name}: set multi_agent=False.")
        if cfg.action_space != "continuous":
            raise ConfigError(
                f"policy.action_space={cfg.action_space!r} is not supported by {name}: only 'continuous' "
                "(DI-engine's 'hybrid' parameterised actions are not in ding_ray)."
            )
        if int(cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len={cfg.collect.unroll_len} is not supported; use 1.")
        default = type(self).default_config().model
        cfg.model.setdefault("twin_critic", default.twin_critic)
        if cfg.model.setdefault("action_space", "regression") != "regression" and model is None:
            raise ConfigError(
                f"policy.model.action_space={cfg.model.action_space!r}: {name} needs the deterministic "
                "actor, action_space='regression'."
            )
        return super()._create_model(cfg, model)

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn, model = self._cfg.learn, self._model
        self._learn_model = model
        self._twin_critic = bool(getattr(model, "twin_critic", self._cfg.model.get("twin_critic", False)))
        self._gamma = float(learn.discount_factor)
        self._actor_update_freq = int(learn.actor_update_freq)
        if self._actor_update_freq < 1:
            raise ConfigError(f"policy.learn.actor_update_freq={learn.actor_update_freq}; use 1 or more.")
        noise_range = learn.noise_range
        self._target_noise_range = (float(noise_range["min"]), float(noise_range["max"]))
        self._optimizer_actor = make_adam(model.actor.parameters(), learn.learning_rate_actor)
        self._optimizer_critic = make_adam(model.critic.parameters(), learn.learning_rate_critic)
        self._critic_params = list(model.critic.parameters())
        self._target_model, self._target_params, self._source_params = polyak_target(model)
        self._forward_learn_cnt = 0  # learn steps so far: the actor steps when (cnt + 1) % freq == 0

    def _target_action(self, next_obs: torch.Tensor) -> torch.Tensor:
        action = self._target_model.compute_actor(next_obs)["action"]
        if self._cfg.learn.noise:  # TD3's target policy smoothing, from torch's global generator
            action = gaussian_action_noise(
                action, float(self._cfg.learn.noise_sigma), self._target_noise_range
            )
        return action

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        cfg = self._cfg
        batch = to_tensor_batch(data, self._device)
        obs, next_obs = batch["obs"], batch["next_obs"]
        reward = batch["reward"].reshape(-1)
        if cfg.reward_batch_norm:
            reward = (reward - reward.mean()) / (reward.std() + 1e-8)
        done = torch.zeros_like(reward) if cfg.learn.ignore_done else batch["done"].reshape(-1)
        weight = batch.get("IS") if cfg.priority_IS_weight else None
        action = batch["action"].reshape(len(obs), -1)
        model = self._learn_model
        set_mode(model, True)

        # ----- critic(s)
        q_value = model.compute_critic({"obs": obs, "action": action})["q_value"]
        with torch.no_grad():
            next_action = self._target_action(next_obs)
            next_q = self._target_model.compute_critic({"obs": next_obs, "action": next_action})["q_value"]
            q_target, next_value = deterministic_q_target(next_q, reward, done, self._gamma)
        critic_losses, td_error = sac_critic_loss(q_value, q_target, weight)
        critic_loss = sum(critic_losses)
        check_finite_loss(critic_loss, batch, type(self).__name__ + " critic")
        self._optimizer_critic.zero_grad(set_to_none=True)
        critic_loss.backward()
        self._optimizer_critic.step()

        # ----- actor, every actor_update_freq-th step: the first critic's Q of its own action
        actor_loss = None
        if (self._forward_learn_cnt + 1) % self._actor_update_freq == 0:
            for p in self._critic_params:
                p.requires_grad_(False)
            new_action = model.compute_actor(obs)["action"]
            q_new = model.compute_critic({"obs": obs, "action": new_action})["q_value"]
            actor_loss = -(q_new[0] if self._twin_critic else q_new).mean()
            self._optimizer_actor.zero_grad(set_to_none=True)
            actor_loss.backward()
            self._optimizer_actor.step()
            for p in self._critic_params:
                p.requires_grad_(True)
        self._forward_learn_cnt += 1
        soft_update(self._target_params, self._source_params, float(cfg.learn.target_theta))
        return self._learn_log(q_value, next_value, critic_losses, actor_loss, td_error, action)

    def _learn_log(self, q_value, next_value, critic_losses, actor_loss, td_error, action) -> dict[str, Any]:
        """DI-engine's log keys: each critic's loss, ``actor_loss`` on the steps the actor stepped,
        their sum, the mean Q of each critic and of the target, the mean |squared TD error|."""
        q_values = list(q_value) if self._twin_critic else [q_value]
        names = ("critic_loss", "critic_twin_loss")
        losses = dict(zip(names, torch.stack(critic_losses).detach().tolist()))
        if actor_loss is not None:
            losses["actor_loss"] = actor_loss.item()
        out = {
            "cur_lr_actor": self._optimizer_actor.param_groups[0]["lr"],
            "cur_lr_critic": self._optimizer_critic.param_groups[0]["lr"],
            "action": action.mean().item(),
            "td_error": td_error.mean().item(),
            **losses,
            "total_loss": sum(losses.values()),
            **dict(zip(("q_value", "q_value_twin"), torch.stack(q_values).detach().mean(1).tolist())),
            "target q_value": next_value.mean().item(),
        }
        if self._cfg.priority:
            out["priority"] = td_error.cpu().numpy()
        return out

    def _monitor_vars_learn(self) -> list[str]:
        names = ["cur_lr_actor", "cur_lr_critic", "critic_loss", "actor_loss", "total_loss", "q_value"]
        names += ["q_value_twin", "action", "td_error"]
        return names + (["critic_twin_loss"] if self._twin_critic else [])

    def _state_dict_learn(self) -> dict[str, Any]:
        return {
            "model": self._learn_model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer_actor": self._optimizer_actor.state_dict(),
            "optimizer_critic": self._optimizer_critic.state_dict(),
            # DI-engine keeps it out of the checkpoint; without it a resumed TD3 run would step its
            # actor out of phase with the run it continues
            "forward_learn_cnt": self._forward_learn_cnt,
        }

    def _learn_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"optimizer_actor": self._optimizer_actor, "optimizer_critic": self._optimizer_critic}

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        self._learn_model.load_state_dict(state_dict["model"])
        self._target_model.load_state_dict(state_dict.get("target_model", state_dict["model"]))
        # deep copies: torch keeps loaded CPU optimizer tensors as they are (shared Adam moments)
        for key, optimizer in self._learn_optimizers().items():
            if key in state_dict:
                optimizer.load_state_dict(copy.deepcopy(state_dict[key]))
        self._forward_learn_cnt = int(state_dict.get("forward_learn_cnt", self._forward_learn_cnt))

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model
        self._unroll_len = int(self._cfg.collect.unroll_len)
        # Seeded from torch's global generator so that set_pkg_seed makes collection reproducible.
        self._collect_generator = torch.Generator(device=self._device).manual_seed(
            int(torch.randint(2**31, ()).item())
        )

    def _actions(self, model: torch.nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return model.compute_actor(obs)["action"].reshape(len(obs), -1)  # [B, A], also for A = 1

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        sigma = float(self._cfg.collect.noise_sigma)
        action = self._actions(self._collect_model, obs)
        return env_ids, {"action": gaussian_action_noise(action, sigma, generator=self._collect_generator)}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions  # unroll_len is 1: one sample per transition

    # ----- eval -------------------------------------------------------------------------------
    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        return {"action": self._actions(self._eval_model, obs)}
