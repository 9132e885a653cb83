"""Preallocated ring of columns: the storage behind every transition buffer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.data.columnar import Batch, Path, _name, flatten, unflatten, unstack_batch
from ding_ray.errors import ConfigError, DataFormatError, ShapeError


class ColumnarRing:
    """One numpy array per field, ``capacity`` rows each, written round-robin.

    The columns are created from the structure of the first batch written; later batches must
    have the same fields and per-row shapes. Rows ``[0, filled)`` hold data; ``head`` is the
    next row to be written, so the oldest row is ``(head - filled) % capacity``.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ShapeError(f"A buffer needs a capacity of at least 1, got {capacity}.")
        self.capacity = int(capacity)
        self.head = 0
        self.filled = 0
        self._paths: list[Path] = []
        self._flat_keys: list | None = None
        self._columns: list[np.ndarray] = []
        self._castable: dict[tuple, bool] = {}

    # ------------------------------------------------------------------ structure
    @property
    def initialized(self) -> bool:
        return bool(self._paths)

    @property
    def schema(self) -> list[dict]:
        """Per field: path (list of keys), dtype string and per-row shape."""
        return [
            {"path": list(p), "dtype": c.dtype.str, "shape": list(c.shape[1:])}
            for p, c in zip(self._paths, self._columns, strict=True)
        ]

    def column(self, path: Path) -> np.ndarray | None:
        """The full ring array of one field (all ``capacity`` rows), or None if there is no such field."""
        for p, c in zip(self._paths, self._columns, strict=True):
            if p == path:
                return c
        return None

    def _create(self, flat: dict[Path, np.ndarray]) -> None:
        try:
            columns = [np.zeros((self.capacity, *a.shape[1:]), dtype=a.dtype) for a in flat.values()]
        except MemoryError as err:  # the rows' size is known only now, from the first batch
            need = self.capacity * sum(a[:1].nbytes for a in flat.values()) / 2**30
            raise ConfigError(
                f"A replay buffer of {self.capacity} rows of this data needs {need:.1f} GiB, more than this "
                "machine can allocate: lower policy.other.replay_buffer.replay_buffer_size."
            ) from err
        self._paths, self._columns = list(flat), columns
        self._flat_keys = [p[0] for p in self._paths] if all(len(p) == 1 for p in self._paths) else None

    # ------------------------------------------------------------------ writing
    def write(self, batch: Batch, n: int) -> tuple[int, int]:
        """Write the ``n`` rows of ``batch``; returns ``(start, count)`` of the rows kept.

        If ``n`` exceeds the capacity only the newest ``capacity`` rows are kept. The written
        physical rows are ``(start + arange(count)) % capacity``.
        """
        columns = self._conform_flat(batch)
        if columns is None:  # nested fields, first write, or a mismatch to report
            flat = flatten(batch)
            if not self._paths:
                self._create(flat)
            columns = conform(flat, self._paths, self._columns, self._castable)
        if n > self.capacity:
            columns = [c[n - self.capacity :] for c in columns]
            n = self.capacity
        start = self.head
        first = min(n, self.capacity - start)
        for dst, src in zip(self._columns, columns, strict=True):
            dst[start : start + first] = src[:first]
            if first < n:
                dst[: n - first] = src[first:]
        self.head = (start + n) % self.capacity
        self.filled = min(self.filled + n, self.capacity)
        return start, n

    def _conform_flat(self, batch: Batch) -> list[np.ndarray] | None:
        """Fast path of ``conform`` for flat schemas whose dtype pairs were checked before."""
        keys = self._flat_keys
        if keys is None or len(batch) != len(keys):
            return None
        columns = []
        for key, dst in zip(keys, self._columns, strict=True):
            src = batch.get(key)
            if type(src) is not np.ndarray or src.shape[1:] != dst.shape[1:]:
                return None
            if not self._castable.get((src.dtype, dst.dtype)):
                return None
            columns.append(src)
        return columns

    def clear(self) -> None:
        """Forget contents and structure."""
        self.head = 0
        self.filled = 0
        self._paths, self._columns, self._flat_keys = [], [], None

    # ------------------------------------------------------------------ reading
    def physical(self, positions: np.ndarray) -> np.ndarray:
        """Physical rows of logical positions (0 = oldest row held)."""
        return (positions + (self.head - self.filled)) % self.capacity

    def gather(self, idx: np.ndarray) -> Batch:
        """The rows ``idx`` of every column as a new ``Batch`` (copies, never views of the ring)."""
        if self._flat_keys is not None:  # the common case: no nested fields
            return Batch(zip(self._flat_keys, [c.take(idx, axis=0) for c in self._columns], strict=True))
        rows = {p: c.take(idx, axis=0) for p, c in zip(self._paths, self._columns, strict=True)}
        return unflatten(rows, Batch)

    def gather_items(self, idx: np.ndarray) -> list[dict]:
        return unstack_batch(self.gather(idx))

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """Head, fill level and the filled rows of every column (the rows beyond are empty)."""
        columns = column_state(self._paths, self._columns, self.filled)
        return {
            "capacity": self.capacity,
            "head": self.head,
            "filled": self.filled,
            "schema": self.schema,
            "columns": columns,
        }

    @classmethod
    def from_state_dict(cls, state: Mapping) -> ColumnarRing:
        """A new ring holding ``state``; raises ``DataFormatError`` if the state is inconsistent."""
        try:
            ring = cls(int(state["capacity"]))
            head, filled, columns = int(state["head"]), int(state["filled"]), state["columns"]
        except (KeyError, TypeError, ValueError, ShapeError) as err:
            raise DataFormatError(f"Buffer storage state is incomplete or malformed: {err!r}") from err
        if not (0 <= filled <= ring.capacity and 0 <= head < ring.capacity):
            raise DataFormatError(
                f"Buffer storage state has head={head}, filled={filled} for capacity {ring.capacity}."
            )
        if filled < ring.capacity and head != filled:
            raise DataFormatError("Buffer storage state: a ring that is not full must have head == filled.")
        flat = columns_from_state(columns, filled)
        if flat and not filled:
            # Rows of zero length prove no per-row size: refused so they cannot make ``_create``
            # allocate ``capacity`` rows of any shape; a saved empty ring has no columns.
            raise DataFormatError("Buffer storage state has columns but no rows.")
        if flat:
            ring._create(flat)
            if "schema" in state and state["schema"] != ring.schema:
                raise DataFormatError(
                    f"Buffer storage state: columns {ring.schema} do not match the schema {state['schema']}."
                )
            for dst, rows in zip(ring._columns, flat.values(), strict=True):
                dst[:filled] = rows
        elif filled:
            raise DataFormatError("Buffer storage state claims rows but has no columns.")
        ring.head, ring.filled = head, filled
        return ring


