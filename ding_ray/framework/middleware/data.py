"""Stages between collection and training that move data through replay buffers.

``data_pusher`` stores what a collector stage left in the context, ``offpolicy_data_fetcher``
samples the next training batch and, once training has run, hands the new priorities back to a
prioritized buffer. ``sqil_data_pusher``, ``priority_calculator`` and ``buffer_saver`` are the
smaller helpers of DI-engine's pipelines. Every stage talks to a buffer only through ``push``,
``sample``, ``update`` and ``save_data``, so a Ray actor with those methods fits as well.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.data.buffer.pipeline import PipelineBuffer, pipeline_buffer
from ding_ray.data.columnar import Batch, flatten, unflatten, unstack_batch
from ding_ray.errors import ConfigError, DingRayError, ShapeError

logger = logging.getLogger(__name__)

# DI-engine's field naming where a transition came from: the env, or (ding_ray's rolloutor, as
# DI-engine's) that env's current episode; either way one id per run of consecutive steps.
ENV_ID_KEY = "env_data_id"


# ---------------------------------------------------------------------------- pushing
def data_pusher(cfg: EasyDict, buffer_: Any, group_by_env: bool | None = None) -> Callable:
    """Push the collected transitions (or whole episodes) into ``buffer_`` and clear them.

    Transitions go in as one ``push`` call; episodes one ``push`` per episode, as DI-engine does
    (an ``EpisodeReplayBuffer`` stores each as one item). With ``group_by_env`` each env's
    transitions are pushed together, in their order, so that consecutive items of the buffer are
    consecutive steps of one env: DI-engine tags items with their env for ``groupby`` sampling,
    ding_ray keeps the ``env_data_id`` field on the items, which a ``SequenceReplayBuffer`` with
    ``episode_id_key='env_data_id'`` uses to never build a sequence across two envs.

    Reads ctx: trajectories or episodes, env_step.
    Writes ctx: trajectories / episodes (set to None once pushed).
    """
    buffer_ = pipeline_buffer(buffer_)
    push_episode = buffer_.push_episode if isinstance(buffer_, PipelineBuffer) else buffer_.push

    def _push(ctx: Any) -> None:
        envstep = getattr(ctx, "env_step", -1)
        if ctx.trajectories is not None:
            data = _grouped_by_env(ctx.trajectories) if group_by_env else list(ctx.trajectories)
            if data:
                buffer_.push(data, envstep)
            ctx.trajectories = None
        elif getattr(ctx, "episodes", None) is not None:
            for episode in ctx.episodes:
                push_episode(episode, envstep)
            ctx.episodes = None
        else:
            raise DingRayError(
                "data_pusher found neither ctx.trajectories nor ctx.episodes: put a collector stage "
                "(one that writes one of them) before it in the pipeline."
            )

    return _push


def _grouped_by_env(transitions: list) -> list:
    """The transitions reordered env by env (stable: each env's steps keep their order)."""
    missing = [i for i, t in enumerate(transitions) if ENV_ID_KEY not in t]
    if missing:
        raise ShapeError(
            f"data_pusher(group_by_env=True) needs every transition to carry '{ENV_ID_KEY}' (the env "
            f"it came from); transition {missing[0]} has none. Add it in the collector stage, or "
            "leave group_by_env off."
        )
    env_ids = np.array([np.asarray(t[ENV_ID_KEY]).item() for t in transitions])
    return [transitions[i] for i in np.argsort(env_ids, kind="stable")]


def sqil_data_pusher(cfg: EasyDict, buffer_: Any, expert: bool) -> Callable:
    """Push the collected transitions with their reward replaced by 1 (``expert``) or 0 (SQIL).

    The transitions are copied, not changed in place: the collector's data keeps its rewards.

    Reads ctx: trajectories, env_step.
    Writes ctx: trajectories (set to None once pushed).
    """
    value = 1.0 if expert else 0.0

    def _pusher(ctx: Any) -> None:
        if ctx.trajectories is None:
            raise DingRayError("sqil_data_pusher found no ctx.trajectories: put a collector stage before it.")
        relabelled = [{**t, "reward": _filled_like(t["reward"], value)} for t in ctx.trajectories]
        if relabelled:
            buffer_.push(relabelled, getattr(ctx, "env_step", -1))
        ctx.trajectories = None

    return _pusher


def _filled_like(reward: Any, value: float) -> Any:
    """``value`` in the shape and dtype of ``reward`` (a number, a numpy array or a tensor)."""
    if isinstance(reward, np.ndarray):
        return np.full_like(reward, value)
    if hasattr(reward, "detach"):  # a torch tensor, without importing torch here
        return reward.detach().clone().fill_(value)
    return value


def priority_calculator(priority_calculation_fn: Callable) -> Callable:
    """Give each collected transition a ``priority`` computed by ``priority_calculation_fn``.

    The function takes the list of transitions and returns one number per transition; a
    prioritized buffer then stores them as the items' initial priorities.

    Reads ctx: trajectories.
    Writes ctx: trajectories (each gets a 'priority').
    """

    def _priority_calculator(ctx: Any) -> None:
        if not ctx.trajectories:
            return
        priority = np.asarray(priority_calculation_fn(ctx.trajectories), dtype=np.float64).reshape(-1)
        if len(priority) != len(ctx.trajectories):
            raise ShapeError(
                f"priority_calculation_fn returned {len(priority)} priorities for "
                f"{len(ctx.trajectories)} transitions; it must return one per transition."
            )
        for transition, p in zip(ctx.trajectories, priority, strict=True):
            transition["priority"] = float(p)

    return _priority_calculator


def buffer_saver(cfg: EasyDict, buffer_: Any, every_envstep: int = 1000, replace: bool = False) -> Callable:
    """Save the buffer's data every ``every_envstep`` env steps (the first call saves at once).

    Files go to ``<exp_name>/replaybuffer/``: ``data_envstep_<N>.msgpack``, or always
    ``data_latest.msgpack`` with ``replace``. They are the buffer's ``save_data`` files (msgpack
    with a checksummed header, where DI-engine writes hickle files), read back with ``load_data``.

    Reads ctx: env_step.
    """
    folder = os.path.join(cfg.get("exp_name", "default_experiment"), "replaybuffer")
    last_saved = -every_envstep

    def _save(ctx: Any) -> None:
        nonlocal last_saved
        env_step = getattr(ctx, "env_step", None)
        if env_step is None:
            raise DingRayError(
                "buffer_saver needs ctx.env_step: use it in an online pipeline that collects by steps."
            )
        if env_step < last_saved + every_envstep:
            return
        last_saved = env_step
        os.makedirs(folder, exist_ok=True)
        name = "data_latest.msgpack" if replace else f"data_envstep_{env_step}.msgpack"
        buffer_.save_data(os.path.join(folder, name))

    return _save


# ---------------------------------------------------------------------------- fetching
def offpolicy_data_fetcher(cfg: EasyDict, buffer_: Any, data_shortage_warning: bool = False) -> Callable:
    """Sample a training batch of ``cfg.policy.learn.batch_size`` items; update priorities after.

    ``buffer_`` is one buffer, a list of ``(buffer, ratio)`` pairs (each gives
    ``int(batch_size * ratio)`` items, concatenated in list order: SQIL, R2D3) or a dict of
    buffers (``train_data`` becomes a dict with a batch of each, under the same keys). With
    ``cfg.policy.collect.unroll_len > 1`` a single ``SequenceReplayBuffer`` returns
    ``batch_size`` runs of ``unroll_len`` consecutive steps (with replacement, as DI-engine).
    When a buffer cannot serve yet, ``train_data`` is None (and a warning is logged with
    ``data_shortage_warning``), so the trainer stage skips this iteration.

    After the later stages ran, if ``ctx.train_output`` (a dict, or a list of dicts of which the
    last counts) carries priorities, they go to ``buffer_.update``: either a ``Learner``'s
    ``priority_info`` as it is (``BaseLearner``'s ids and priorities; a learner actor's references,
    which the buffer actor reads itself), or ``priority`` (one per sampled item, as a policy's
    learn mode returns it), matched here with the ids the sampled items carry. A batch from a
    buffer that does not prioritize carries no ids and is left alone.

    Reads ctx: train_iter; after the yield, train_output.
    Writes ctx: train_data.
    """
    buffer_ = pipeline_buffer(buffer_)
    batch_size = int(cfg.policy.learn.batch_size)
    unroll_len = int((cfg.policy.get("collect") or {}).get("unroll_len", 1) or 1)
    sample = _sampler(buffer_, batch_size, unroll_len)

    def _fetch(ctx: Any):
        data = sample(ctx.train_iter)
        if data is None and data_shortage_warning:
            logger.warning(
                "The replay buffer cannot serve a batch of %d yet; this training iteration is skipped "
                "(collect more per iteration, e.g. a larger n_sample, to avoid it).",
                batch_size,
            )
        ctx.train_data = data
        yield
        # also without a batch this time: a learner actor's earlier calls may have finished now
        if not isinstance(buffer_, (list, tuple, Mapping)):
            info = _priority_update(ctx.train_output, data)
            if info is not None:
                buffer_.update(info)

    return _fetch


def _sampler(buffer_: Any, batch_size: int, unroll_len: int) -> Callable[[int], Any]:
    """``sample(train_iter)`` for the accepted forms of ``buffer_``; checks them now, not at run time."""
    if isinstance(buffer_, Mapping):
        _refuse_unroll(unroll_len, "a dict of buffers")
        buffers = dict(buffer_)

        def sample_dict(train_iter: int) -> dict | None:
            out = {}
            for key, buf in buffers.items():
                out[key] = buf.sample(batch_size, train_iter)
                if out[key] is None:
                    return None
            return out

        return sample_dict
    if isinstance(buffer_, (list, tuple)):
        _refuse_unroll(unroll_len, "a list of (buffer, ratio) pairs")
        pairs = []
        for entry in buffer_:
            if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and hasattr(entry[0], "sample")):
                raise ConfigError(
                    "offpolicy_data_fetcher takes a buffer, a dict of buffers or a list of (buffer, ratio) "
                    f"pairs; got the list entry {entry!r}."
                )
            size = int(batch_size * float(entry[1]))
            if size < 1:
                raise ConfigError(
                    f"A (buffer, ratio) pair gives int({batch_size} * {entry[1]}) = {size} items; "
                    "the ratio must give at least one item of policy.learn.batch_size."
                )
            pairs.append((entry[0], size))

        def sample_list(train_iter: int) -> Any:
            parts = [buf.sample(size, train_iter) for buf, size in pairs]
            return None if any(p is None for p in parts) else _concat(parts)

        return sample_list
    if not callable(getattr(buffer_, "sample", None)):
        raise ConfigError(
            f"offpolicy_data_fetcher needs a buffer (with sample/update), a dict of buffers or a list of "
            f"(buffer, ratio) pairs, got {type(buffer_).__name__}."
        )
    if unroll_len > 1:
        if not _takes_sequence(buffer_):
            raise ConfigError(
                f"policy.collect.unroll_len={unroll_len} needs a buffer that samples runs of consecutive "
                f"steps: use a SequenceReplayBuffer (replay_buffer type 'sequence'), not "
                f"{type(buffer_).__name__}."
            )
        return lambda train_iter: buffer_.sample(batch_size, unroll_len, train_iter, replace=True)
    return lambda train_iter: buffer_.sample(batch_size, train_iter)


