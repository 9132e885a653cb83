"""Prioritized experience replay (Schaul et al., 2016) with use-count and staleness limits."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.data.columnar import Batch, unstack_batch
from ding_ray.data.monitors import (
    BETA,
    PUSH_REJECTED,
    REMOVED,
    SampledDataAttrMonitor,
    ThruputController,
    logger,
)
from ding_ray.data.priority import (
    RESERVED_KEYS,
    ROW_FIELDS,
    build_tree,
    draw_in_range,
    initial_priority,
    parse_update,
    ring_segments,
    row_records,
)
from ding_ray.data.ring_buffer import RingBuffer, state_int
from ding_ray.data.segment_tree import SumSegmentTree
from ding_ray.errors import DataFormatError
from ding_ray.utils.registry import BUFFER_REGISTRY


@BUFFER_REGISTRY.register("advanced")
class AdvancedReplayBuffer(RingBuffer):
    """Samples item ``i`` with probability ``p_i^alpha / sum_j p_j^alpha``, stratified as in PER.

    Every sample carries ``IS`` (importance weights ``(N P(i))^-beta / max_j (N P(j))^-beta``,
    float32), ``priority``, ``replay_unique_id`` and ``replay_buffer_idx`` (pass these three back to
    ``update`` with new priorities), and, as DI-engine's samples do, ``use`` (times the item has been
    sampled, this time included) and ``staleness`` (``cur_learner_iter`` minus its collection
    iteration). ``beta`` grows linearly to 1 over ``anneal_step``
    sample calls. New items get the largest priority seen so far unless they carry ``priority``.

    An item is removed once sampled ``max_use`` times, and an item whose staleness (current
    learner iteration minus the iteration it was collected at) exceeds ``max_staleness`` is never
    returned. The collection iteration is the item's ``collect_iter`` field if it has one,
    otherwise the latest ``cur_learner_iter`` this buffer was sampled with.
    """

    config = dict(
        type="advanced",
        replay_buffer_size=4096,  # capacity in items; when full the oldest item is overwritten
        max_use=float("inf"),  # an item is removed after being sampled this many times
        max_staleness=float("inf"),  # items older than this many learner iterations are never sampled
        alpha=0.6,  # priority exponent: 0 = uniform, 1 = fully proportional
        beta=0.4,  # initial importance-sampling exponent, annealed to 1
        anneal_step=100000,  # sample calls over which beta reaches 1 (0 = keep beta constant)
        enable_track_used_data=False,  # DI-engine's removal of file-backed data; unsupported, keep False
        deepcopy=False,  # DI-engine compatibility only: storage copies on push, sample returns copies
        # DI-engine's DequeBuffer key (slice grouped samples by unroll_len), which its advanced
        # buffer ignores as this one does: IMPALA's train samples are whole unrolls already
        # (dizoo's pong_impala_config sets it)
        sliced=False,
        frame_dedup=True,  # store uint8 (stack, H, W) image stacks (Atari obs) with each frame held once
        thruput_controller=dict(
            push_sample_rate_limit=dict(
                max=float("inf"),  # pushes are refused while pushed/sampled in the window is above this
                min=0.0,  # samples are refused while pushed/sampled in the window is below this
            ),
            window_seconds=30.0,  # length (s) of the window the push/sample ratio is measured over
            sample_min_limit_ratio=1.0,  # sample(size) needs at least size * this many valid items
        ),
        monitor=dict(
            sampled_data_attr=dict(
                average_range=5,  # sample calls averaged into each report of sampled-data quality
                print_freq=200,  # sample calls between reports of sampled-data quality
            ),
            periodic_thruput=dict(
                seconds=60.0,  # seconds between pushed/sampled/removed/valid reports
            ),
        ),
    )

    def __init__(
        self,
        cfg: Mapping | None = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "buffer",
    ) -> None:
        super().__init__(cfg, tb_logger, exp_name, instance_name)
        cap = self._storage.capacity
        self._alpha = float(self._cfg.alpha)
        self._beta0 = float(self._cfg.beta)
        self._max_use = float(self._cfg.max_use)
        self._max_staleness = float(self._cfg.max_staleness)
        self._anneal_step = float(self._cfg.anneal_step)
        self._sum_tree = SumSegmentTree(cap)  # over priority ** alpha; 0: empty or removed
        self._strata: dict[int, np.ndarray] = {}  # size -> arange(size) / size (the strata)
        rows = row_records(cap)  # views of one record array: _priority, _unique_id, ...
        self._priority, self._unique_id = rows["priority"], rows["unique_id"]
        self._use_count, self._collect_iter = rows["use_count"], rows["collect_iter"]
        self._reset_counters()
        self._controller = ThruputController(self._cfg.thruput_controller)
        attr = self._cfg.monitor.sampled_data_attr
        self._attr_monitor = SampledDataAttrMonitor(attr.average_range, attr.print_freq, tb_logger)

    def _thruput_seconds(self) -> float:
        return self._cfg.monitor.periodic_thruput.seconds

    def _reset_counters(self) -> None:
        self._valid_count = 0
        self._max_priority = 1.0
        self._sample_calls = 0
        self._removed_total = 0
        self._push_rejected = 0
        self._stale_updates = 0
        self._latest_learner_iter = 0

    @property
    def beta(self) -> float:
        """The importance-sampling exponent the next sample will use."""
        if self._anneal_step <= 0:
            return self._beta0
        return min(1.0, self._beta0 + (1.0 - self._beta0) * self._sample_calls / self._anneal_step)

    # ------------------------------------------------------------------ push
    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store one item, a list of items or a ``Batch``; an item's ``priority`` field, if any,
        becomes its initial priority (other sampling keys such as ``IS`` are dropped)."""
        batch, n = self._to_batch(data)
        if n == 0:
            return
        given = initial_priority(batch.pop("priority", None), n)
        for key in RESERVED_KEYS[1:]:
            batch.pop(key, None)
        with self._lock:
            if not self._controller.can_push(n):
                if self._push_rejected == 0:
                    logger.warning(
                        "Pushes refused: push/sample ratio above its limit (see %s).", PUSH_REJECTED
                    )
                self._push_rejected += n
                return
            collect = batch.get("collect_iter")
            start, kept = self._storage.write(batch, n)
            skip = n - kept  # rows beyond the capacity that were never stored
            uid0 = self._push_count + skip
            self._push_count += n
            if given is None:  # scalars: every new item gets the largest priority so far
                priority, leaf = self._max_priority, self._max_priority**self._alpha
            else:
                priority = given[skip:]
                priority[np.isnan(priority)] = self._max_priority
                leaf = np.power(priority, self._alpha)
            done = 0
            for lo, hi in ring_segments(start, kept, self._storage.capacity):
                k = hi - lo
                part = slice(done, done + k)
                self._valid_count += k - int(np.count_nonzero(self._unique_id[lo:hi]))
                self._unique_id[lo:hi] = np.arange(uid0 + done + 1, uid0 + done + k + 1)
                self._priority[lo:hi] = priority if given is None else priority[part]
                self._use_count[lo:hi] = 0
                if collect is not None and np.ndim(collect) == 1:
                    self._collect_iter[lo:hi] = collect[skip + done : skip + done + k]
                else:
                    self._collect_iter[lo:hi] = self._latest_learner_iter
                self._sum_tree.update_range(lo, leaf if given is None else leaf[part], k)
                done += k
            self._controller.record_push(n)
            self._thruput.push_data_count += n
            self._thruput.maybe_report(self._valid_count)

    # ------------------------------------------------------------------ sample
    def sample(
        self, size: int, cur_learner_iter: int = 0, sample_range: slice | None = None, columnar: bool = False
    ) -> list | Batch | None:
        """``size`` items drawn in proportion to ``priority^alpha``, or None if the buffer cannot
        serve them (fewer than ``size * sample_min_limit_ratio`` valid items, or rate-limited).

        ``sample_range`` restricts the draw to a slice of the items ordered oldest first. With
        ``columnar=True`` the result is a ``Batch`` whose extra keys are arrays; in the list form
        they are Python numbers.
        """
        with self._lock:
            self._latest_learner_iter = cur_learner_iter
            refusal = self._controller.sample_refusal(size, self._valid_count)
            if refusal is not None:
                logger.debug("sample(%d) refused: buffer %s", size, refusal)
                return None
            idx, leaf = self._draw(size, sample_range, stratified=True)
            if idx is not None and self._max_staleness != float("inf"):
                idx, leaf = self._replace_stale(idx, leaf, cur_learner_iter, sample_range)
            if idx is None:
                return None
            batch = self._gather(idx, leaf, cur_learner_iter)
        if columnar:
            return batch
        # Per item, the sampling keys are plain Python numbers (as in DI-engine); converting four
        # short columns with tolist() is much cheaper than making 1024 numpy scalars.
        for key in RESERVED_KEYS:
            batch[key] = batch[key].tolist()
        return unstack_batch(batch)

    def sample_held(self, size: int, draw: Any, cur_learner_iter: int = 0) -> Batch | None:
        """``size`` items picked by ``draw(population, size)`` (e.g. ``random.sample``) from the
        positions of the held items, oldest first, as a columnar ``sample`` gives them; None when
        fewer than ``size`` are held. DI-engine's deque wrapper draws its uniform samples so."""
        with self._lock:
            self._latest_learner_iter = cur_learner_iter  # as sample: pushes record it as collected at
            rows = self._storage.physical(np.arange(self._storage.filled))
            rows = rows[self._unique_id[rows] > 0]
            if len(rows) < size or size == 0:
                return None
            idx = rows[np.asarray(draw(range(len(rows)), size), dtype=np.int64)]
            return self._gather(idx, self._sum_tree[idx], cur_learner_iter)

    def _draw(self, size: int, sample_range: slice | None, stratified: bool) -> tuple:
        """``(rows, weights)`` drawn in proportion to tree weight, or ``(None, None)``.

        Stratified: one draw in each of ``size`` equal slices of the total weight (PER's scheme).
        """
        if size == 0:  # an empty draw, as the uniform buffers give (no slices of the weight to divide)
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        # DI-engine's AdvancedReplayBuffer draws these from numpy's global generator at each sample
        # (interleaved with env resets and exploration); after ``seed`` the buffer's own one
        u = np.random.random(size) if self._rng is None else self._rng.random(size)
        if stratified:
            strata = self._strata.get(size)
            if strata is None:
                strata = self._strata[size] = np.arange(size, dtype=np.float64) / size
            u = strata + u / size  # DI-engine's arithmetic, so a draw picks the same leaf
        if sample_range is None:
            total = self._sum_tree.reduce()
            if total <= 0:
                return None, None
            u *= total
            return self._sum_tree.find_prefixsum_idx(u, return_values=True)
        positions = np.arange(self._storage.filled)[sample_range]
        if len(positions) == 0:
            return None, None
        start = int(self._storage.physical(positions[:1])[0])
        return draw_in_range(self._sum_tree, u, start, positions, self._storage.capacity)

    def _replace_stale(
        self, idx: np.ndarray, leaf: np.ndarray, cur_learner_iter: int, sample_range: Any
    ) -> tuple:
        stale = cur_learner_iter - self._collect_iter[idx] > self._max_staleness
        if not stale.any():
            return idx, leaf
        # Staleness only grows, so every stale item goes now (one vectorized sweep), then the
        # stale draws are redrawn from what is left.
        held = self._unique_id > 0
        self._remove(np.flatnonzero(held & (cur_learner_iter - self._collect_iter > self._max_staleness)))
        if self._valid_count == 0:
            return None, None
        redraw, redraw_leaf = self._draw(int(stale.sum()), sample_range, stratified=False)
        if redraw is None:
            return None, None
        idx, leaf = idx.copy(), leaf.copy()
        idx[stale], leaf[stale] = redraw, redraw_leaf
        return idx, leaf

    def _gather(self, idx: np.ndarray, leaf: np.ndarray, cur_learner_iter: int) -> Batch:
        # (N P(i))^-beta / max_j (N P(j))^-beta simplifies to (leaf_i / min_j leaf_j)^-beta, here
        # exp(-beta (log leaf_i - log min)): float32 log and exp are vectorized, float32 pow is not.
        weights = np.log(leaf, dtype=np.float32)
        weights -= math.log(self._sum_tree.min_positive())  # a Python float keeps the array float32
        weights *= -self.beta
        np.exp(weights, out=weights)
        batch = self._storage.gather(idx)
        priority = self._priority[idx]
        batch["IS"] = weights
        batch["priority"] = priority
        batch["replay_unique_id"] = self._unique_id[idx] - 1
        batch["replay_buffer_idx"] = idx
        np.add.at(self._use_count, idx, 1)  # a row drawn twice counts twice
        batch["staleness"] = staleness = cur_learner_iter - self._collect_iter[idx]
        batch["use"] = used = self._use_count[idx]
        if self._attr_monitor.wants_record():
            self._attr_monitor.record(cur_learner_iter, used, staleness, priority)
        self._attr_monitor.end_call(cur_learner_iter)
        if self._max_use != float("inf"):
            exhausted = idx[self._use_count[idx] >= self._max_use]
            if len(exhausted):
                self._remove(np.unique(exhausted))
        self._sample_calls += 1
        self._controller.record_sample(len(idx))
        self._sampled_total += len(idx)
        self._thruput.sample_data_count += len(idx)
        self._thruput.maybe_report(self._valid_count)
        return batch

    def _remove(self, idx: np.ndarray) -> None:
        """Take held rows out of sampling (their storage stays until overwritten)."""
        if len(idx) == 0:
            return
        self._unique_id[idx] = 0
        self._sum_tree.update(idx, 0.0)
        self._valid_count -= len(idx)
        self._removed_total += len(idx)
        self._thruput.remove_data_count += len(idx)

    # ------------------------------------------------------------------ update
    def update(self, info: Mapping) -> None:
        """Set new priorities. ``info`` has equal-length ``replay_unique_id``, ``replay_buffer_idx``
        and ``priority`` (lists or arrays); entries whose item has since been overwritten or
        removed (the id stored at that index differs) are ignored."""
        parsed = parse_update(info)
        if parsed is None:
            return
        ids, idx, priority, top = parsed
        with self._lock:
            cap = self._storage.capacity
            unsigned = idx.view(np.uint64)  # negative indices look huge as unsigned
            if unsigned.item(unsigned.argmax()) >= cap:
                keep = (idx >= 0) & (idx < cap)
                ids, idx, priority = ids[keep], idx[keep], priority[keep]
            current = self._unique_id[idx] == ids + 1
            if np.count_nonzero(current) < len(current):
                self._stale_updates += int(len(current) - np.count_nonzero(current))
                ids, idx, priority = ids[current], idx[current], priority[current]
                if len(idx) == 0:
                    return
            self._priority[idx] = priority
            self._sum_tree.update(idx, np.power(priority, self._alpha))
            if top > self._max_priority:
                self._max_priority = top

    # ------------------------------------------------------------------ bookkeeping
    def _count(self) -> int:
        return self._valid_count

    def _clear(self) -> None:
        super()._clear()
        self._sum_tree.clear()
        self._unique_id[:] = 0
        self._priority[:] = 0
        self._use_count[:] = 0
        self._collect_iter[:] = 0
        self._reset_counters()

    def _stats(self) -> dict[str, float]:
        stats = super()._stats()
        stats.update({REMOVED: self._removed_total, PUSH_REJECTED: self._push_rejected, BETA: self.beta})
        stats.update(self._attr_monitor.last_report)
        return stats

    # ------------------------------------------------------------------ persistence
    _COUNTERS = (
        "_sample_calls",
        "_removed_total",
        "_push_rejected",
        "_stale_updates",
        "_latest_learner_iter",
    )

    def _state_dict(self) -> dict:
        state = super()._state_dict()
        filled = self._storage.filled
        for name in ROW_FIELDS:
            state[name] = getattr(self, "_" + name)[:filled].copy()
        state["unique_id"] -= 1  # the item's id; -1: empty or removed
        for name in self._COUNTERS:
            state[name[1:]] = getattr(self, name)
        state["max_priority"] = self._max_priority
        return state

    def load_state_dict(self, _state_dict: dict, deepcopy: bool = False) -> None:
        """Replace the contents with a ``state_dict``; ``deepcopy`` is accepted for DI-engine
        compatibility (the state is always copied into the buffer's own arrays)."""
        super().load_state_dict(_state_dict)

    def _parse_state(self, state: Mapping) -> dict[str, Any]:
        new = super()._parse_state(state)
        rows, filled = row_records(self._storage.capacity), new["_storage"].filled
        for name in ROW_FIELDS:
            saved = state.get(name)
            if not isinstance(saved, np.ndarray) or saved.shape != (filled,):
                raise DataFormatError(f"Buffer state: '{name}' must be an array of {filled} entries.")
            rows[name][:filled] = saved + 1 if name == "unique_id" else saved
            new["_" + name] = rows[name]
        for name in self._COUNTERS:
            new[name] = state_int(state, name[1:])
        max_priority = state.get("max_priority")
        if not isinstance(max_priority, (float, int)) or not np.isfinite(max_priority) or max_priority <= 0:
            raise DataFormatError(
                f"Buffer state: 'max_priority' must be a positive number, got {max_priority!r}."
            )
        new["_max_priority"] = float(max_priority)
        held = new["_unique_id"] > 0
        if not np.all(np.isfinite(new["_priority"][held])) or np.any(new["_priority"][held] <= 0):
            raise DataFormatError("Buffer state: held items must have positive, finite priorities.")
        new["_valid_count"] = int(np.count_nonzero(held))
        new["_sum_tree"] = build_tree(new["_priority"], held, self._alpha)
        return new
