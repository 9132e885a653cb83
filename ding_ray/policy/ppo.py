"""PPO (on-policy): clipped surrogate, GAE, value clipping, advantage and value normalisation.

Names and config keys are DI-engine's ``PPOPolicy``. One learn call trains on one collect call's
data: ``epoch_per_collect`` passes in shuffled minibatches of ``batch_size``. Discrete
(categorical) or continuous (diagonal Gaussian) actions, and optional observation normalisation.

Continuous actions go to the env as sampled, unclipped, as DI-engine's PPO sends them, so the
ratio compares the log-probabilities of what was sent. Bounding is the env's business (only it knows
its bounds): Pendulum clips the torque itself, MuJoCo clamps to its ``ctrlrange``, and a
``bound_type='tanh'`` model pairs with ``env.act_scale=True`` (clip to [-1, 1], map onto the Box).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from ding_ray.errors import ConfigError
from ding_ray.policy.base import Policy
from ding_ray.policy.common import (
    check_finite_loss,
    default_vac_action_space,
    minibatches,
    sample_action,
    set_mode,
    stack_obs,
    to_tensor_batch,
)
from ding_ray.policy.grad_clip import check_grad_clip_type, clip_grads
from ding_ray.policy.obs_norm import ObsNormalizer, load_model_state, with_obs_norm
from ding_ray.policy.optim import make_adam
from ding_ray.policy.running_stats import RunningMeanStd
from ding_ray.rl_utils import gae, gae_data, ppo_data, ppo_error, ppo_error_continuous
from ding_ray.utils.registry import POLICY_REGISTRY

_ACTION_SPACES = ("discrete", "continuous")


@POLICY_REGISTRY.register("ppo")
class PPOPolicy(Policy):
    """Learn: PPO on the data of one collect call. Collect: sample from the categorical (or
    Gaussian) policy, and compute GAE per trajectory chunk. Eval: argmax (or the Gaussian's mean).

    Collect forward returns ``{env_id: {'action': int, 'logit': [A], 'value': float}}``; with
    continuous actions ``action`` is a float32 [A] sample and ``logit`` is ``{'mu', 'sigma'}``.
    """

    columnar_collect = True  # _collect_columns and _eval_tensors: forwards of all envs at once
    columnar_eval = True
    initial_log_sigma = -0.5  # a Gaussian actor's log std after ppo_param_init (DI-engine's PPO)
    config = dict(
        type="ppo",
        on_policy=True,  # train only on data of the current weights (serial_pipeline_onpolicy)
        priority=False,  # not used by PPO (kept for DI-engine configs; True is an error)
        priority_IS_weight=False,  # not used by PPO (True is an error)
        recompute_adv=True,  # recompute values and GAE with the current critic before every epoch
        action_space="discrete",  # 'discrete' (categorical head) or 'continuous' (Gaussian head)
        # ding_ray's key (DI-engine's PPO has none): normalise observations by a running mean/std
        # per feature, updated by the learner, saved with the weights (state_dict()['model'])
        obs_norm=False,
        nstep_return=False,  # DI-engine's n-step value target (not supported yet; True is an error)
        multi_agent=False,  # MAPPO (not supported yet; True is an error)
        transition_with_policy_data=True,  # random_collect_size steps use the policy
        learn=dict(
            epoch_per_collect=10,  # passes over one collect call's data
            # dizoo's MuJoCo PPO configs set it; DI-engine's on-policy PPO ignores it (epoch_per_collect
            # counts the passes), and so does ding_ray's
            update_per_collect=None,
            batch_size=64,  # minibatch size
            learning_rate=3e-4,
            # None, or dict(epoch_num=N, min_lr_lambda=m): the lr falls linearly to m * lr over N
            # learn calls (one per collect), then stays there
            lr_scheduler=None,
            value_weight=0.5,  # weight of the value loss (the policy loss has weight 1)
            entropy_weight=0.0,  # weight of the entropy bonus
            clip_ratio=0.2,  # epsilon of the clipped ratio (and of value clipping)
            adv_norm=True,  # normalise advantages per minibatch
            value_norm=True,  # the critic predicts returns divided by their running std
            ppo_param_init=True,  # orthogonal weights and zero biases for every linear layer
            grad_clip_type="clip_norm",  # None, 'clip_norm' (global norm) or 'clip_value'
            grad_clip_value=0.5,  # the norm or value bound of grad_clip_type
            ignore_done=False,  # bootstrap through terminal states too (envs that only time out)
            num_threads=1,  # torch intra-op threads of the process that trains
        ),
        collect=dict(
            # dizoo's MuJoCo PPO configs repeat env.collector_env_num here; nothing reads it (in DI-engine
            # either): the env section decides
            collector_env_num=None,
            n_sample=None,  # transitions per collect call
            unroll_len=1,  # only 1 so far
            discount_factor=0.99,  # gamma
            gae_lambda=0.95,  # lambda of GAE
        ),
        eval=dict(),
        other=dict(),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "vac", ["ding_ray.model.vac"]

    def __init__(self, cfg: dict, model: torch.nn.Module | None = None, enable_field: Any = None) -> None:
        _check_supported(cfg)
        self.action_space = cfg.get("action_space", "discrete")  # what check_spaces asks of the env
        self._obs_norm: ObsNormalizer | None = None
        self._running_mean_std: RunningMeanStd | None = None  # value_norm's, kept by the learner
        super().__init__(cfg, model, enable_field)

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        default_vac_action_space(cfg, model)
        if cfg.obs_norm:
            if cfg.model.get("obs_shape") is None:
                raise ConfigError("policy.obs_norm=True needs policy.model.obs_shape (its shape).")
            self._obs_norm = ObsNormalizer(cfg.model.obs_shape)
        return super()._create_model(cfg, model)

    @property
    def _continuous(self) -> bool:
        return self.action_space == "continuous"

    def _normalize(self, obs: torch.Tensor) -> torch.Tensor:
        return obs if self._obs_norm is None else self._obs_norm.normalize(obs)

    # ----- advantages: one GAE for the collectors, gae_estimator and the learner -------------------
    def _attribute_getters(self) -> dict[str, Callable[[], Any]]:
        # gae_estimator asks for compute_advantages, to run the same GAE as the collectors
        return {**super()._attribute_getters(), "compute_advantages": lambda: self._compute_advantages}

    def _value_scale(self) -> float:  # value_norm: the critic predicts returns / their running std
        return 1.0 if self._running_mean_std is None else float(self._running_mean_std.std)

    def _critic(self, obs: torch.Tensor) -> torch.Tensor:
        return self._model(self._normalize(obs.to(self._device)), "compute_critic")["value"]

    @torch.no_grad()
    def _compute_advantages(
        self, data: Mapping[str, Any], value: torch.Tensor | None = None, update_value_norm: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(value, adv, return)`` [T] of consecutive transitions by GAE, as DI-engine's PPO: the critic
        sees normalised observations and its values are scaled by value_norm's std; ``adv`` is in
        return units, ``value`` and ``return`` (the critic's target) in the critic's.

        ``data``: columns ``obs``, ``next_obs`` (raw), ``reward``, ``done`` (no bootstrap there) and
        ``traj_flag`` (a termination, time limit or cut; None: ``done``). ``value``: the collect
        forward's (then a trajectory's next value is the next row's, and the critic values only the
        ``next_obs`` of non-terminal ends); without it the critic values every obs and next_obs.
        """
        device = self._device if value is None else value.device
        reward = data["reward"].reshape(-1).to(device, torch.float32)  # as DI-engine: GAE in float32
        done = data["done"].reshape(-1).to(device)
        if self._cfg.learn.ignore_done:  # bootstrap through terminations too
            done = torch.zeros_like(reward)
        traj_flag = None if data.get("traj_flag") is None else data["traj_flag"].reshape(-1).to(device)
        if value is None:
            value, next_value = self._critic(data["obs"]), self._critic(data["next_obs"])
        else:
            next_value = torch.cat([value[1:], value.new_zeros(1)])
            ends = torch.nonzero(traj_flag.bool() & ~done.bool()).reshape(-1).cpu()
            if len(ends):
                next_value[ends] = self._critic(data["next_obs"][ends]).reshape(-1).to(device)
        scale = self._value_scale()
        value, next_value = value * scale, next_value * scale
        gamma, lambda_ = float(self._cfg.collect.discount_factor), float(self._cfg.collect.gae_lambda)
        adv = gae(gae_data(value, next_value, reward, done, traj_flag), gamma, lambda_)
        if update_value_norm and self._running_mean_std is not None:
            self._running_mean_std.update((value + adv).cpu().numpy())
        return value / scale, adv, (value + adv) / scale

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if learn.ppo_param_init:
            for module in self._model.modules():
                if isinstance(module, torch.nn.Linear):
                    torch.nn.init.orthogonal_(module.weight)
                    torch.nn.init.zeros_(module.bias)
            if self._continuous:
                _continuous_param_init(self._model, self.initial_log_sigma)
        self._learn_model = self._model
        # DI-engine's Adam arithmetic (not the fused kernel): a seeded run trains as DI-engine's
        self._optimizer = make_adam(self._model.parameters(), learn.learning_rate, fused=False)
        self._lr_scheduler = None
        schedule = learn.lr_scheduler
        if schedule:
            epoch_num, min_lambda = float(schedule["epoch_num"]), schedule["min_lr_lambda"]
            self._lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                self._optimizer, lambda epoch: max(1.0 - epoch * (1.0 - min_lambda) / epoch_num, min_lambda)
            )
        self._running_mean_std = RunningMeanStd() if learn.value_norm else None

    def _forward_learn(self, data: Any) -> list[dict[str, Any]]:
        """``epoch_per_collect`` passes over ``data`` in minibatches; one log dict per gradient step
        (as DI-engine's PPO: the learner counts one iteration each)."""
        learn = self._cfg.learn
        batch = to_tensor_batch(data, self._device)
        raw_obs, n = batch["obs"], len(batch["obs"])
        action = batch["action"].reshape(n, -1) if self._continuous else batch["action"].reshape(-1)
        obs = self._normalize(raw_obs)  # the statistics the collector used: updated after training
        set_mode(self._learn_model, True)
        logs: list[dict[str, float]] = []
        for _ in range(learn.epoch_per_collect):
            if self._cfg.recompute_adv:
                value_old, adv, return_ = self._compute_advantages(batch, update_value_norm=True)
            else:  # the stored advantages; as DI-engine, the return normaliser learns from them each epoch
                adv, value_old = batch["adv"], batch["value"].reshape(-1)
                scale = self._value_scale()
                return_ = (adv + value_old * scale) / scale
                if self._running_mean_std is not None:
                    self._running_mean_std.update((adv + value_old * scale).cpu().numpy())
            for index in minibatches(n, learn.batch_size):
                rows = [x[index] for x in (obs, action, value_old, adv, return_)]
                logs.append(self._train_minibatch(_rows(batch["logit"], index), *rows))
        if self._lr_scheduler is not None:
            self._lr_scheduler.step()
        if self._obs_norm is not None:
            self._obs_norm.update(raw_obs)
        return logs

    def _train_minibatch(self, logit_old, obs, action, value_old, adv, return_) -> dict[str, float]:
        learn = self._cfg.learn
        if learn.adv_norm:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv - adv.mean()
        output = self._learn_model(obs, "compute_actor_critic")
        error = ppo_error_continuous if self._continuous else ppo_error
        loss, info = error(
            ppo_data(output["logit"], logit_old, action, output["value"], value_old, adv, return_, None),
            learn.clip_ratio,
        )
        total_loss = (
            loss.policy_loss + learn.value_weight * loss.value_loss - learn.entropy_weight * loss.entropy_loss
        )
        check_finite_loss(total_loss, {"obs": obs, "adv": adv, "return": return_}, "PPO learn")
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        clip_grads(self._learn_model.parameters(), learn.grad_clip_type, learn.grad_clip_value)
        self._optimizer.step()
        value = output["value"].detach()
        losses = (total_loss, loss.policy_loss, loss.value_loss, loss.entropy_loss)
        stats = torch.stack([*(x.detach() for x in losses), adv.max(), adv.mean(), value.mean(), value.max()])
        stats = stats.tolist() + [info.approx_kl, info.clipfrac]
        if self._continuous:  # DI-engine's mu_mean and sigma_mean: is the policy still exploring?
            stats += [output["logit"][key].detach().mean().item() for key in ("mu", "sigma")]
        return {"cur_lr": self._optimizer.param_groups[0]["lr"], **dict(zip(self._log_keys, stats))}

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", *self._log_keys]

    @property
    def _log_keys(self) -> tuple[str, ...]:
        return (*_LOG_KEYS, "mu_mean", "sigma_mean") if self._continuous else _LOG_KEYS

    def _state_dict_learn(self) -> dict[str, Any]:
        model = with_obs_norm(self._learn_model.state_dict(), self._obs_norm)
        state = {"model": model, "optimizer": self._optimizer.state_dict()}
        if self._running_mean_std is not None:
            state["value_norm"] = self._running_mean_std.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        load_model_state(self._learn_model, state_dict["model"], self._obs_norm)
        if "optimizer" in state_dict:  # the base class loads the optimizer (and the model once more)
            super()._load_state_dict_learn({**state_dict, "model": self._learn_model.state_dict()})
        if self._running_mean_std is not None and "value_norm" in state_dict:
            self._running_mean_std.load_state_dict(state_dict["value_norm"])

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        output = self._collect_model(self._normalize(obs), "compute_actor_critic")
        logit = output["logit"]
        action = sample_action(logit, self._continuous)
        return env_ids, {"action": action, "logit": logit, "value": output["value"]}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep, "logit", "value")

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each transition with its GAE advantage ``adv`` and ``traj_flag`` (True on the last step):
        ``transitions`` is one env's consecutive steps, and only the last one can end its episode."""
        last = transitions[-1]
        if self._cfg.learn.ignore_done or not last["done"]:
            self._draw_as_di_engine_bootstraps(last["next_obs"])
        traj_flag = [False] * (len(transitions) - 1) + [True]
        next_obs = stack_obs([t["next_obs"] for t in transitions])
        columns = {
            "next_obs": torch.as_tensor(next_obs),
            "reward": torch.tensor([float(np.asarray(t["reward"]).reshape(())) for t in transitions]),
            "done": torch.tensor([float(bool(t["done"])) for t in transitions]),
            "traj_flag": torch.tensor(traj_flag),
        }
        value = torch.tensor([t["value"] for t in transitions], dtype=torch.float32)
        _, adv, _ = self._compute_advantages(columns, value)
        return [{**t, "adv": a, "traj_flag": f} for t, a, f in zip(transitions, adv.tolist(), traj_flag)]

    @torch.inference_mode()
    def _draw_as_di_engine_bootstraps(self, next_obs: Any) -> None:
        """DI-engine's PPO bootstraps a trajectory whose last step is not ``done`` (all of them with
        ``ignore_done``) by running its collect model on the last ``next_obs``, and that model samples
        an action each time it runs. The same draw here (the action is not used: the critic gives
        the value) keeps a seeded run on DI-engine's random stream, so it collects what DI-engine's
        does. (A time limit is ``done`` for DI-engine, not here: after one, the streams part.)"""
        _, obs = self._obs_tensor({0: next_obs}, self._collect_model)
        sample_action(self._collect_model(self._normalize(obs), "compute_actor")["logit"], self._continuous)

    # ----- eval (and the collect and eval state dicts: the model plus the observation statistics) --
    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        logit = self._eval_model(self._normalize(obs), "compute_actor")["logit"]
        action = logit["mu"] if self._continuous else logit.argmax(-1)  # the Gaussian's mean, or greedy
        return {"action": action, "logit": logit}

    def _state_dict_collect(self) -> dict[str, Any]:
        return {"model": with_obs_norm(self._collect_model.state_dict(), self._obs_norm)}

    def _load_state_dict_collect(self, state_dict: dict[str, Any]) -> None:
        load_model_state(self._collect_model, state_dict["model"], self._obs_norm)

    def _state_dict_eval(self) -> dict[str, Any]:
        return {"model": with_obs_norm(self._eval_model.state_dict(), self._obs_norm)}

    def _load_state_dict_eval(self, state_dict: dict[str, Any]) -> None:
        load_model_state(self._eval_model, state_dict["model"], self._obs_norm)


