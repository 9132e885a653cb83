"""DQN: double Q-learning with n-step targets, a target network and optional prioritized replay."""

from __future__ import annotations

import copy
from typing import Any

import torch

from ding_ray.policy.action_mask import eps_greedy_batch, mask_q, split_obs, split_obs_tensor
from ding_ray.policy.base import Policy
from ding_ray.policy.common import check_finite_loss, set_mode, to_tensor_batch
from ding_ray.policy.optim import make_adam
from ding_ray.rl_utils import double_dqn_nstep_loss
from ding_ray.rl_utils.adder import piece_nstep_samples
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("dqn")
class DQNPolicy(Policy):
    """Learn: double-DQN n-step TD loss. Collect: epsilon-greedy (``eps`` kwarg). Eval: greedy.

    Collect and eval forwards return ``{env_id: {'action': 0-d tensor, 'logit': Q-values}}`` (DI-engine's).
    Observations ``{'observation', 'action_mask'}`` restrict every choice to the legal actions:
    greedy and random actions, and the double-DQN target's next action.
    """

    columnar_collect = True  # _collect_columns and _eval_columns: forwards of all envs at once
    columnar_eval = True
    config = dict(
        type="dqn",
        priority=False,  # return per-sample |TD error| as 'priority' for a prioritized buffer
        priority_IS_weight=False,  # weight the loss by the buffer's importance-sampling weights 'IS'
        discount_factor=0.97,  # gamma
        nstep=1,  # length of the n-step return
        random_collect_size=0,  # env steps collected with uniform random actions before training
        learn=dict(
            update_per_collect=3,  # gradient steps per collect call (serial pipeline)
            batch_size=64,
            learning_rate=0.001,
            weight_decay=0.0,
            target_update_freq=100,  # hard target update every N iterations; 0 -> soft update
            target_theta=0.005,  # soft update rate (used when target_update_freq is 0)
            ignore_done=False,  # bootstrap even through terminal states (envs that only time out)
            huber_kappa=None,  # None: squared TD error (as DI-engine); a float: Huber loss with this delta
            grad_clip=None,  # max global gradient norm; None: no clipping
            num_threads=1,  # torch intra-op threads of the process that trains
        ),
        collect=dict(
            n_sample=8,  # transitions per collect call
            unroll_len=1,
        ),
        eval=dict(),
        other=dict(
            eps=dict(
                type="exp",  # 'exp' or 'linear'
                start=0.95,
                end=0.1,
                decay=10000,  # env steps
            ),
            replay_buffer=dict(replay_buffer_size=10000),  # DI-engine's DQN default, over the buffer's own
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "dqn", ["ding_ray.model.q_network"]

    # ----- learn ------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._gamma = float(self._cfg.discount_factor)
        self._nstep = int(self._cfg.nstep)
        self._priority = bool(self._cfg.priority)
        self._priority_IS_weight = bool(self._cfg.priority_IS_weight)
        self._learn_model = self._model
        self._target_model = copy.deepcopy(self._model).requires_grad_(False)
        self._optimizer = make_adam(self._model.parameters(), learn.learning_rate, learn.weight_decay)
        self._learn_iter = 0

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        """One gradient step on ``data``: ``_td_loss`` gives the loss, then the optimizer step and the
        target update every Q-learning policy here shares (DI-engine's C51, QR-DQN, IQN and Rainbow
        build on its DQN the same way)."""
        learn = self._cfg.learn
        batch = to_tensor_batch(data, self._device)
        set_mode(self._learn_model, True)
        loss, td_error_per_sample, logged = self._td_loss(batch)
        check_finite_loss(loss, batch, f"{self._cfg.type} learn")
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if learn.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self._learn_model.parameters(), learn.grad_clip)
        self._optimizer.step()
        self._learn_iter += 1
        self._update_target()
        stats = torch.stack([loss.detach(), *logged.values()]).tolist()  # one device sync
        out = {"cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": stats[0]}
        out.update(zip(logged, stats[1:]))
        if self._priority:
            out["priority"] = td_error_per_sample.detach().abs().cpu().numpy()
        return out

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """``(loss, per-sample TD error (its magnitude is the priority), {log key: 0-d tensor})`` of
        a batch of tensors, the learn model in train mode."""
        (obs, _), (next_obs, next_mask) = split_obs_tensor(batch["obs"]), split_obs_tensor(batch["next_obs"])
        if obs.dim() > 2:
            # Images: the backward of one pass over [obs; next_obs] would run the convolutions'
            # gradients over both halves (1.5x the plain loop's time measured, Nature CNN, batch 32),
            # so the next-state pass that only picks the double-DQN action runs without a graph.
            q = self._learn_model(obs)["logit"]
            with torch.no_grad():
                next_q_online = mask_q(self._learn_model(next_obs)["logit"], next_mask)
        else:
            # Vectors: one forward over obs and next_obs; the online net's next-state values only
            # pick the double-DQN action, so the extra rows cost nothing but a wider matrix multiply.
            q_all = self._learn_model(torch.cat([obs, next_obs]))["logit"]
            q, next_q_online = q_all[: len(obs)], mask_q(q_all[len(obs) :].detach(), next_mask)
        with torch.no_grad():
            next_q_target = self._target_model(next_obs)["logit"]
        loss, td_error = double_dqn_nstep_loss(
            q,
            next_q_online,
            next_q_target,
            batch["action"].reshape(-1),
            batch["reward"],
            self._done(batch),
            self._gamma,
            batch.get("value_gamma"),
            self._weight(batch),
            self._cfg.learn.huber_kappa,
        )
        # target_q_value: the mean of the target net's whole next-state table, as DI-engine logs it
        return loss, td_error, {"q_value": q.detach().mean(), "target_q_value": next_q_target.mean()}

    def _done(self, batch: dict[str, Any]) -> torch.Tensor:
        """The batch's ``done``, all zeros with ``learn.ignore_done``."""
        return torch.zeros_like(batch["done"]) if self._cfg.learn.ignore_done else batch["done"]

    def _weight(self, batch: dict[str, Any]) -> torch.Tensor | None:
        """The per-sample loss weights: the buffer's importance-sampling weights ``IS`` with
        ``priority_IS_weight``, else None (all 1)."""
        return batch.get("IS") if self._priority_IS_weight else None

    def _update_target(self) -> None:
        freq = self._cfg.learn.target_update_freq
        if freq:
            if self._learn_iter % freq == 0:
                self._target_model.load_state_dict(self._learn_model.state_dict())
            return
        theta = self._cfg.learn.target_theta
        with torch.no_grad():
            for target, source in zip(self._target_model.parameters(), self._learn_model.parameters()):
                target.lerp_(source, theta)

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "q_value", "target_q_value"]

    def _state_dict_learn(self) -> dict[str, Any]:
        return {
            "model": self._learn_model.state_dict(),
            "target_model": self._target_model.state_dict(),
            "optimizer": self._optimizer.state_dict(),
        }

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        super()._load_state_dict_learn(state_dict)
        self._target_model.load_state_dict(state_dict.get("target_model", state_dict["model"]))

    # ----- collect ----------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._collect_model = self._model
        self._nstep = int(self._cfg.nstep)
        self._gamma = float(self._cfg.discount_factor)
        self._action_dim = int(self._cfg.model.get("action_shape", 0) or 0)

    @torch.inference_mode()
    def _collect_columns(self, data: dict[int, Any], eps: float = 0.0) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs, mask = split_obs(data)
        model = self._collect_model
        set_mode(model, False)  # the learner may share this model and left it in train mode
        q = model(torch.from_numpy(obs).to(self._device))["logit"]
        action = mask_q(q, None if mask is None else torch.from_numpy(mask)).argmax(-1).cpu()
        return env_ids, {"action": eps_greedy_batch(action, mask, q.shape[-1], eps), "logit": q}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        return self._transition(obs, policy_output, timestep)

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One sample per transition of one piece of an env's trajectory; with nstep > 1 rewards become
        [nstep] vectors, the last windows of the piece shortened at its end as DI-engine's
        ``get_nstep_return_data`` makes them (``rl_utils.adder.piece_nstep_samples``)."""
        return piece_nstep_samples(transitions, self._nstep, self._gamma)

    # ----- eval -------------------------------------------------------------------------------

    @torch.inference_mode()
    def _eval_columns(self, data: dict[int, Any]) -> tuple[list[int], dict[str, Any]]:
        env_ids, obs, mask = split_obs(data)
        set_mode(self._eval_model, False)
        obs_t = torch.from_numpy(obs).to(self._device)
        return env_ids, self._eval_tensors(obs_t, None if mask is None else torch.from_numpy(mask))

    def _eval_tensors(self, obs: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, Any]:
        q = self._eval_model(obs)["logit"]
        return {"action": mask_q(q, mask).argmax(-1), "logit": q}
