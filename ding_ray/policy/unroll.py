"""``UnrollBuilder``: one env's stream of transitions, handed over in pieces, as train samples of
``unroll_len`` consecutive steps (IMPALA's unrolls) with a leading time axis."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ding_ray.data.columnar import stack_items


class UnrollBuilder:
    """Cuts each env's stream of transitions into unrolls of ``unroll_len`` steps.

    A collector hands over one env's consecutive steps at a time, in pieces of any length (at an
    episode end, or every few steps). A piece continues an earlier one when its first ``obs`` is
    that piece's last ``next_obs`` (the same array: the collector acts on the observation the env
    returned); the leftover steps of the earlier piece then start the next unroll, so unrolls do
    not depend on how the collector cut the stream. At an episode end (``traj_flag``) the leftover
    steps fill a last unroll: preceded by the episode's steps just before them (DI-engine's
    ``'last'`` rule), or, in an episode shorter than one unroll, followed by ``null`` steps.
    """

    max_pending = 4096  # leftovers of streams that never continued (an env that crashed) are dropped

    def __init__(self, unroll_len: int) -> None:
        self.unroll_len = unroll_len
        # last next_obs of a stream -> (that obs, its last unroll_len - 1 steps, its leftover steps)
        self._pending: OrderedDict[int, tuple[Any, list, list]] = OrderedDict()

    def __call__(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not transitions:
            return []
        length = self.unroll_len
        history, leftover = self._continued(transitions[0]["obs"])
        steps = leftover + transitions
        full = len(steps) // length
        groups = [steps[i * length : (i + 1) * length] for i in range(full)]
        rest = steps[full * length :]
        history = (history + steps[: full * length])[-(length - 1) :] if length > 1 else []
        if transitions[-1].get("traj_flag", transitions[-1]["done"]):
            if rest:
                missing = length - len(rest)
                if len(history) >= missing:
                    groups.append(history[len(history) - missing :] + rest)
                else:
                    groups.append(rest + [_null_step(rest[-1])] * missing)
        else:
            last_obs = transitions[-1]["next_obs"]
            self._pending[id(last_obs)] = (last_obs, history, rest)
            while len(self._pending) > self.max_pending:
                self._pending.popitem(last=False)
        return [_unroll(group) for group in groups]

    def _continued(self, obs: Any) -> tuple[list, list]:
        """``(history, leftover)`` of the stream that ``obs`` continues; empty ones for a new stream."""
        entry = self._pending.get(id(obs))
        if entry is not None and entry[0] is obs:
            del self._pending[id(obs)]
            return entry[1], entry[2]
        for key, (last_obs, history, leftover) in self._pending.items():  # a copied observation
            if np.array_equal(np.asarray(last_obs), np.asarray(obs)):
                del self._pending[key]
                return history, leftover
        return [], []

    def reset(self) -> None:
        self._pending.clear()


_NULL = "_null"  # marks a padding step until its unroll is stacked


def _null_step(last: dict[str, Any]) -> dict[str, Any]:
    """Padding after an episode's last step: its arrays, no reward, flagged as padding."""
    reward = np.zeros_like(np.asarray(last["reward"]))
    return {**last, "reward": reward, "done": True, "traj_flag": True, _NULL: True}


def _unroll(group: list[dict[str, Any]]) -> dict[str, Any]:
    """``unroll_len`` steps -> one train sample: a dict of arrays with a leading time axis."""
    real = sum(1 for step in group if _NULL not in step)
    steps = [{k: v for k, v in step.items() if k not in ("collect_iter", _NULL)} for step in group]
    sample = dict(stack_items(steps))
    null = np.zeros(len(group), dtype=bool)
    null[real:] = True  # padding only ever follows the real steps
    flags = np.asarray(sample["traj_flag"], dtype=bool)
    flags[real - 1 :] = True  # nothing is traced past the last real step
    sample.update(traj_flag=flags, null=null)
    iters = [step["collect_iter"] for step in group if "collect_iter" in step]
    if iters:
        sample["collect_iter"] = min(iters)  # the oldest weights in the unroll: its staleness
    return sample
