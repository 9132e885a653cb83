"""The ranges numeric config keys must lie in, stated once as a table by key path and checked by
``compile_config`` after merging, so that a value out of range fails before anything is built,
with the key's path in the error, instead of training to nothing or failing deep inside torch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ding_ray.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """A real number (None passes: "not set") in ``[low, high]``; ``open_low`` excludes ``low``.
    ``why`` says what an upper bound protects (shown when a value is above it); ``hint`` what the
    key does and what to set (a sentence shown after any problem)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    why: str = ""
    hint: str = ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, or None when it is in range."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, got {type(value).__name__} {value!r}"
        if math.isnan(value):
            return "must be a number, got NaN"
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            if self.high is not None and not self.why:  # an interval of the math (a discount)
                return (
                    f"must be in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}], got {value!r}"
                )
            if self.open_low:
                return f"must be > {self.low:g}, got {value!r}"
            return f"must be >= {self.low:g}, got {value!r}; set it to {self.low:g} or more"
        if self.high is not None and value > self.high:
            bounds = f"in [{self.low:g}, {self.high:g}]" if self.low is not None else f"<= {self.high:g}"
            return f"must be {bounds}, got {value!r}" + (f" ({self.why})" if self.why else "")
        return None


_POSITIVE = Range(0, open_low=True)
_ENVS_IN_ONE_PROCESS = "one env manager steps all its envs in one process; use more collectors (Ray) instead"
_RING_ARRAYS = "the buffer preallocates arrays of this many rows; 1e8 rows of 4 float32s take 3.2 GB"
_VTRACE = "1.0 is the paper's and DI-engine's value."

# key path in the compiled config -> its range; a key a config lacks (another policy's) is skipped
RANGES: dict[str, Range] = {
    "seed": Range(0, 2**32 - 1),  # numpy's seeding takes no more
    "env.collector_env_num": Range(1, 1024, why=_ENVS_IN_ONE_PROCESS),
    "env.evaluator_env_num": Range(1, 1024, why=_ENVS_IN_ONE_PROCESS),
    "env.n_evaluator_episode": Range(1),
    "env.stop_value": Range(),  # any number (inf: never stop early); None: no stop value
    "policy.discount_factor": Range(0, 1),
    "policy.learn.discount_factor": Range(0, 1),  # SAC's
    "policy.collect.discount_factor": Range(0, 1),  # PPO's
    "policy.collect.gae_lambda": Range(0, 1),
    "policy.learn.target_theta": Range(0, 1),
    "policy.nstep": Range(1),
    "policy.random_collect_size": Range(0),
    "policy.learn.batch_size": Range(1),
    "policy.learn.update_per_collect": Range(1),
    "policy.learn.learning_rate": _POSITIVE,
    "policy.learn.learning_rate_q": _POSITIVE,
    "policy.learn.learning_rate_policy": _POSITIVE,
    "policy.learn.learning_rate_alpha": _POSITIVE,
    "policy.collect.n_sample": Range(1, 10**7, why="one collect call holds them all in memory"),
    "policy.collect.n_episode": Range(1),
    "policy.eval.evaluator.eval_freq": Range(1),
    "policy.eval.evaluator.max_episode_steps": Range(1),  # None: the default cut
    "policy.other.replay_buffer.replay_buffer_size": Range(1, 10**8, why=_RING_ARRAYS),
    "policy.other.replay_buffer.max_use": Range(
        1, hint="An item is removed once sampled this many times; inf (the default) never removes one."
    ),
    # IMPALA's V-trace: every trace coefficient is scaled by lambda_, importance weights are clipped
    "policy.learn.lambda_": Range(
        0, 1, hint="1 is the paper's V-trace, 0 one-step targets; DI-engine's is 0.95."
    ),
    "policy.learn.rho_clip_ratio": Range(
        0,
        open_low=True,
        hint="It clips the importance weights of the value targets (0 would stop them learning); " + _VTRACE,
    ),
    "policy.learn.c_clip_ratio": Range(
        0, hint="It clips the trace coefficients (0 cuts the traces: one-step targets); " + _VTRACE
    ),
    "policy.learn.rho_pg_clip_ratio": Range(
        0,
        open_low=True,
        hint="It clips the importance weights of the policy gradient (0 would stop the "
        "policy learning); " + _VTRACE,
    ),
    "ray.call_timeout_s": _POSITIVE,
    "ray.head_timeout_s": _POSITIVE,
    "ray.train_iters_per_call": Range(1, hint="It counts the gradient steps of one learner call."),
    "ray.sample_prefetch": Range(
        1, hint="It counts the sample+train calls queued on the learner (1: none waits while one runs)."
    ),
    "checkpoint.every_s": Range(0),  # 0: checkpoints by checkpoint.freq only
}


def _get(cfg: Mapping, path: str) -> tuple[bool, Any]:
    for key in path.split("."):
        if not isinstance(cfg, Mapping) or key not in cfg:
            return False, None
        cfg = cfg[key]
    return True, cfg


def check_ranges(cfg: Mapping, ranges: Mapping[str, Range] = RANGES) -> None:
    """Raise ``ConfigError`` naming the first key of ``ranges`` whose value in ``cfg`` is out of range."""
    for path, allowed in ranges.items():
        present, value = _get(cfg, path)
        problem = allowed.problem(value) if present else None
        if problem is not None:
            raise ConfigError(
                f"Config key '{path}' {problem}." + (f" {allowed.hint}" if allowed.hint else "")
            )
