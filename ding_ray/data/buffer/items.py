"""The storage of ``DequeBuffer``: items in push order on a ``ColumnarRing``, each with an id and a
meta dict. Positions count from the oldest item held (0) to the newest (``count() - 1``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.data.columnar import flatten, stack_items
from ding_ray.data.storage import ColumnarRing
from ding_ray.errors import DataFormatError, ShapeError

ITEM_FIELD = "item"  # the one column of data pushed as something other than a dict


class ItemRing:
    """Dict data is stored as columns (one per field, numpy; tensors are converted), any other
    data as one object column. When full, an append overwrites the oldest item. Removing items
    from the middle moves the later ones up, so positions stay contiguous and push order is kept."""

    def __init__(self, size: int) -> None:
        # frames are not deduplicated: ``overwrite`` and ``remove`` rewrite rows in place
        self.ring = ColumnarRing(size, frame_dedup=False)
        self.ids = np.empty(size, dtype=object)
        self.metas: list[dict | None] = [None] * size
        self.row_of: dict[str, int] = {}
        self.wrapped = False  # data is stored under ITEM_FIELD

    def count(self) -> int:
        return self.ring.filled

    def rows(self, positions: Any) -> np.ndarray:
        return self.ring.physical(np.asarray(positions, dtype=np.int64))

    def append(self, data: Any, index: str, meta: dict) -> None:
        wrapped = not isinstance(data, Mapping)
        if self.count() and wrapped != self.wrapped:
            raise ShapeError(
                f"This buffer holds {'non-dict' if self.wrapped else 'dict'} items; it cannot also store a "
                f"{type(data).__name__}. clear() it first, or push the same kind of data every time."
            )
        row = self.ring.head
        if self.count() == self.ring.capacity:
            del self.row_of[self.ids[row]]
        self.ring.write(stack_items([{ITEM_FIELD: data} if wrapped else data]), 1)
        self.wrapped = wrapped
        self.ids[row], self.metas[row] = index, meta
        self.row_of[index] = row

    def data(self, rows: np.ndarray) -> list:
        """The data of ``rows``, as pushed (dict fields as numpy arrays), each a new object."""
        items = self.ring.gather_items(np.asarray(rows, dtype=np.int64))
        return [item[ITEM_FIELD] for item in items] if self.wrapped else items

    def overwrite(self, row: int, data: Any) -> None:
        """Replace the data of ``row``; it must have the fields and shapes of what is stored."""
        flat = flatten(stack_items([{ITEM_FIELD: data} if self.wrapped else data]))
        stored = {tuple(field["path"]) for field in self.ring.schema}
        if set(flat) != stored:
            raise ShapeError(
                f"update(data=...) must have the fields the buffer stores, {sorted(stored)}; "
                f"got {sorted(flat)}."
            )
        for path, value in flat.items():
            column = self.ring.column(path)
            if value.shape[1:] != column.shape[1:]:
                raise ShapeError(
                    f"update(data=...): field {list(path)} has shape {value.shape[1:]}, the buffer stores "
                    f"{column.shape[1:]}."
                )
            column[row] = value[0]

    def remove(self, rows: set[int]) -> None:
        """Drop ``rows``; the items after each move up one position per removed item before them."""
        keep = [int(r) for r in self.rows(np.arange(self.count())) if int(r) not in rows]
        kept = self.ring.gather(np.asarray(keep, dtype=np.int64)) if keep else None
        ids, metas, wrapped = self.ids[keep], [self.metas[r] for r in keep], self.wrapped
        self.clear()
        if kept is not None:
            self.ring.write(kept, len(keep))
            self.ids[: len(keep)], self.metas[: len(keep)] = ids, metas
            self.row_of = {index: row for row, index in enumerate(ids)}
            self.wrapped = wrapped

    def clear(self) -> None:
        self.ring.clear()
        self.ids[:] = None
        self.metas = [None] * self.ring.capacity
        self.row_of = {}
        self.wrapped = False

    def state_dict(self) -> dict:
        """Items oldest first: the ring's rows, ids and metas (meta values must be plain data)."""
        order = self.rows(np.arange(self.count()))
        kept = self.ring.gather(order) if len(order) else None
        held = ColumnarRing(self.ring.capacity, frame_dedup=False)
        if kept is not None:
            held.write(kept, len(order))
        return {
            "ring": held.state_dict(),
            "ids": [self.ids[r] for r in order],
            # numpy scalars as Python numbers: the file format would give them back as 1-item arrays
            "metas": [
                {k: v.item() if isinstance(v, np.generic) else v for k, v in self.metas[r].items()}
                for r in order
            ],
            "wrapped": self.wrapped,
        }

    def load_state_dict(self, state: Mapping) -> None:
        try:
            ring = ColumnarRing.from_state_dict(state["ring"], frame_dedup=False)
            ids, metas, wrapped = list(state["ids"]), list(state["metas"]), bool(state["wrapped"])
        except (KeyError, TypeError) as err:
            raise DataFormatError(f"DequeBuffer state is incomplete or malformed: {err!r}") from err
        if ring.capacity != self.ring.capacity or not (len(ids) == len(metas) == ring.filled):
            raise DataFormatError(
                f"DequeBuffer state holds {ring.filled} items for a buffer of size {ring.capacity}, with "
                f"{len(ids)} ids and {len(metas)} metas; this buffer has size {self.ring.capacity}: load it "
                "into a DequeBuffer of the size that saved it."
            )
        self.clear()
        self.ring = ring
        self.ids[: len(ids)], self.metas[: len(metas)] = ids, [dict(m) for m in metas]
        self.row_of = {index: row for row, index in enumerate(ids)}
        self.wrapped = wrapped
