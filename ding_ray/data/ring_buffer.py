"""What every ring-backed buffer shares: config, lock, storage, push, counters, persistence."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import merge_config
from ding_ray.data.base import IBuffer
from ding_ray.data.columnar import Batch, as_batch_sized, stack_items, unstack_batch
from ding_ray.data.monitors import PUSHED, SAMPLED, SIZE, STORAGE_BYTES, PeriodicThruputMonitor, logger
from ding_ray.data.storage import ColumnarRing
from ding_ray.errors import ConfigError, DataFormatError, ShapeError


class RingBuffer(IBuffer):
    """Base of the concrete buffers; subclasses add ``config``, ``sample`` and ``update``.

    Every public method holds one lock, so pushes, samples and clears from several threads never
    interleave; a sample is a copy made under the lock and never sees a half-written item.
    """

    def __init__(
        self,
        cfg: Mapping | None = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "buffer",
    ) -> None:
        self._cfg = merge_config(self.default_config(), family_config(type(self), cfg))
        if self._cfg.enable_track_used_data:
            raise ConfigError(
                "Config key 'enable_track_used_data' must be False: ding_ray buffers hold data in memory, "
                "there are no data files to remove."
            )
        if self._cfg.replay_buffer_size < 1:
            raise ConfigError(
                f"Config key 'replay_buffer_size' must be >= 1, got {self._cfg.replay_buffer_size}."
            )
        self._exp_name, self._instance_name = exp_name, instance_name
        self._tb_logger = tb_logger
        self._lock = threading.Lock()
        self._rng: np.random.Generator | None = None  # made at its first draw: see _generator
        self._storage = self._make_storage()
        self._push_count = 0
        self._sampled_total = 0
        self._thruput = PeriodicThruputMonitor(self._thruput_seconds(), tb_logger)

    @property
    def _generator(self) -> np.random.Generator:
        """The sampling generator, seeded at its first draw from numpy's global generator (so a run
        seeded with set_pkg_seed samples the same batches every time); ``seed`` sets it. Not made
        at construction: DI-engine's buffers take nothing from numpy's global stream when created,
        and a buffer that never draws here (the deque buffer's uniform samples use ``random``) must
        leave that stream, which env resets and exploration draw from, as DI-engine leaves it."""
        if self._rng is None:
            self._rng = np.random.default_rng(np.random.randint(2**31))
        return self._rng

    def _thruput_seconds(self) -> float:
        return self._cfg.periodic_thruput_seconds

    def _make_storage(self) -> Any:
        return ColumnarRing(self._cfg.replay_buffer_size, self._cfg.get("frame_dedup", True))

    @property
    def cfg(self) -> EasyDict:
        return self._cfg

    @property
    def replay_buffer_size(self) -> int:
        return self._storage.capacity

    @property
    def push_count(self) -> int:
        """Items pushed since creation (or the last ``clear``), including overwritten ones."""
        return self._push_count

    def seed(self, seed: int) -> None:
        """Make sampling reproducible."""
        with self._lock:
            self._rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ push
    def _to_batch(self, data: Any) -> tuple[Any, int]:
        """``(batch, n)`` for one item, a list of items or a ``Batch``; n == 0 means nothing to store."""
        if isinstance(data, Batch):
            return as_batch_sized(data)
        if isinstance(data, Mapping):
            return stack_items([data]), 1
        if isinstance(data, (list, tuple)):
            return (stack_items(data), len(data)) if len(data) else (None, 0)
        raise ShapeError(
            "push() takes a dict (one item), a list of dicts or a ding_ray.data.Batch, "
            f"got {type(data).__name__}."
        )

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store one item (dict), a list of items, or a ``Batch`` of columns (leading axis = items)."""
        batch, n = self._to_batch(data)  # conversion outside the lock: other threads keep going
        if n == 0:
            return
        with self._lock:
            self._storage.write(batch, n)
            self._push_count += n
            self._thruput.push_data_count += n
            self._thruput.maybe_report(self._count())

    def _candidates(self, sample_range: slice | None) -> np.ndarray | None:
        """Physical rows allowed by ``sample_range`` (a slice over items, oldest first); None = all."""
        if sample_range is None:
            return None
        return self._storage.physical(np.arange(self._storage.filled)[sample_range])

    def _uniform(self, size: int, sample_range: slice | None, replace: bool) -> np.ndarray | None:
        """Physical rows drawn uniformly, or None if there are not enough."""
        candidates = self._candidates(sample_range)
        m = self._storage.filled if candidates is None else len(candidates)
        if m == 0 or (not replace and m < size):
            return None
        rng = self._generator
        pick = rng.integers(0, m, size) if replace else rng.choice(m, size, replace=False)
        return pick if candidates is None else candidates[pick]

    def _present(self, gathered: Any, columnar: bool) -> Any:
        """What ``sample`` returns for the gathered rows: a ``Batch`` or a list of dicts."""
        return gathered if columnar else unstack_batch(gathered)

    def _after_sample(self, size: int) -> None:
        self._sampled_total += size
        self._thruput.sample_data_count += size
        self._thruput.maybe_report(self._count())

    # ------------------------------------------------------------------ bookkeeping
    def _count(self) -> int:
        return self._storage.filled

    def count(self) -> int:
        with self._lock:
            return self._count()

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        self._storage.clear()
        self._push_count = 0

    def close(self) -> None:
        """Report the last period and drop the data."""
        with self._lock:
            self._thruput.report(self._count())
            self._clear()

    def stats(self) -> dict[str, float]:
        """Current totals under their metric keys (for dashboards)."""
        with self._lock:
            return self._stats()

    def _stats(self) -> dict[str, float]:
        stats = {SIZE: self._count(), PUSHED: self._push_count, SAMPLED: self._sampled_total}
        if isinstance(self._storage, ColumnarRing):
            stats[STORAGE_BYTES] = self._storage.nbytes
        return stats

    @property
    def frame_stores(self) -> list:
        return self._storage.frame_stores if isinstance(self._storage, ColumnarRing) else []

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        with self._lock:
            return self._state_dict()

    def _state_dict(self) -> dict:
        return {
            "buffer_type": type(self).__name__,
            "storage": self._storage.state_dict(),
            "push_count": self._push_count,
            "sampled_total": self._sampled_total,
            "rng": None if self._rng is None else rng_to_str(self._rng),
        }

    def load_state_dict(self, _state_dict: dict) -> None:
        new = self._parse_state(_state_dict)  # validates everything before touching the buffer
        with self._lock:
            for key, value in new.items():
                setattr(self, key, value)

    def _parse_state(self, state: Mapping) -> dict[str, Any]:
        """The attributes a valid ``state`` sets; raises ``DataFormatError`` without side effects."""
        if not isinstance(state, Mapping):
            raise DataFormatError(f"A buffer state must be a dict, got {type(state).__name__}.")
        if state.get("buffer_type") != type(self).__name__:
            raise DataFormatError(
                f"The state was saved by a {state.get('buffer_type')!r}, it cannot be loaded into a "
                f"{type(self).__name__}."
            )
        # Checked before the storage is built: it is allocated at the declared capacity, so a small
        # file declaring a huge one would otherwise take gigabytes (or raise MemoryError) first.
        storage_state = state.get("storage")
        declared = storage_state.get("capacity") if isinstance(storage_state, Mapping) else None
        if declared is not None and declared != self._storage.capacity:
            raise DataFormatError(
                f"The state holds a buffer of capacity {declared!r}, this buffer has "
                f"replay_buffer_size={self._storage.capacity}; create it with the same size to load it."
            )
        if isinstance(self._storage, ColumnarRing):  # an older file's image stacks become frames
            storage = ColumnarRing.from_state_dict(storage_state, self._storage.frame_dedup)
        else:
            storage = type(self._storage).from_state_dict(storage_state)
        return {
            "_storage": storage,
            "_push_count": state_int(state, "push_count"),
            "_sampled_total": state_int(state, "sampled_total"),
            "_rng": None if state.get("rng") is None else rng_from_str(state["rng"]),
        }


def family_config(cls: type, cfg: Mapping | None) -> Mapping | None:
    """``cfg`` as ``cls`` can take it when ``compile_config`` resolved it for another buffer class.

    DI-engine's classic loop builds whichever buffer class it likes from
    ``cfg.policy.other.replay_buffer``; that section was compiled for the configured type, so keys of
    that type's own (``alpha`` of the prioritized buffer, say) are dropped here, and the keys the
    two classes share (``replay_buffer_size``, ...) are kept. A config the user wrote by hand has no
    ``cfg_type`` and is checked key by key as usual.
    """
    cfg_type = (cfg or {}).get("cfg_type")
    own = cls.default_config()
    if not cfg_type or cfg_type == own.cfg_type or not _is_buffer_cfg_type(cfg_type):
        return cfg
    kept = {k: v for k, v in cfg.items() if k in own and k not in ("type", "cfg_type")}
    dropped = sorted(k for k in cfg if k not in own)
    if dropped:
        logger.info(
            "%s built from a config compiled for %s: not used here: %s",
            cls.__name__,
            cfg_type[: -len("Dict")],
            dropped,
        )
    return kept


def _is_buffer_cfg_type(cfg_type: str) -> bool:
    from ding_ray.utils.registry import BUFFER_REGISTRY

    return any(BUFFER_REGISTRY.get(name).__name__ + "Dict" == cfg_type for name in BUFFER_REGISTRY.names())


def state_int(state: Mapping, key: str) -> int:
    value = state.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DataFormatError(f"Buffer state: '{key}' must be an integer, got {value!r}.")
    return int(value)


def rng_to_str(rng: np.random.Generator) -> str:
    """The generator's state as JSON text (its 128-bit integers do not fit msgpack ints)."""
    return json.dumps(rng.bit_generator.state)


def rng_from_str(text: Any) -> np.random.Generator:
    try:
        state = json.loads(text)
    except (TypeError, ValueError) as err:
        raise DataFormatError(f"Buffer state: unreadable random generator state: {err}") from err
    if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
        raise DataFormatError("Buffer state: the random generator state is not a PCG64 state.")
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = state
    except (TypeError, ValueError, KeyError) as err:
        raise DataFormatError(f"Buffer state: bad random generator state: {err}") from err
    return rng
