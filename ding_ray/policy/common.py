"""Helpers shared by policies: training batches to tensors, observations to a batch, batched
forward outputs to DI-engine's per-env form."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from ding_ray.data.columnar import row_builder, stack_items
from ding_ray.data.storage import check_ring_fits, frame_paths_of
from ding_ray.errors import ConfigError, NonFiniteError, ShapeError


def set_mode(model: torch.nn.Module, training: bool) -> torch.nn.Module:
    """Put ``model`` in train or eval mode, only if it is not there already: the three modes share
    one model, and ``train()`` walks every submodule on each call of a hot forward."""
    if model.training != training:
        model.train(training)
    return model


def polyak_target(model: torch.nn.Module) -> tuple[torch.nn.Module, list, list]:
    """A frozen copy of ``model`` for soft updates (``rl_utils.soft_update``): ``(target, its
    parameters, model's parameters)``, the two lists in the same order."""
    target = copy.deepcopy(model).requires_grad_(False)
    return target, list(target.parameters()), list(model.parameters())


def to_tensor_batch(data: Any, device: str | torch.device = "cpu") -> dict[str, Any]:
    """A list of transition dicts or a columnar batch -> dict of tensors with a leading batch axis.

    Floating arrays become float32, booleans float32 (0/1 masks), integers int64, except uint8
    observations (``OBS_KEYS``, and what is nested under them): pixels stay uint8 up to the model,
    which scales them itself (``model.common.float_obs``), so a batch of frames is copied at a
    quarter of the float32 size (an eighth of int64's). Nested dicts are converted recursively.
    """
    batch = stack_items(data) if isinstance(data, list) else data
    if not isinstance(batch, Mapping):
        raise ShapeError(
            f"Training data must be a list of dicts or a dict of arrays, got {type(data).__name__}."
        )
    return {key: _to_tensor(value, device, key in OBS_KEYS) for key, value in batch.items()}


# Columns that hold observations: their uint8 arrays (frames) reach the model as uint8.
OBS_KEYS = frozenset({"obs", "next_obs"})


def _to_tensor(value: Any, device: str | torch.device, is_obs: bool = False) -> Any:
    if isinstance(value, Mapping):
        return {k: _to_tensor(v, device, is_obs) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.to(device)
    array = np.asarray(value)
    if is_obs and array.dtype == np.uint8:
        pass
    elif array.dtype == np.bool_ or np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float32, copy=False)
    elif np.issubdtype(array.dtype, np.integer):
        array = array.astype(np.int64, copy=False)
    else:
        return value  # strings, objects: not training inputs
    if not array.flags.writeable:  # arrays from Ray's object store are read-only
        array = array.copy()
    return torch.from_numpy(array).to(device)


def sample_action(logit: Any, continuous: bool) -> torch.Tensor:
    """An action drawn from the actor's output: the Gaussian ``{'mu', 'sigma'}``, or the categorical
    of the logits [B, A]."""
    if continuous:
        return logit["mu"] + logit["sigma"] * torch.randn_like(logit["mu"])
    return torch.multinomial(torch.softmax(logit, dim=-1), 1).squeeze(-1)


def minibatches(n: int, batch_size: int) -> list[torch.Tensor]:
    """Shuffled index sets of ``batch_size`` covering all ``n`` rows; the last one takes the final
    ``batch_size`` of the permutation (overlapping the one before) so that every set is full. The
    permutation is drawn from numpy's global generator, as DI-engine's ``split_data_generator``
    draws it (PPO, A2C): a seeded run shuffles as DI-engine's does."""
    order = torch.as_tensor(np.random.permutation(n))
    if n <= batch_size:
        return [order]
    starts = list(range(0, n - batch_size + 1, batch_size))
    if starts[-1] + batch_size < n:
        starts.append(n - batch_size)
    return [order[s : s + batch_size] for s in starts]


def transition(
    obs: Any, policy_output: Mapping[str, Any], timestep: Any, *keys: str, bootstrap_on_truncation: bool
) -> dict[str, Any]:
    """One step as the policies record it, with the policy output's ``action`` and ``keys``.

    ``done`` is the env's, as in DI-engine: the episode ended, by a termination or a time limit.
    With ``bootstrap_on_truncation`` (``policy.learn.bootstrap_on_truncation``) it marks real
    terminations only, so targets bootstrap from ``next_obs`` through time-limit truncations.
    """
    done = bool(timestep.done)
    if bootstrap_on_truncation and done and timestep.info.get("truncated", False):
        done = False
    return {
        "obs": obs,
        "next_obs": timestep.obs,
        "action": policy_output["action"],
        **{key: policy_output[key] for key in keys},
        "reward": timestep.reward,
        "done": done,
    }


def default_vac_action_space(cfg: Any, model: torch.nn.Module | None) -> None:
    """The default VAC model (no ``model`` given) takes the policy's ``action_space`` unless
    ``cfg.model`` names one; naming another is an error (actor-critic policies: PPO, IMPALA)."""
    if model is None and cfg.model.get("type", "vac") == "vac":
        model_space = cfg.model.setdefault("action_space", cfg.action_space)
        if model_space != cfg.action_space:
            raise ConfigError(
                f"policy.action_space={cfg.action_space!r} but policy.model.action_space="
                f"{model_space!r}: a {model_space} model cannot give {cfg.action_space} actions; "
                "set both to the same value."
            )


def obs_batch(data: Mapping[int, Any]) -> tuple[list[int], np.ndarray]:
    """``{env_id: obs}`` -> (env ids, stacked observations: uint8 if they are uint8 (frames, scaled
    by the model), else float32)."""
    env_ids = list(data.keys())
    try:
        return env_ids, stack_obs(list(data.values()))
    except ValueError as e:
        shapes = {i: np.shape(obs) for i, obs in data.items()}
        raise ShapeError(f"Observations of the envs differ in shape or are not numeric: {shapes}.") from e


def stack_obs(observations: list[Any]) -> np.ndarray:
    """Observations -> one array with a leading batch axis: uint8 when the first one is a uint8
    array or tensor (pixels stay bytes up to the model), else float32."""
    first_dtype = getattr(observations[0], "dtype", None) if observations else None
    dtype = np.uint8 if first_dtype in (np.uint8, torch.uint8) else np.float32
    # one np.array call over the list: several times cheaper than np.stack at 8 envs
    return np.array(observations, dtype=dtype)


def check_finite_loss(loss: torch.Tensor, batch: Mapping[str, Any], where: str) -> None:
    """Raise ``NonFiniteError`` naming the input columns with NaN/inf if ``loss`` is not finite.

    Called before ``backward`` so that one bad batch never reaches the weights.
    """
    if bool(torch.isfinite(loss)):
        return
    bad = [
        key
        for key, value in batch.items()
        if isinstance(value, torch.Tensor)
        and value.is_floating_point()
        and not bool(torch.isfinite(value).all())
    ]
    cause = (
        f"non-finite values in input column(s) {bad}: check the env's observations/rewards"
        if bad
        else "inputs are finite, so the model diverged: lower the learning rate or clip gradients (grad_clip)"
    )
    raise NonFiniteError(f"{where}: loss is {loss.item()} — {cause}.")


def per_env(env_ids: list[int], columns: Mapping[str, Any], numpy: bool = False) -> dict[int, dict[str, Any]]:
    """Batched forward outputs (tensors or numpy arrays with a leading env axis, in dicts and lists)
    -> ``{env_id: {key: value}}``.

    ``numpy=False`` gives DI-engine's public types: CPU tensors (a 0-d tensor for a discrete action
    or a value). ``numpy=True`` is the collectors' fast path: numpy rows, and Python numbers for
    one number per env, with no tensor made per env.
    """
    return dict(zip(env_ids, _rows(columns, numpy)))


def _rows(columns: Mapping[str, Any], numpy: bool) -> list[dict[str, Any]]:
    parts = [_split(value, numpy) for value in columns.values()]
    return row_builder(len(parts))(zip(*parts), *columns)


def _split(value: Any, numpy: bool) -> Any:
    """One batched output -> its per-env parts."""
    if isinstance(value, torch.Tensor):
        if not numpy:
            return value.cpu().unbind(0)
        if value.ndim == 1:
            return value.tolist()
        value = value.cpu().numpy()
    if isinstance(value, np.ndarray):
        if not numpy:
            return torch.from_numpy(value).unbind(0)
        return value.tolist() if value.ndim == 1 else list(value)
    if isinstance(value, (list, tuple)):
        return [list(row) for row in zip(*(_split(v, numpy) for v in value))]
    if isinstance(value, Mapping):
        return _rows(value, numpy)
    raise ShapeError(f"A policy output must be tensors in dicts and lists, got {type(value).__name__}.")


def outputs_to_numpy(output: Any) -> Any:
    """Per-env forward outputs with every tensor as numpy (a 0-d tensor as a Python number)."""
    if isinstance(output, torch.Tensor):
        output = output.detach().cpu()
        return output.item() if output.ndim == 0 else output.numpy()
    if isinstance(output, Mapping):
        return {key: outputs_to_numpy(value) for key, value in output.items()}
    if isinstance(output, (list, tuple)):
        return [outputs_to_numpy(value) for value in output]
    return output


def numpy_forward(mode: Any) -> Callable[..., dict[int, dict[str, Any]]]:
    """The forward ding_ray's collectors and evaluators run for ``mode.forward``: for a ding_ray
    policy's collect or eval mode its numpy fast path (``Policy._forward_collect_numpy`` or
    ``Policy._forward_eval_numpy``); for any other object with a ``forward``, that forward's outputs
    converted by ``outputs_to_numpy``. Env managers, transitions and batches then see numpy only."""
    from ding_ray.policy.base import Policy  # here, not at the top: base imports this module

    forward = mode.forward
    policy = getattr(forward, "__self__", None)  # the policy whose method the mode holds
    if isinstance(policy, Policy):
        if isinstance(mode, Policy.collect_function):
            return policy._forward_collect_numpy
        if isinstance(mode, Policy.eval_function):
            return policy._forward_eval_numpy
    return lambda data, **kwargs: outputs_to_numpy(forward(data, **kwargs))


def runs_here(cfg: Mapping) -> bool:
    """Whether the learner and buffer run on this machine, whose memory compile-time checks can
    measure: not when the run joins a cluster by ``ray.address``."""
    return not (cfg.get("ray") or {}).get("address")


def check_replay_memory(cfg: Mapping, steps: int | None = None) -> None:
    """Refuse (``ConfigError``) at compile time a replay buffer whose observations alone need more
    than this machine's memory.

    A row holds ``obs`` and ``next_obs`` of ``policy.model.obs_shape`` (``steps`` of each where the
    policy stores unrolls), counted at one byte a value and with each frame held once, as the buffer
    stores uint8 stacks: a bound below the real size (float observations take 4 bytes a value),
    which the buffer checks itself at its first push. Nothing is checked while the shape is unknown
    (an entry reads it from the env later) or off this machine (``runs_here``).
    """
    policy = cfg["policy"]
    buffer = (policy.get("other") or {}).get("replay_buffer") or {}
    shape = (policy.get("model") or {}).get("obs_shape")
    shape = (shape,) if isinstance(shape, int) else shape
    capacity = buffer.get("replay_buffer_size")
    if (
        policy.get("on_policy")
        or buffer.get("type") == "episode"  # counts episodes, not rows
        or not capacity
        or not isinstance(shape, (list, tuple))
        or not all(isinstance(n, int) for n in shape)
        or not runs_here(cfg)
    ):
        return
    row = ((steps,) if steps else ()) + tuple(shape)
    fields = {("obs",): (row, np.uint8), ("next_obs",): (row, np.uint8)}
    what = f"of {f'{steps}-step unrolls of ' if steps else ''}obs and next_obs {list(shape)}"
    what += " alone (1 byte a value, each frame once)"
    check_ring_fits(int(capacity), fields, frame_paths_of(fields, buffer.get("frame_dedup", True)), what)
