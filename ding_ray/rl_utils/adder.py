"""Training samples from one env's consecutive transitions: n-step windows (those of DI-engine's
``get_nstep_return_data`` and of its ``nstep_reward_enhancer``) and DI-engine's ``get_train_sample``
unrolls."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

LAST_FN_TYPES = ("last", "drop", "null_padding")


def nstep_samples(transitions: list[dict[str, Any]], nstep: int, gamma: float) -> list[dict[str, Any]]:
    """One sample per transition, its ``reward`` the ``[nstep]`` rewards from that step on.

    ``transitions`` are one env's consecutive steps within one episode (a terminal step can only be
    the last). A window that reaches the end of the list is shortened to its ``k`` steps and padded
    with zero rewards: ``value_gamma = gamma ** k`` discounts the bootstrap from the ``next_obs`` and
    ``done`` of the window's last step (as DI-engine's ``nstep_reward_enhancer`` discounts it). The
    input dicts are not changed.
    """
    steps = np.minimum(nstep, len(transitions) - np.arange(len(transitions)))
    return _nstep_windows(transitions, nstep, gamma ** steps.astype(np.float64))


def piece_nstep_samples(transitions: list[dict[str, Any]], nstep: int, gamma: float) -> list[dict[str, Any]]:
    """The samples DI-engine's ``get_nstep_return_data`` makes of one piece of an env's trajectory
    (what its serial collectors hand ``get_train_sample``): the windows of ``nstep_samples``, but the
    last ``nstep`` windows of the piece, shortened or not, bootstrap from the piece's last
    ``next_obs`` with ``value_gamma = gamma ** (k - 1)`` for a window of ``k`` steps (1 for the last
    step); every other window with ``gamma ** nstep``. The input dicts are not changed.
    """
    length = len(transitions)
    steps_left = length - np.arange(length)  # the window's k where it is one of the last nstep
    power = np.where(steps_left > nstep, nstep, steps_left - 1)
    return _nstep_windows(transitions, nstep, gamma ** power.astype(np.float64))


def _nstep_windows(
    transitions: list[dict[str, Any]], nstep: int, value_gamma: np.ndarray
) -> list[dict[str, Any]]:
    """Each transition with its window's ``[nstep]`` rewards (zero padded past the list's end), the
    ``next_obs`` and ``done`` of the window's last step and its ``value_gamma``."""
    if nstep == 1 or not transitions:
        return transitions
    length = len(transitions)
    rewards = np.zeros(length + nstep - 1, dtype=np.float32)
    rewards[:length] = np.asarray([t["reward"] for t in transitions], dtype=np.float32).reshape(length)
    windows = np.lib.stride_tricks.sliding_window_view(rewards, nstep)[:length].copy()
    value_gamma = value_gamma.astype(np.float32)
    samples = []
    for i, transition in enumerate(transitions):
        last = transitions[min(i + nstep, length) - 1]
        sample = dict(transition)
        sample.update(
            reward=windows[i], next_obs=last["next_obs"], done=last["done"], value_gamma=value_gamma[i]
        )
        samples.append(sample)
    return samples


def _zeros_like(value: Any) -> Any:
    return torch.zeros_like(value) if isinstance(value, torch.Tensor) else np.zeros_like(value)


def _null_transitions(
    first: dict[str, Any], count: int, null_transition: dict | None
) -> list[dict[str, Any]]:
    """``count`` copies of ``null_transition``, or (None) of ``first`` marked ``null`` with zero obs,
    action and reward, ``done`` True and ``value_gamma`` 0."""
    if null_transition is not None:
        return [copy.deepcopy(null_transition) for _ in range(count)]
    template = copy.deepcopy(first)
    template["null"] = True
    obs = template["obs"]
    template["obs"] = (
        {k: _zeros_like(v) for k, v in obs.items()} if isinstance(obs, dict) else _zeros_like(obs)
    )
    if "action" in template:
        template["action"] = _zeros_like(template["action"])
    template["done"] = True
    template["reward"] = _zeros_like(template["reward"])
    if "value_gamma" in template:
        template["value_gamma"] = 0.0
    return [copy.deepcopy(template) for _ in range(count)]


def _columns(unroll: list[dict[str, Any]]) -> dict[str, Any]:
    """A list of transition dicts as one dict of per-step lists; a dict field (but ``prev_state``)
    becomes a dict of per-step lists."""
    columns: dict[str, Any] = {}
    for key, first in unroll[0].items():
        if isinstance(first, dict) and key != "prev_state":
            columns[key] = {k: [step[key][k] for step in unroll] for k in first}
        else:
            columns[key] = [step[key] for step in unroll]
    return columns


def get_train_sample(
    data: list[dict[str, Any]],
    unroll_len: int,
    last_fn_type: str = "last",
    null_transition: dict | None = None,
) -> list[Any]:
    """Cut one trajectory into unrolls of ``unroll_len`` steps, each a dict of per-step lists.

    ``unroll_len == 1`` returns ``data`` itself. The steps left over after the whole unrolls are
    handled by ``last_fn_type``: ``'last'`` completes them into a final unroll with the steps just
    before them (copies), or with null transitions when there is no whole unroll; ``'drop'``
    discards them; ``'null_padding'`` completes them with null transitions (``null_transition``
    copies, or by default the first left-over step with zero obs/action/reward, ``done`` True and
    ``'null': True``).
    """
    if last_fn_type not in LAST_FN_TYPES:
        raise ValueError(f"last_fn_type must be one of {LAST_FN_TYPES}, got {last_fn_type!r}.")
    if unroll_len < 1:
        raise ValueError(f"unroll_len must be a positive int, got {unroll_len!r}.")
    if unroll_len == 1:
        return data
    whole = len(data) // unroll_len * unroll_len
    unrolls = [data[i : i + unroll_len] for i in range(0, whole, unroll_len)]
    residual = data[whole:]
    if residual and last_fn_type != "drop":
        missing = unroll_len - len(residual)
        if last_fn_type == "last" and unrolls:
            unrolls.append(copy.deepcopy(unrolls[-1][-missing:]) + residual)
        else:
            unrolls.append(residual + _null_transitions(residual[0], missing, null_transition))
    return [_columns(unroll) for unroll in unrolls]
