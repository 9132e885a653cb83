"""IMPALA (Espeholt et al., 2018, arXiv:1802.01561): an actor-critic trained on unrolls that older
weights collected, corrected for the lag by V-trace.

Names and config keys are DI-engine's ``IMPALAPolicy`` (``type='impala'``). A train sample is one
unroll: ``unroll_len`` consecutive steps of one env with the behaviour policy's logits. Each learn
call is one gradient step on ``batch_size`` unrolls (DI-engine's serial form replays them from a
buffer with ``max_use``). Discrete (categorical) or continuous (diagonal Gaussian) actions, with
the VAC model (vector or image observations).

What the learn forward takes (a list of samples, or one columnar batch with a leading batch axis),
per sample, time first:

- ``obs`` [T, *obs_shape], ``next_obs`` [T, *obs_shape] (only the last row and the rows flagged in
  ``traj_flag`` are read), ``action`` [T] int (or [T, A] float), ``reward`` [T];
- ``logit`` [T, A] (or ``{'mu': [T, A], 'sigma': [T, A]}``): the behaviour policy's outputs;
- ``done`` [T]: the episode ended at that step, not bootstrapped (a time limit too, as in
  DI-engine, unless ``learn.bootstrap_on_truncation``); ``traj_flag`` [T] (optional, default
  ``done``): the episode ended there for any reason (termination, time limit, a crash) or the
  unroll's real steps stop there, so nothing is traced across it and, short of ``done``, its value
  is bootstrapped from ``V(next_obs)``; ``null`` [T] (optional): padding, left out of the losses.
  Unrolls may cross episode boundaries (the asynchronous form streams them so).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ding_ray.config.ranges import Range
from ding_ray.data.columnar import stack_items
from ding_ray.errors import ConfigError, ShapeError
from ding_ray.policy.base import Policy
from ding_ray.policy.common import (
    check_finite_loss,
    check_replay_memory,
    default_vac_action_space,
    runs_here,
    sample_action,
    set_mode,
    to_tensor_batch,
)
from ding_ray.policy.grad_clip import check_grad_clip_type, clip_grads
from ding_ray.policy.optim import make_adam
from ding_ray.policy.unroll import UnrollBuilder
from ding_ray.rl_utils import vtrace_data, vtrace_error_continuous_action, vtrace_error_discrete_action
from ding_ray.rl_utils.vtrace import discounted_sums_nbytes
from ding_ray.utils.memory import system_memory
from ding_ray.utils.registry import POLICY_REGISTRY

_OPTIMS = ("adam", "rmsprop")
_LOG_KEYS = ("total_loss", "policy_loss", "value_loss", "entropy_loss")


@POLICY_REGISTRY.register("impala")
class IMPALAPolicy(Policy):
    """Learn: V-trace actor-critic on a batch of unrolls. Collect: sample from the categorical (or
    Gaussian) policy; ``get_train_sample`` cuts each env's steps into unrolls. Eval: argmax (or
    the Gaussian's mean).

    Collect forward returns ``{env_id: {'action', 'logit'}}`` (DI-engine's); learn forward one log
    dict (one gradient step: the learner counts one iteration).
    """

    columnar_collect = True  # _collect_columns and _eval_tensors: forwards of all envs at once
    columnar_eval = True
    config = dict(
        type="impala",
        on_policy=False,  # serial form: unrolls go through a replay buffer (max_use bounds their reuse)
        priority=False,  # not used by IMPALA (kept for DI-engine configs; True is an error)
        priority_IS_weight=False,  # not used by IMPALA (True is an error)
        action_space="discrete",  # 'discrete' (categorical head) or 'continuous' (Gaussian head)
        unroll_len=32,  # steps per train sample (one V-trace unroll)
        transition_with_policy_data=True,  # random_collect_size steps use the policy (they need logits)
        random_collect_size=0,  # unrolls collected before training (by the policy, see above)
        learn=dict(
            update_per_collect=4,  # gradient steps per collect call (serial pipeline)
            batch_size=16,  # unrolls per gradient step
            learning_rate=0.0005,
            value_weight=0.5,  # weight of the value loss (the policy loss has weight 1)
            entropy_weight=0.0001,  # weight of the entropy bonus
            discount_factor=0.99,  # gamma
            lambda_=0.95,  # scales every trace coefficient c (1: the paper's V-trace)
            rho_clip_ratio=1.0,  # clip of the importance weights in the value targets
            c_clip_ratio=1.0,  # clip of the importance weights in the traces
            rho_pg_clip_ratio=1.0,  # clip of the importance weights in the policy-gradient advantage
            # ding_ray's addition, off (None) as in DI-engine: eps of APPO's clipped surrogate, a
            # trust region around the behaviour policy for unrolls used many times or collected by
            # older weights (vtrace_error_discrete_action)
            surrogate_clip_ratio=None,
            grad_clip_type=None,  # None, 'clip_norm' (global norm) or 'clip_value'; with optim='adam' only
            clip_value=0.5,  # the norm or value bound of grad_clip_type
            optim="adam",  # 'adam' or 'rmsprop'
            num_threads=1,  # torch intra-op threads of the process that trains
        ),
        collect=dict(
            # train samples (unrolls) per collect call; no collect.unroll_len: the samples are the
            # unrolls already (the data fetcher samples whole ones, not runs of them)
            n_sample=None,
            # dizoo's cartpole_impala_config sets these two; DI-engine's IMPALA reads neither (it uses
            # learn.discount_factor), and neither does ding_ray
            discount_factor=None,
            gae_lambda=None,
        ),
        eval=dict(),
        other=dict(
            replay_buffer=dict(
                replay_buffer_size=1000,  # unrolls held
                max_use=16,  # an unroll is removed after being sampled this many times
            ),
        ),
    )

    @classmethod
    def check_config(cls, cfg: Any) -> None:
        """The values IMPALA supports, and an ``unroll_len`` whose V-trace and replay buffer fit
        this machine's memory, checked before anything is built."""
        _check_supported(cfg.policy)
        _check_vtrace_memory(cfg)
        check_replay_memory(cfg, steps=int(cfg.policy.unroll_len))

    def default_model(self) -> tuple[str, list[str]]:
        return "vac", ["ding_ray.model.vac"]

    def __init__(self, cfg: dict, model: torch.nn.Module | None = None, enable_field: Any = None) -> None:
        _check_supported(cfg)
        self.action_space = cfg.get("action_space", "discrete")  # what check_spaces asks of the env
        super().__init__(cfg, model, enable_field)
        self._unroll_len = int(self._cfg.unroll_len)
        self._unrolls = UnrollBuilder(self._unroll_len)

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        default_vac_action_space(cfg, model)
        built = super()._create_model(cfg, model)
        model_space = getattr(built, "action_space", None)
        if isinstance(model_space, str) and model_space != cfg.action_space:
            raise ConfigError(
                f"policy.action_space={cfg.action_space!r} but the model's action_space is "
                f"{model_space!r}; build the model for {cfg.action_space} actions."
            )
        return built

    @property
    def _continuous(self) -> bool:
        return self.action_space == "continuous"

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._learn_model = self._model
        if learn.optim == "rmsprop":
            self._optimizer = torch.optim.RMSprop(self._model.parameters(), lr=learn.learning_rate)
        else:
            self._optimizer = make_adam(self._model.parameters(), learn.learning_rate)

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One V-trace gradient step on a batch of unrolls; its log dict."""
        learn = self._cfg.learn
        batch = _time_major(to_tensor_batch(_stack_unrolls(data), self._device), self._continuous)
        obs, next_obs = batch["obs"], batch["next_obs"]
        steps, size = obs.shape[:2]
        set_mode(self._learn_model, True)
        # one forward over the T obs of every unroll and the obs after its last step
        obs_plus_1 = torch.cat([obs, next_obs[-1:]]).flatten(0, 1)
        output = self._learn_model(obs_plus_1, "compute_actor_critic")
        value = output["value"].reshape(steps + 1, size)
        target_logit = _rows(output["logit"], steps, size)
        reward, ends, weight = self._targets_inputs(batch)
        loss_fn = vtrace_error_continuous_action if self._continuous else vtrace_error_discrete_action
        loss = loss_fn(
            vtrace_data(target_logit, batch["logit"], batch["action"], value, reward, weight, ends),
            learn.discount_factor,
            learn.lambda_,
            learn.rho_clip_ratio,
            learn.c_clip_ratio,
            learn.rho_pg_clip_ratio,
            learn.surrogate_clip_ratio,
        )
        total_loss = (
            loss.policy_loss + learn.value_weight * loss.value_loss - learn.entropy_weight * loss.entropy_loss
        )
        check_finite_loss(total_loss, {"obs": obs, "reward": batch["reward"]}, "IMPALA learn")
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        if learn.optim == "adam":  # DI-engine's IMPALA gives the clip to its Adam only, not to RMSprop
            clip_grads(self._learn_model.parameters(), learn.grad_clip_type, learn.clip_value)
        self._optimizer.step()
        stats = torch.stack([total_loss.detach(), *(x.detach() for x in loss)]).tolist()
        return {"cur_lr": self._optimizer.param_groups[0]["lr"], **dict(zip(_LOG_KEYS, stats))}

    @torch.no_grad()
    def _targets_inputs(
        self, batch: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(reward, ends, weight)`` [T, B] for the V-trace loss.

        Where an episode ends (or the real steps stop) before the unroll's last step, the next row
        is not its successor: the trace is cut there (``ends`` = 1, the loss's discount is 0) and a
        step that did not terminate gets its bootstrap ``gamma * V(next_obs)`` folded into its
        reward. At the last step the bootstrap is ``value[-1]``, the value of ``next_obs[-1]``.
        """
        reward, done = batch["reward"], batch["done"]
        null = batch.get("null")
        traj_flag = batch.get("traj_flag", done)
        if null is not None:
            traj_flag = torch.maximum(traj_flag, null)
        ends = traj_flag.clone()
        ends[-1] = done[-1]  # the last step bootstraps from value[-1] unless it terminated
        cut = (ends > 0) & (done == 0)
        if bool(cut.any()):
            rows = torch.nonzero(cut, as_tuple=True)
            next_value = self._learn_model(batch["next_obs"][rows], "compute_critic")["value"].reshape(-1)
            reward = reward.clone()
            reward[rows] += self._cfg.learn.discount_factor * next_value
        weight = None if null is None else 1.0 - null
        return reward, ends, weight

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", *_LOG_KEYS]

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        logit = self._collect_model(obs, "compute_actor")["logit"]
        action = sample_action(logit, self._continuous)
        return env_ids, {"action": action, "logit": logit}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        # 'traj_flag' marks every episode end ('done' may leave out truncations: bootstrap_on_truncation).
        return {**self._transition(obs, policy_output, timestep, "logit"), "traj_flag": bool(timestep.done)}

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Unrolls of ``unroll_len`` steps (dicts of arrays with a leading time axis) from one env's
        consecutive transitions; see ``UnrollBuilder``."""
        return self._unrolls(transitions)

    def _attribute_getters(self) -> dict[str, Callable[[], Any]]:
        return {**super()._attribute_getters(), "unroll_len": self._get_unroll_len}

    def _get_unroll_len(self) -> int:
        return self._unroll_len

    # ----- eval -------------------------------------------------------------------------------
    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        logit = self._eval_model(obs, "compute_actor")["logit"]
        action = logit["mu"] if self._continuous else logit.argmax(-1)  # the Gaussian's mean, or greedy
        return {"action": action, "logit": logit}


def _stack_unrolls(data: Any) -> Any:
    """DI-engine's task pipeline hands a list of unrolls as lists of transition dicts."""
    if isinstance(data, list) and data and isinstance(data[0], list):
        return [dict(stack_items(unroll)) for unroll in data]
    return data


_REQUIRED = ("obs", "next_obs", "action", "reward", "done", "logit")


def _time_major(batch: dict[str, Any], continuous: bool) -> dict[str, Any]:
    """Columns [B, T, ...] -> [T, B, ...] (logit dicts too); bools and flags as float masks."""
    missing = [key for key in _REQUIRED if key not in batch]
    if missing:
        what = (
            "the behaviour policy's logits (the collect forward's 'logit'): V-trace needs them"
            if ("logit" in missing)
            else "them"
        )
        raise ShapeError(
            f"An IMPALA training batch lacks {missing}; it needs {list(_REQUIRED)} per unroll, and "
            f"{what}. Collect with the IMPALA policy's collect mode and get_train_sample."
        )
    if batch["reward"].dim() < 2:
        raise ShapeError(
            f"IMPALA trains on unrolls: reward must be [B, T], got {tuple(batch['reward'].shape)}. "
            "Store the samples of get_train_sample (unroll_len steps each), not single transitions."
        )
    size_steps = batch["obs"].shape[:2]
    for key in ("reward", "done", "traj_flag", "null"):
        if key in batch:
            batch[key] = batch[key].reshape(size_steps)
    out = {}
    for key, value in batch.items():
        if isinstance(value, dict):
            out[key] = {k: v.transpose(0, 1) for k, v in value.items()}
        elif isinstance(value, torch.Tensor) and value.dim() >= 2:
            out[key] = value.transpose(0, 1)
    logit = out["logit"]
    if continuous != isinstance(logit, dict):
        raise ShapeError(
            "The batch's behaviour 'logit' is "
            + ("{'mu', 'sigma'} (continuous actions)" if isinstance(logit, dict) else "a tensor (discrete)")
            + f" but the policy's action_space is {'continuous' if continuous else 'discrete'}."
        )
    out["action"] = out["action"].float() if continuous else out["action"].long().reshape(out["reward"].shape)
    return out


def _rows(logit: Any, steps: int, size: int) -> Any:
    """The learner's outputs over ``obs_plus_1`` -> the first ``steps`` rows as [T, B, ...]."""
    if isinstance(logit, dict):
        return {k: v.reshape(steps + 1, size, *v.shape[1:])[:-1] for k, v in logit.items()}
    return logit.reshape(steps + 1, size, *logit.shape[1:])[:-1]


def _check_vtrace_memory(cfg: Any) -> None:
    """Refuse an ``unroll_len`` whose learner step cannot be computed here: V-trace's recursion over
    an unroll holds [unroll_len, unroll_len, batch_size] matrices (``discounted_sums_nbytes``)."""
    memory = system_memory() if runs_here(cfg) else None
    steps, batch = int(cfg.policy.unroll_len), int(cfg.policy.learn.batch_size)
    need = discounted_sums_nbytes(steps, batch)
    if memory is None or need <= memory:
        return
    longest = bisect_right(range(1, steps), memory, key=lambda t: discounted_sums_nbytes(t, batch))
    raise ConfigError(
        f"Config key 'policy.unroll_len' is {steps}: V-trace over unrolls of that many steps holds "
        f"[unroll_len, unroll_len, batch_size] matrices, {need / 2**30:.1f} GiB with policy.learn."
        f"batch_size={batch}, more than this machine's {memory / 2**30:.1f} GiB; at most {longest} fits. "
        "Set an unroll_len of tens of steps (DI-engine's default is 32; the IMPALA paper's 20 to 100): "
        "an unroll longer than an episode is mostly padding."
    )


def _check_supported(cfg: dict) -> None:
    """Refuse values ding_ray's IMPALA cannot act on, by name."""
    get = cfg.get
    if get("action_space", "discrete") not in ("discrete", "continuous"):
        raise ConfigError(
            f"policy.action_space={get('action_space')!r} is not supported by IMPALA: choose 'discrete' "
            "or 'continuous'."
        )
    unroll_len = get("unroll_len", 32)
    if not isinstance(unroll_len, (int, np.integer)) or isinstance(unroll_len, bool) or unroll_len < 1:
        raise ConfigError(
            f"policy.unroll_len={unroll_len!r}: an unroll needs at least one step; set an integer >= 1 "
            "(DI-engine's default is 32)."
        )
    for key in ("priority", "priority_IS_weight"):
        if get(key):
            raise ConfigError(f"policy.{key}=True is not supported by ding_ray's IMPALA; set it to False.")
    learn = get("learn") or {}
    check_grad_clip_type(learn.get("grad_clip_type"))
    if learn.get("optim", "adam") not in _OPTIMS:
        raise ConfigError(
            f"policy.learn.optim={learn.get('optim')!r} is not supported; choose from {_OPTIMS}."
        )
    problem = Range(0, open_low=True).problem(learn.get("surrogate_clip_ratio"))
    if problem is not None:
        raise ConfigError(
            f"policy.learn.surrogate_clip_ratio {problem}: the surrogate's ratio is clipped to "
            "[1 - eps, 1 + eps]; set a number > 0 (APPO uses 0.1-0.4), or None for DI-engine's loss."
        )