_LOG_KEYS = ("total_loss", "policy_loss", "value_loss", "entropy_loss")
_LOG_KEYS += ("adv_max", "adv_mean", "value_mean", "value_max", "approx_kl", "clipfrac")


def _rows(x: Any, index: torch.Tensor) -> Any:
    """``x[index]`` for a tensor or a dict of tensors (a Gaussian's ``{'mu', 'sigma'}``)."""
    return {k: v[index] for k, v in x.items()} if isinstance(x, dict) else x[index]


def _continuous_param_init(model: torch.nn.Module, log_sigma: float) -> None:
    """DI-engine's extra init for Gaussian actors: log std ``log_sigma``, orthogonal gain sqrt(2) in
    actor and critic, then the actor's layers scaled by 0.01 so that the first actions have mean near 0
    (Andrychowicz et al. 2020, arXiv:2006.05990)."""
    head = getattr(model, "actor_head", None)
    if head is not None and hasattr(head, "log_sigma_param"):
        torch.nn.init.constant_(head.log_sigma_param, log_sigma)
    if not (hasattr(model, "actor") and hasattr(model, "critic")):
        return
    for module in list(model.critic.modules()) + list(model.actor.modules()):
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.orthogonal_(module.weight, gain=float(np.sqrt(2)))
            torch.nn.init.zeros_(module.bias)
    with torch.no_grad():
        for module in model.actor.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.mul_(0.01)


def _check_supported(cfg: dict) -> None:
    """Refuse the DI-engine PPO options ding_ray does not implement yet, by name."""
    get = cfg.get
    if get("action_space", "discrete") not in _ACTION_SPACES:
        raise ConfigError(
            f"policy.action_space={get('action_space')!r} is not supported: ding_ray's PPO takes "
            f"{list(_ACTION_SPACES)} (DI-engine's 'hybrid' is not supported yet)."
        )
    for key in ("nstep_return", "multi_agent", "priority", "priority_IS_weight"):
        if get(key):
            raise ConfigError(f"policy.{key}=True is not supported by ding_ray's PPO yet; set it to False.")
    check_grad_clip_type((get("learn") or {}).get("grad_clip_type", "clip_norm"))
    if (get("collect") or {}).get("unroll_len", 1) != 1:
        raise ConfigError(
            "policy.collect.unroll_len must be 1 for ding_ray's PPO (longer ones not supported yet)."
        )