def conform(
    flat: dict[Path, Any], paths: list[Path], protos: list[np.ndarray], castable: dict
) -> list[np.ndarray]:
    """The columns of ``flat`` in the order of ``paths``, after checking that their fields,
    per-row shapes and dtypes fit the arrays ``protos`` (whose first axis is ignored).

    ``castable`` caches dtype-pair checks between calls.
    """
    if len(flat) != len(paths) or any(p not in flat for p in paths):
        missing = sorted(_name(p) for p in paths if p not in flat)
        extra = sorted(_name(p) for p in flat if p not in paths)
        raise ShapeError(
            f"Data does not have the fields this buffer stores: missing {missing}, unexpected {extra}. "
            "The first push fixes the fields; clear() the buffer to store another structure."
        )
    out = []
    for path, proto in zip(paths, protos, strict=True):
        src = flat[path]
        if src.shape[1:] != proto.shape[1:]:
            raise ShapeError(
                f"Field {_name(path)} has per-item shape {src.shape[1:]}, "
                f"the buffer stores {proto.shape[1:]}."
            )
        key = (src.dtype, proto.dtype)
        ok = castable.get(key)
        if ok is None:
            ok = proto.dtype == object or np.can_cast(src.dtype, proto.dtype, "same_kind")
            castable[key] = ok
        if not ok:
            raise ShapeError(
                f"Field {_name(path)} has dtype {src.dtype}, which cannot be stored in the buffer's "
                f"{proto.dtype} column without changing its kind; convert it before pushing."
            )
        out.append(src)
    return out


def column_state(paths: list[Path], columns: list[np.ndarray], rows: int) -> list:
    """``[[path, rows]]`` for a state dict: the first ``rows`` rows, object columns as lists."""
    return [
        [list(p), c[:rows].tolist() if c.dtype == object else c[:rows].copy()]
        for p, c in zip(paths, columns, strict=True)
    ]


def columns_from_state(entries: Any, rows: int) -> dict[Path, np.ndarray]:
    """Inverse of ``column_state``; raises ``DataFormatError`` on malformed entries."""
    flat: dict[Path, np.ndarray] = {}
    for entry in entries or []:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], (list, tuple))):
            raise DataFormatError("Buffer storage state: each column must be [path, rows].")
        path, values = tuple(entry[0]), entry[1]
        if isinstance(values, list):
            obj = np.empty(len(values), dtype=object)
            for i, v in enumerate(values):
                obj[i] = v
            values = obj
        if not isinstance(values, np.ndarray) or values.ndim == 0 or len(values) != rows:
            raise DataFormatError(f"Buffer storage state: column {_name(path)} does not have {rows} rows.")
        if not path or path in flat:
            raise DataFormatError(f"Buffer storage state: bad or repeated column path {list(path)}.")
        flat[path] = values
    return flat
