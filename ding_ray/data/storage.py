"""Preallocated ring of columns: the storage behind every transition buffer."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from ding_ray.data.columnar import Batch, Path, _name, flatten, unflatten, unstack_batch
from ding_ray.data.frame_archive import current_archive
from ding_ray.data.frames import FrameStore, frame_field, initial_frames, stacks_per_row, store_nbytes
from ding_ray.errors import ConfigError, DataFormatError, ShapeError
from ding_ray.utils.memory import system_memory

ID_DTYPE = np.int32  # frame ids in a frame field's column: (stack,) per row


class ColumnarRing:
    """One numpy array per field, ``capacity`` rows each, written round-robin.

    The columns are created from the structure of the first batch written; later batches must
    have the same fields and per-row shapes. Rows ``[0, filled)`` hold data; ``head`` is the
    next row to be written, so the oldest row is ``(head - filled) % capacity``.

    With ``frame_dedup``, image stacks (``frames.frame_field``: uint8 ``(stack, H, W)`` fields,
    such as ``obs`` and ``next_obs`` of Atari) are stored as ``stack`` frame ids
    per row into a ``FrameStore`` shared by the fields of one frame shape, so each frame is held
    once; ``gather`` rebuilds their stacks, byte for byte as written.
    """

    def __init__(self, capacity: int, frame_dedup: bool = True) -> None:
        if capacity < 1:
            raise ShapeError(f"A buffer needs a capacity of at least 1, got {capacity}.")
        if not isinstance(frame_dedup, (bool, np.bool_)):
            raise ConfigError(f"Config key 'frame_dedup' must be True or False, got {frame_dedup!r}.")
        self.capacity = int(capacity)
        self.frame_dedup = bool(frame_dedup)
        self.head = 0
        self.filled = 0
        self._paths: list[Path] = []
        self._flat_keys: list | None = None
        self._columns: list[np.ndarray] = []  # for a frame field: its frame ids
        self._protos: list[np.ndarray] = []  # per field, 0 rows of the shape and dtype pushed
        self._stores: list[FrameStore | None] = []  # per field, the frame store of a frame field
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
            for p, c in zip(self._paths, self._protos, strict=True)
        ]

    @property
    def frame_stores(self) -> list[FrameStore]:
        """The distinct frame stores (one per frame shape), empty if no field is stored as frames."""
        return list({id(s): s for s in self._stores if s is not None}.values())

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns and frame stores."""
        return sum(c.nbytes for c in self._columns) + sum(s.nbytes for s in self.frame_stores)

    @property
    def resident_nbytes(self) -> int:
        """``nbytes`` less the frame slots never written (reserved, but not in memory)."""
        return self.nbytes - sum(s.nbytes - s.resident_nbytes for s in self.frame_stores)

    def column(self, path: Path) -> np.ndarray | None:
        """The full ring array of one field (all ``capacity`` rows), or None if there is no such field.

        A frame field has no such array (its stacks are rebuilt by ``gather``): asking raises."""
        for p, c, store in zip(self._paths, self._columns, self._stores, strict=True):
            if p == path:
                if store is not None:
                    raise ShapeError(f"Field {_name(path)} is stored as frames; read it with gather().")
                return c
        return None

    def _create(self, flat: dict[Path, np.ndarray], frame_paths: Any = None) -> None:
        """Columns for the structure of ``flat``; ``frame_paths`` (default: by ``frame_dedup``)
        names the fields stored as frames."""
        protos = [np.zeros((0, *a.shape[1:]), dtype=a.dtype) for a in flat.values()]
        fields = {path: (proto.shape[1:], proto.dtype) for path, proto in zip(flat, protos, strict=True)}
        if frame_paths is None:
            frame_paths = frame_paths_of(fields, self.frame_dedup)
        # the rows' size is known only now, from the first batch
        need = check_ring_fits(self.capacity, fields, frame_paths, "of this data")
        shared: dict[tuple, FrameStore] = {}
        stores: list[FrameStore | None] = []
        try:
            columns = []
            for path, proto in zip(flat, protos, strict=True):
                if path in frame_paths:
                    shape = proto.shape[1:]
                    key = (shape[-2:], proto.dtype.str)
                    if key not in shared:
                        slots = initial_frames(self.capacity * stacks_per_row(shape))
                        shared[key] = FrameStore(shape[-2:], proto.dtype, slots)
                    stores.append(shared[key])
                    columns.append(np.zeros((self.capacity, *shape[:-2]), dtype=ID_DTYPE))
                else:
                    stores.append(None)
                    columns.append(np.zeros((self.capacity, *proto.shape[1:]), dtype=proto.dtype))
        except MemoryError as err:  # within the machine's memory, but not free now
            raise ring_too_large(self.capacity, need, "of this data", None) from err
        self._paths, self._columns, self._protos, self._stores = list(flat), columns, protos, stores
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
            columns = conform(flat, self._paths, self._protos, self._castable)
        if n > self.capacity:
            columns = [c[n - self.capacity :] for c in columns]
            n = self.capacity
        start = self.head
        if self.frame_stores:
            columns = self._frames_to_ids(columns, start, n)
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
        for key, dst in zip(keys, self._protos, strict=True):
            src = batch.get(key)
            if type(src) is not np.ndarray or src.shape[1:] != dst.shape[1:]:
                return None
            if not self._castable.get((src.dtype, dst.dtype)):
                return None
            columns.append(src)
        return columns

    def _frames_to_ids(self, columns: list[np.ndarray], start: int, n: int) -> list[np.ndarray]:
        """``columns`` with each frame field's stacks replaced by their frame ids in its store;
        the frames of the rows about to be overwritten are released."""
        rows = (start + np.arange(n)) % self.capacity
        held = rows if self.filled == self.capacity else rows[rows < self.filled]
        columns = list(columns)
        for store in self.frame_stores:
            fields = [i for i, s in enumerate(self._stores) if s is store]
            released = np.concatenate([self._columns[i][held].ravel() for i in fields]) if len(held) else None
            ids = store.put([columns[i] for i in fields], released)
            for i, field_ids in zip(fields, ids, strict=True):
                columns[i] = field_ids
        return columns

    def clear(self) -> None:
        """Forget contents and structure."""
        self.head = 0
        self.filled = 0
        self._paths, self._columns, self._protos, self._stores, self._flat_keys = [], [], [], [], None

    # ------------------------------------------------------------------ reading
    def physical(self, positions: np.ndarray) -> np.ndarray:
        """Physical rows of logical positions (0 = oldest row held)."""
        return (positions + (self.head - self.filled)) % self.capacity

    def gather(self, idx: np.ndarray) -> Batch:
        """The rows ``idx`` of every column as a new ``Batch`` (copies, never views of the ring)."""
        columns = [c.take(idx, axis=0) for c in self._columns]
        for i, store in enumerate(self._stores):
            if store is not None:  # one fancy index rebuilds the (len(idx), stack, H, W) stacks
                columns[i] = store.frames.take(columns[i], axis=0)
        if self._flat_keys is not None:  # the common case: no nested fields
            return Batch(zip(self._flat_keys, columns, strict=True))
        return unflatten(dict(zip(self._paths, columns, strict=True)), Batch)

    def gather_items(self, idx: np.ndarray) -> list[dict]:
        return unstack_batch(self.gather(idx))

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict:
        """Head, fill level and the filled rows of every column (the rows beyond are empty).

        A frame field's column holds frame ids into its entry of ``frame_stores``: the frames
        the rows reference, each once (``{"fields": [path, ...], "frames": array}``)."""
        columns = column_state(self._paths, self._columns, self.filled)
        state = {
            "capacity": self.capacity,
            "head": self.head,
            "filled": self.filled,
            "schema": self.schema,
            "columns": columns,
        }
        archive = current_archive()
        if self.frame_stores:
            state["frame_stores"] = []
            for store in self.frame_stores:
                fields = [i for i, s in enumerate(self._stores) if s is store]
                entry: dict[str, Any] = {"fields": [list(self._paths[i]) for i in fields]}
                if archive is None:  # the frames the rows hold, in the state itself
                    frames, ids = store.compact([columns[i][1] for i in fields])
                    for i, field_ids in zip(fields, ids, strict=True):
                        columns[i][1] = field_ids.astype(ID_DTYPE)
                    entry["frames"] = frames
                else:  # every slot, kept by the archive; the ids are the slots
                    entry["archived"] = archive.save(store)
                state["frame_stores"].append(entry)
        return state

    @classmethod
    def from_state_dict(cls, state: Mapping, frame_dedup: bool = True) -> ColumnarRing:
        """A new ring holding ``state``; raises ``DataFormatError`` if the state is inconsistent.

        Rows saved without frame stores (older files) are stored as frames if ``frame_dedup``
        selects their fields; rows saved with frame stores keep that layout."""
        try:
            ring = cls(int(state["capacity"]), frame_dedup)
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
        if flat and state.get("frame_stores"):
            load_frames(ring, state, flat, filled)
        elif flat:
            ring._create(flat)
            if "schema" in state and state["schema"] != ring.schema:
                raise DataFormatError(
                    f"Buffer storage state: columns {ring.schema} do not match the schema {state['schema']}."
                )
            if ring.frame_stores:  # an older file's image stacks: stored as frames now
                for lo in range(0, filled, LOAD_CHUNK):
                    part = {p: rows[lo : lo + LOAD_CHUNK] for p, rows in flat.items()}
                    ring.write(unflatten(part, Batch), len(next(iter(part.values()))))
            else:
                for dst, rows in zip(ring._columns, flat.values(), strict=True):
                    dst[:filled] = rows
        elif filled:
            raise DataFormatError("Buffer storage state claims rows but has no columns.")
        ring.head, ring.filled = head, filled
        return ring