def _refuse_unroll(unroll_len: int, what: str) -> None:
    if unroll_len > 1:
        raise ConfigError(
            f"offpolicy_data_fetcher samples runs of unroll_len={unroll_len} steps from one buffer only, "
            f"not from {what}; set policy.collect.unroll_len=1 or pass a single SequenceReplayBuffer."
        )


def _takes_sequence(buffer_: Any) -> bool:
    try:
        return "sequence" in inspect.signature(buffer_.sample).parameters
    except (TypeError, ValueError):  # a callable whose signature cannot be read: let the call decide
        return True


def _concat(parts: list) -> Any:
    """One batch from several: lists are joined; ``Batch`` es are joined column by column."""
    if all(isinstance(p, Mapping) for p in parts):
        flats = [flatten(p) for p in parts]
        paths = list(flats[0])
        if any(list(f) != paths for f in flats[1:]):
            raise ShapeError("The buffers of offpolicy_data_fetcher hold items with different fields.")
        return unflatten({path: np.concatenate([f[path] for f in flats]) for path in paths}, Batch)
    items: list = []
    for part in parts:
        items.extend(unstack_batch(part) if isinstance(part, Mapping) else part)
    return items


def _priority_update(train_output: Any, data: Any) -> dict | None:
    """The ``update`` argument for the priorities in ``train_output``, or None when it has none."""
    if isinstance(train_output, (list, tuple, deque)):  # DI-engine's ctx.train_output may be a deque
        train_output = train_output[-1] if len(train_output) else None
    if not isinstance(train_output, Mapping):
        return None
    info = train_output.get("priority_info")
    if info is not None:
        return info  # a Learner's, in the form its buffer's update takes
    priority = train_output.get("priority")
    if priority is None:
        return None
    if isinstance(data, Mapping):
        ids, idx = data.get("replay_unique_id"), data.get("replay_buffer_idx")
    else:
        if not data or not isinstance(data[0], Mapping):
            return None  # runs of a sequence buffer: no per-item priorities
        ids = [d.get("replay_unique_id") for d in data]
        idx = [d.get("replay_buffer_idx") for d in data]
        if any(i is None for i in ids) or any(i is None for i in idx):
            ids = idx = None
    if ids is None or idx is None:
        return None  # the buffer does not prioritize
    return {"replay_unique_id": ids, "replay_buffer_idx": idx, "priority": priority}
