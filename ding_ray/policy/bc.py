"""Behaviour cloning: supervised learning of the demonstrator's actions from an offline dataset."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.policy.action_mask import eps_greedy_batch, mask_q, split_obs
from ding_ray.policy.base import Policy
from ding_ray.policy.common import check_finite_loss, set_mode, to_tensor_batch
from ding_ray.rl_utils import gaussian_action_noise
from ding_ray.torch_utils.loss import LabelSmoothCELoss
from ding_ray.utils.registry import POLICY_REGISTRY

logger = logging.getLogger(__name__)

# tanh_mask keeps the samples whose predicted action lies within [-tanh(1), tanh(1)]
TANH_ONE = math.tanh(1.0)


@POLICY_REGISTRY.register("bc")
class BehaviourCloningPolicy(Policy):
    """Learn: cross entropy between the model's logits and the demonstrated action (discrete), or
    an L1 / MSE regression of the action (``continuous=True``, ``loss_type``). Collect: epsilon-greedy
    (``eps`` kwarg) or the action plus clipped Gaussian noise. Eval: the greedy or regressed action.

    Collect and eval forwards return ``{env_id: {'action', 'logit'}}`` (discrete) or ``{env_id:
    {'action'}}`` (continuous), DI-engine's. ``eval_mode.forward`` also takes a tensor of observations
    and returns the batched outputs, as DI-engine's BC does for ``serial_pipeline_bc``'s validation.
    """

    columnar_collect = True
    columnar_eval = True
    squashed_actions = True  # continuous actions come out of a tanh: in [-1, 1]
    config = dict(
        type="bc",
        continuous=False,  # False: discrete actions, cross entropy; True: regression of the action
        action_shape=19,  # DI-engine's key; the model's action_shape is the one that counts
        # continuous: 'l1_loss' or 'mse_loss' (DI-engine has no default; its continuous configs set it)
        loss_type="l1_loss",
        learn=dict(
            update_per_collect=1,
            batch_size=32,
            learning_rate=1e-5,
            train_epoch=None,  # passes over the dataset of the offline entries (they need it set)
            lr_decay=False,  # a LambdaLR: warmup_lr until warmup_epoch, then decay_rate every decay_epoch
            decay_epoch=30,
            decay_rate=0.1,
            warmup_lr=1e-4,
            warmup_epoch=3,
            optimizer="SGD",  # 'SGD' (with momentum) or 'Adam' (AdamW with weight_decay, as DI-engine)
            momentum=0.9,
            weight_decay=1e-4,
            ce_label_smooth=False,  # DI-engine's LabelSmoothCELoss(0.1) instead of plain cross entropy
            show_accuracy=False,  # log each batch's accuracy, overall and per action (discrete)
            tanh_mask=False,  # continuous: learn only from predictions within [-tanh(1), tanh(1)]
        ),
        collect=dict(
            unroll_len=1,
            noise=False,  # DI-engine's key: its collect mode adds the noise whatever this says
            noise_sigma=0.2,  # std of the Gaussian added to continuous actions when collecting
            noise_range=dict(min=-0.5, max=0.5),  # the noise is clipped to [min, max]
        ),
        eval=dict(),
    )

    @property
    def action_space(self) -> str:  # what check_spaces asks of the env
        return "continuous" if self._cfg.continuous else "discrete"

    def default_model(self) -> tuple[str, list[str]]:
        return ("continuous_bc" if self._cfg.continuous else "discrete_bc"), ["ding_ray.model.bc"]

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._learn_model = self._model
        self._optimizer = _optimizer(self._model.parameters(), learn)
        self._lr_scheduler = None
        if learn.lr_decay:
            # as DI-engine: built here (which sets warmup_lr), stepped per epoch by whoever wants it
            self._lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self._optimizer, self._lr_factor)
        if self._cfg.continuous:
            losses = {"l1_loss": nn.L1Loss, "mse_loss": nn.MSELoss}
            if self._cfg.loss_type not in losses:
                raise ConfigError(
                    f"policy.loss_type={self._cfg.loss_type!r} is not supported: use 'l1_loss' or 'mse_loss'."
                )
            if self._cfg.model.get("action_space", "regression") != "regression":
                raise ConfigError(
                    "Continuous BC regresses the model's action: set policy.model.action_space='regression'."
                )
            self._loss = losses[self._cfg.loss_type]()
        else:
            self._loss = LabelSmoothCELoss(0.1) if learn.ce_label_smooth else nn.CrossEntropyLoss()

    def _lr_factor(self, epoch: int) -> float:
        learn = self._cfg.learn
        if epoch <= learn.warmup_epoch:
            return learn.warmup_lr / learn.learning_rate
        return learn.decay_rate ** ((epoch - learn.warmup_epoch) // learn.decay_epoch)

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        batch = to_tensor_batch(data, self._device)
        set_mode(self._learn_model, True)
        start = time.perf_counter()
        obs, action = batch["obs"], batch["action"]
        logged = {}
        if self._cfg.continuous:
            loss = self._regression_loss(obs, action)
        else:
            logit = self._learn_model(obs)["logit"]
            action = action.reshape(-1)
            loss = self._loss(logit, action)
            if self._cfg.learn.show_accuracy:
                logged["accuracy"] = self._log_accuracy(logit.detach().argmax(-1), action)
        check_finite_loss(loss, batch, "bc learn")
        forward_time = time.perf_counter() - start
        start = time.perf_counter()
        self._optimizer.zero_grad()
        loss.backward()
        backward_time = time.perf_counter() - start
        self._optimizer.step()
        lrs = [group["lr"] for group in self._optimizer.param_groups]
        return {
            "cur_lr": sum(lrs) / len(lrs),
            "total_loss": loss.item(),
            "forward_time": forward_time,
            "backward_time": backward_time,
            "sync_time": 0.0,  # one learner: no gradients to synchronise
            **logged,
        }

    def _regression_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        mu = self._learn_model(obs)["action"]
        action = action.reshape(mu.shape)
        if self._cfg.learn.tanh_mask:
            inside = (mu >= -TANH_ONE) & (mu <= TANH_ONE)
            # too few predictions inside (under 20 %) leave too little to learn from: use them all
            if 1 - inside.sum().item() / mu.numel() <= 0.8:
                return self._loss(mu.masked_select(inside), action.masked_select(inside))
        return self._loss(mu, action)

    def _log_accuracy(self, predicted: torch.Tensor, action: torch.Tensor) -> float:
        accuracy = (predicted == action).float().mean().item()
        logger.info("bc: accuracy %.4f on this mini-batch", accuracy)
        for value in torch.unique(action).tolist():
            chosen = action == value
            logger.info(
                "bc: accuracy %.4f on action %d",
                (predicted[chosen] == value).float().mean().item(),
                value,
            )
        return accuracy

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "forward_time", "backward_time", "sync_time"]

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model
        self._noise_sigma = float(self._cfg.collect.noise_sigma)
        noise_range = self._cfg.collect.noise_range
        self._noise_range = (float(noise_range["min"]), float(noise_range["max"]))
        # Seeded from torch's global generator so that set_pkg_seed makes the action noise reproducible.
        self._collect_generator = torch.Generator(device=self._device).manual_seed(
            int(torch.randint(2**31, ()).item())
        )

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], eps: float = 0.0) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs, mask = split_obs(data)
        set_mode(self._collect_model, False)  # the learner shares this model and leaves it training
        obs_t = torch.from_numpy(obs).to(self._device)
        if self._cfg.continuous:
            action = self._collect_model(obs_t)["action"].reshape(len(obs_t), -1)  # [B, A], also for A = 1
            noisy = gaussian_action_noise(
                action, self._noise_sigma, self._noise_range, self._collect_generator
            )
            return env_ids, {"action": noisy}
        out = self._discrete(self._collect_model, obs_t, None if mask is None else torch.from_numpy(mask))
        out["action"] = eps_greedy_batch(out["action"].cpu(), mask, out["logit"].shape[-1], eps)
        return env_ids, out

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return transitions  # unroll_len 1, one-step returns: one sample per transition

    # ----- eval -------------------------------------------------------------------------------
    def _forward_eval(self, data: Any, **kwargs: Any) -> Any:
        if isinstance(data, torch.Tensor):
            with torch.inference_mode():
                set_mode(self._eval_model, False)
                return self._eval_tensors(data.to(self._device))
        return super()._forward_eval(data, **kwargs)

    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        if self._cfg.continuous:
            return {"action": self._eval_model(obs)["action"].reshape(len(obs), -1)}
        return self._discrete(self._eval_model, obs)

    @staticmethod
    def _discrete(model: nn.Module, obs: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, Any]:
        logit = model(obs)["logit"]
        return {"logit": logit, "action": mask_q(logit, mask).argmax(-1)}


def _optimizer(params: Any, learn: Any) -> torch.optim.Optimizer:
    """DI-engine's choice: SGD with momentum, or AdamW (DI-engine's 'Adam' with a weight decay)."""
    if learn.optimizer == "SGD":
        return torch.optim.SGD(
            params, lr=learn.learning_rate, weight_decay=learn.weight_decay, momentum=learn.momentum
        )
    if learn.optimizer == "Adam":  # weight_decay=0.0 makes it plain Adam
        return torch.optim.AdamW(params, lr=learn.learning_rate, weight_decay=learn.weight_decay)
    raise ConfigError(f"policy.learn.optimizer={learn.optimizer!r} is not supported: use 'SGD' or 'Adam'.")
