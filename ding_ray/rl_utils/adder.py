"""N-step samples from one env's consecutive transitions (DI-engine's ``get_nstep_return_data``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def nstep_return_data(transitions: list[dict[str, Any]], nstep: int, gamma: float) -> list[dict[str, Any]]:
    """One sample per transition, its ``reward`` the ``[nstep]`` rewards from that step on.

    ``transitions`` are one env's consecutive steps within one episode (a terminal step can only be
    the last). A window that reaches the end of the list is shortened to its ``k`` steps and padded
    with zero rewards: ``value_gamma = gamma ** k`` discounts the bootstrap from the ``next_obs`` and
    ``done`` of the window's last step. The input dicts are not changed.
    """
    if nstep == 1:
        return transitions
    length = len(transitions)
    rewards = np.asarray([t["reward"] for t in transitions], dtype=np.float32).reshape(length)
    samples = []
    for i in range(length):
        k = min(nstep, length - i)
        last = transitions[i + k - 1]
        reward = np.zeros(nstep, dtype=np.float32)
        reward[:k] = rewards[i : i + k]
        sample = dict(transitions[i])
        sample.update(
            reward=reward, next_obs=last["next_obs"], done=last["done"], value_gamma=np.float32(gamma**k)
        )
        samples.append(sample)
    return samples