def frame_paths_of(fields: Mapping[Path, tuple[tuple, Any]], frame_dedup: bool = True) -> list[Path]:
    """The fields (path -> per-row shape and dtype) a ring stores as frames (``frames.frame_field``)."""
    return [path for path, (shape, dtype) in fields.items() if frame_dedup and frame_field(shape, dtype)]


def ring_nbytes(
    capacity: int, fields: Mapping[Path, tuple[tuple, Any]], frame_paths: Collection[Path] = ()
) -> int:
    """Bytes a ``ColumnarRing`` of ``capacity`` rows of ``fields`` (path -> per-row shape and dtype)
    allocates: a column per field; for a field of ``frame_paths``, ``stack`` frame ids per row and
    one frame store per frame shape (``initial_frames`` slots: each frame held once)."""
    total, stores = 0, {}
    for path, (shape, dtype) in fields.items():
        dtype = np.dtype(dtype)
        if path in frame_paths:
            total += capacity * math.prod(shape[:-2]) * np.dtype(ID_DTYPE).itemsize
            slots = initial_frames(capacity * stacks_per_row(shape))
            stores[(tuple(shape[-2:]), dtype.str)] = store_nbytes(shape[-2:], dtype, slots)
        else:
            total += capacity * math.prod(shape) * dtype.itemsize
    return total + sum(stores.values())


