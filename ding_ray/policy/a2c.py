"""A2C (advantage actor-critic, Mnih et al., 2016, arXiv:1602.01783): DI-engine's ``A2CPolicy``.

The collector computes each transition's GAE advantage from the values its collect forward gave,
trajectory chunk by chunk, as DI-engine's A2C does: a chunk that ends its episode bootstraps from 0;
a chunk cut before its episode ended gives up its last transition, whose value is the bootstrap of
the others. One learn call is one pass over one collect call's data in shuffled minibatches of
``batch_size``, one gradient step each, and counts as one iteration (DI-engine's A2C returns one log
dict, of the last minibatch). Discrete (categorical) or continuous (diagonal Gaussian) actions.
"""

from __future__ import annotations

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
    to_tensor_batch,
)
from ding_ray.policy.optim import make_adam
from ding_ray.rl_utils import a2c_data, a2c_error, a2c_error_continuous, gae, gae_data
from ding_ray.utils.registry import POLICY_REGISTRY

_ACTION_SPACES = ("discrete", "continuous")
_LOG_KEYS = ("total_loss", "policy_loss", "value_loss", "entropy_loss", "adv_abs_max", "grad_norm")


@POLICY_REGISTRY.register("a2c")
class A2CPolicy(Policy):
    """Learn: A2C's policy, value and entropy losses on one collect call's data. Collect: sample from
    the categorical (or Gaussian) policy; GAE per trajectory chunk. Eval: argmax (or the mean).

    Collect forward returns ``{env_id: {'action', 'logit', 'value'}}``, as PPO's.
    """

    columnar_collect = True
    columnar_eval = True
    config = dict(
        type="a2c",
        on_policy=True,  # train only on data of the current weights (serial_pipeline_onpolicy)
        priority=False,  # not used by A2C (kept for DI-engine configs; True is an error)
        priority_IS_weight=False,  # not used by A2C (True is an error)
        action_space="discrete",  # 'discrete' (categorical head) or 'continuous' (Gaussian head)
        learn=dict(
            # one learn call per collect call; DI-engine's on-policy entry reads it nowhere either
            # (only 1 is accepted: DI-engine's A2C says it must be 1)
            update_per_collect=1,
            batch_size=64,  # minibatch size: one gradient step each
            learning_rate=0.001,
            betas=(0.9, 0.999),  # Adam's running-average coefficients
            eps=1e-8,  # Adam's denominator term
            grad_norm=0.5,  # the global gradient norm is clipped to this
            value_weight=0.5,  # weight of the value loss (the policy loss has weight 1)
            entropy_weight=0.01,  # weight of the entropy bonus
            adv_norm=False,  # normalise advantages per minibatch
            # DI-engine's key: its A2C's advantages come from the collector, which reads no ignore_done,
            # so True changes nothing there; ding_ray refuses True rather than ignore it
            ignore_done=False,
            # dizoo's pendulum_a2c_config sets epoch_per_collect, bipedalwalker_a2c_config discount_factor
            # here; DI-engine's A2C reads neither (one pass per learn call; collect.discount_factor is
            # gamma), and neither does ding_ray
            epoch_per_collect=None,
            discount_factor=None,
            num_threads=1,  # torch intra-op threads of the process that trains
        ),
        collect=dict(
            n_sample=None,  # transitions per collect call
            unroll_len=1,  # only 1
            discount_factor=0.9,  # gamma
            gae_lambda=0.95,  # lambda of GAE
        ),
        eval=dict(),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "vac", ["ding_ray.model.vac"]

    def __init__(self, cfg: dict, model: torch.nn.Module | None = None, enable_field: Any = None) -> None:
        _check_supported(cfg)
        self.action_space = cfg.get("action_space", "discrete")  # what check_spaces asks of the env
        super().__init__(cfg, model, enable_field)

    def _create_model(self, cfg: Any, model: torch.nn.Module | None) -> torch.nn.Module:
        default_vac_action_space(cfg, model)
        return super()._create_model(cfg, model)

    @property
    def _continuous(self) -> bool:
        return self.action_space == "continuous"

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._learn_model = self._model
        # DI-engine's Adam arithmetic (not the fused kernel), with the config's betas and eps
        self._optimizer = make_adam(
            self._model.parameters(),
            learn.learning_rate,
            fused=False,
            betas=tuple(learn.betas),
            eps=learn.eps,
        )

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One pass over ``data`` (a collect call's samples with ``value`` and ``adv``) in shuffled
        minibatches; the log dict of the last one."""
        batch = to_tensor_batch(data, self._device)
        n = len(batch["obs"])
        action = batch["action"].reshape(n, -1) if self._continuous else batch["action"].reshape(-1)
        value, adv = batch["value"].reshape(-1), batch["adv"].reshape(-1)
        set_mode(self._learn_model, True)
        log: dict[str, Any] = {}
        for index in minibatches(n, self._cfg.learn.batch_size):
            log = self._train_minibatch(batch["obs"][index], action[index], value[index], adv[index])
        return log

    def _train_minibatch(
        self, obs: torch.Tensor, action: torch.Tensor, value_old: torch.Tensor, adv: torch.Tensor
    ) -> dict[str, Any]:
        learn = self._cfg.learn
        return_ = value_old + adv  # the critic's target, from the advantages before normalisation
        if learn.adv_norm:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        output = self._learn_model(obs, "compute_actor_critic")
        error = a2c_error_continuous if self._continuous else a2c_error
        loss = error(a2c_data(output["logit"], action, output["value"], adv, return_, None))
        total_loss = (
            loss.policy_loss + learn.value_weight * loss.value_loss - learn.entropy_weight * loss.entropy_loss
        )
        check_finite_loss(total_loss, {"obs": obs, "adv": adv, "return": return_}, "A2C learn")
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self._learn_model.parameters(), learn.grad_norm)
        self._optimizer.step()
        losses = (total_loss, loss.policy_loss, loss.value_loss, loss.entropy_loss)
        stats = torch.stack([*(x.detach() for x in losses), adv.abs().max(), grad_norm]).tolist()
        return {"cur_lr": self._optimizer.param_groups[0]["lr"], **dict(zip(_LOG_KEYS, stats))}

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", *_LOG_KEYS]

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs = self._obs_tensor(data, self._collect_model)
        output = self._collect_model(obs, "compute_actor_critic")
        action = sample_action(output["logit"], self._continuous)
        return env_ids, {"action": action, "logit": output["logit"], "value": output["value"]}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep, "value")

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The transitions of one env's chunk with their GAE advantage ``adv``, as DI-engine's A2C
        makes them: a chunk whose last step ends the episode bootstraps from 0; any other gives up its
        last step, whose collect-time value is then the others' bootstrap (no critic call)."""
        if transitions[-1]["done"]:
            samples, last_value = transitions, 0.0
        else:
            samples, last_value = transitions[:-1], _number(transitions[-1]["value"])
        if not samples:
            return []
        value = torch.tensor([_number(t["value"]) for t in samples], dtype=torch.float32)
        reward = torch.tensor([_number(t["reward"]) for t in samples], dtype=torch.float32)
        next_value = torch.cat([value[1:], torch.tensor([last_value])])
        gamma, lambda_ = float(self._cfg.collect.discount_factor), float(self._cfg.collect.gae_lambda)
        adv = gae(gae_data(value, next_value, reward, None, None), gamma, lambda_)
        return [{**t, "adv": a} for t, a in zip(samples, adv.tolist())]

    # ----- eval -------------------------------------------------------------------------------
    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        logit = self._eval_model(obs, "compute_actor")["logit"]
        action = logit["mu"] if self._continuous else logit.argmax(-1)  # the Gaussian's mean, or greedy
        return {"action": action, "logit": logit}


def _number(x: Any) -> float:
    """A Python float of one number: a float, a 0-d or one-element tensor or array (a DI-engine reward)."""
    return float(np.asarray(x).reshape(()))


def _check_supported(cfg: dict) -> None:
    """Refuse, by name, the A2C options that would change nothing or that ding_ray does not have."""
    get = cfg.get
    learn, collect = get("learn") or {}, get("collect") or {}
    if get("action_space", "discrete") not in _ACTION_SPACES:
        raise ConfigError(
            f"policy.action_space={get('action_space')!r} is not supported: A2C takes {list(_ACTION_SPACES)}."
        )
    for key in ("priority", "priority_IS_weight"):
        if get(key):
            raise ConfigError(
                f"policy.{key}=True: A2C learns on-policy, without priorities; set it to False."
            )
    if learn.get("ignore_done"):
        raise ConfigError(
            "policy.learn.ignore_done=True: A2C's advantages are computed by the collector, which (in "
            "DI-engine too) does not read it, so it would change nothing; remove it."
        )
    if learn.get("update_per_collect", 1) != 1:
        raise ConfigError(
            "policy.learn.update_per_collect must be 1 for A2C (one learn call per collect call, each "
            "one pass over the data in minibatches of learn.batch_size)."
        )
    if collect.get("unroll_len", 1) != 1:
        raise ConfigError("policy.collect.unroll_len must be 1 for A2C (longer unrolls are not supported).")
