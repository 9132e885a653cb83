"""Legal-action masks: observations ``{'observation': ..., 'action_mask': ...}`` (board games, the
self-play env) split into the network's input and a boolean mask, masked greedy and random choices,
and a uniformly random player that respects the mask."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ding_ray.errors import ShapeError
from ding_ray.policy.common import obs_batch


def split_obs(data: Mapping[int, Any]) -> tuple[list[int], np.ndarray, np.ndarray | None]:
    """``{env_id: obs}`` -> (env ids, float32 observations, bool masks or None).

    An observation with an ``action_mask`` must be a dict ``{'observation', 'action_mask'}``; any
    other observation goes through as a plain array with no mask.
    """
    first = next(iter(data.values()), None)
    if not isinstance(first, Mapping):
        env_ids, obs = obs_batch(data)
        return env_ids, obs, None
    if "observation" not in first or "action_mask" not in first:
        raise ShapeError(
            f"A dict observation must hold 'observation' and 'action_mask', got keys {sorted(first)}. "
            "Flatten other dict observations in the env (gymnasium.wrappers.FlattenObservation)."
        )
    env_ids, obs = obs_batch({i: o["observation"] for i, o in data.items()})
    mask = np.array([o["action_mask"] for o in data.values()], dtype=bool)
    if not mask.any(axis=-1).all():
        raise ShapeError("An action_mask allows no action; every observation must allow at least one.")
    return env_ids, obs, mask


def split_obs_tensor(obs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A training batch's ``obs`` column (a tensor, or a dict of tensors with a mask) -> (input, mask)."""
    if isinstance(obs, Mapping):
        return obs["observation"], obs["action_mask"] > 0.5
    return obs, None


def mask_q(q: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``q`` with illegal actions at -inf, so that argmax (and double DQN's choice) is always legal."""
    return q if mask is None else q.masked_fill(~mask, float("-inf"))


def eps_greedy_batch(
    greedy: torch.Tensor, mask: np.ndarray | None, n_actions: int, eps: float
) -> torch.Tensor:
    """DI-engine's epsilon-greedy over one collect step's batch: a single draw of numpy's global
    generator decides for every env at once (greedy when it exceeds ``eps``); otherwise every env's
    action is random, from torch's global generator: uniform over ``n_actions``, or with a mask
    uniform over each env's legal actions. ``greedy`` is the [B] tensor of greedy actions (CPU)."""
    if np.random.random() > eps:
        return greedy
    if mask is None:
        return torch.randint(0, n_actions, greedy.shape)
    return torch.multinomial(torch.from_numpy(mask).float(), 1).squeeze(-1)


def explore(
    greedy: Sequence[int], mask: np.ndarray | None, n_actions: int, eps: float, rng: random.Random
) -> list[int]:
    """Epsilon-greedy per env: with probability ``eps`` an action uniform over the legal ones."""
    draw = rng.random
    out = []
    for i, action in enumerate(greedy):
        if draw() < eps:
            if mask is None:
                action = int(draw() * n_actions)
            else:
                legal = np.flatnonzero(mask[i])
                action = int(legal[int(draw() * len(legal))])
        out.append(action)
    return out


class RandomLegalPolicy:
    """A player that picks uniformly among its legal actions: the fixed opponent of self-play
    evaluations. It has the policy-mode calls the battle workers use (``forward``, ``reset``), and
    ``collect_data = False`` tells a battle collector to keep no training data for it."""

    collect_data = False

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def forward(self, data: Mapping[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        env_ids, _, mask = split_obs(data)
        if mask is None:
            raise ShapeError("RandomLegalPolicy needs observations with an 'action_mask'.")
        greedy = [0] * len(env_ids)
        actions = explore(greedy, mask, mask.shape[-1], 1.0, self._rng)
        return {env_id: {"action": a} for env_id, a in zip(env_ids, actions)}

    def reset(self, data_id: list[int] | None = None) -> None:
        pass