def check_ring_fits(
    capacity: int, fields: Mapping[Path, tuple[tuple, Any]], frame_paths: Collection[Path], what: str
) -> int:
    """``ring_nbytes``, after raising ``ConfigError`` if that is more than this machine's memory
    (``what`` says what a row holds, in the message)."""
    need = ring_nbytes(capacity, fields, frame_paths)
    memory = system_memory()
    if memory is not None and need > memory:
        raise ring_too_large(capacity, need, what, memory)
    return need


def ring_too_large(capacity: int, need: int, what: str, memory: int | None) -> ConfigError:
    """The error of a ring of ``need`` bytes: more than ``memory``, or (None) than an allocation got."""
    have = "this machine can allocate now" if memory is None else f"this machine's {memory / 2**30:.1f} GiB"
    fits = "" if memory is None else f" to at most about {capacity * memory // need}"
    return ConfigError(
        f"A replay buffer of {capacity} rows {what} needs {need / 2**30:.1f} GiB, more than {have}: "
        f"lower policy.other.replay_buffer.replay_buffer_size{fits}."
    )


LOAD_CHUNK = 4096  # rows stored as frames at a time when an older file is loaded


def load_frames(ring: ColumnarRing, state: Mapping, flat: dict[Path, np.ndarray], filled: int) -> None:
    """Fill ``ring`` from a state with ``frame_stores``: the schema gives the fields as pushed,
    the stores their frames, the frame fields' columns their ids. Every shape is checked against
    the arrays held before anything is allocated (a crafted schema must not size the ring)."""
    schema, entries = state.get("schema"), state["frame_stores"]
    try:
        protos = {tuple(f["path"]): (tuple(f["shape"]), np.dtype(f["dtype"])) for f in schema}
        groups = [([tuple(p) for p in e["fields"]], e.get("frames", e.get("archived"))) for e in entries]
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DataFormatError(f"Buffer storage state: malformed schema or frame stores: {err!r}") from err
    archive = current_archive()
    if archive is None and any(isinstance(frames, Mapping) for _, frames in groups):
        raise DataFormatError(
            "Buffer storage state: its frames are kept beside it in a run checkpoint (checkpoints/frames/); "
            "load it through the run (resume=<the run's folder>), not as a file of its own."
        )
    # an archived store's frames are read straight into the store (one copy of gigabytes, not two)
    groups = [(paths, _archived(archive, frames, protos[paths[0]])) for paths, frames in groups]
    if list(protos) != list(flat):
        raise DataFormatError("Buffer storage state: the schema does not name the stored columns.")
    frame_paths = [p for paths, _ in groups for p in paths]
    if len(set(frame_paths)) != len(frame_paths) or not set(frame_paths) <= set(flat):
        raise DataFormatError("Buffer storage state: frame stores name unknown or repeated fields.")
    for path, (shape, dtype) in protos.items():
        rows = flat[path]
        if path not in frame_paths and (rows.shape[1:] != shape or rows.dtype != dtype):
            raise DataFormatError(f"Buffer storage state: column {_name(path)} does not fit the schema.")
    for paths, frames in groups:
        shape, dtype = protos[paths[0]]
        if (
            not isinstance(frames, (np.ndarray, _Archived))
            or len(shape) < 3
            or (frames.shape[1:], frames.dtype) != (shape[-2:], dtype)
            or any(protos[p] != (shape, dtype) for p in paths)
        ):
            raise DataFormatError("Buffer storage state: frames do not match the schema of their fields.")
        for path in paths:
            ids = flat[path]
            if ids.dtype.kind not in "iu" or ids.shape != (filled, *shape[:-2]):
                raise DataFormatError("Buffer storage state: frame ids of the wrong shape or type.")
            if filled and (ids.min() < 0 or ids.max() >= len(frames)):
                raise DataFormatError("Buffer storage state: frame ids outside the stored frames.")
    ring._create({p: np.zeros((0, *shape), dtype) for p, (shape, dtype) in protos.items()}, frame_paths)
    for paths, frames in groups:
        ids = [flat[p] for p in paths]
        slots = initial_frames(ring.capacity * stacks_per_row(protos[paths[0]][0]))
        if isinstance(frames, _Archived):
            store = FrameStore.rebuilt(frames.shape[1:], frames.dtype, len(frames), ids, slots, frames.fill)
            archive.adopt(store, frames.manifest)
        else:
            store = FrameStore.from_compact(frames, ids, slots)
        for path, column in zip(paths, ids, strict=True):
            i = ring._paths.index(path)
            ring._stores[i] = store
            ring._columns[i][:filled] = column
    for i, path in enumerate(ring._paths):
        if ring._stores[i] is None:
            ring._columns[i][:filled] = flat[path]


class _Archived:
    """An archived frame store's frames before they are read: shape and dtype (checked like an
    array's), and ``fill``, which reads them into the view it is given."""

    def __init__(self, archive: Any, manifest: Mapping, frame_shape: tuple, dtype: np.dtype) -> None:
        self.manifest, self.dtype = manifest, dtype
        try:
            self.shape = (int(manifest["slots"]), *frame_shape)
        except (KeyError, TypeError, ValueError) as err:
            raise DataFormatError(f"Buffer storage state: malformed frame archive entry: {err!r}") from err
        self.fill = lambda out: archive.load_into(manifest, out)

    def __len__(self) -> int:
        return self.shape[0]


def _archived(archive: Any, frames: Any, proto: tuple) -> Any:
    if not isinstance(frames, Mapping):
        return frames
    shape, dtype = proto
    return _Archived(archive, frames, shape[-2:], dtype)


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
