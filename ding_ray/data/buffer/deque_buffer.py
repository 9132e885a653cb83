"""DI-engine's ``DequeBuffer``: the latest ``size`` items, sampled uniformly, by id or by group."""

from __future__ import annotations

import copy
import logging
import random
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from ding_ray.data.buffer.buffer import Buffer, BufferedData, apply_middleware
from ding_ray.data.buffer.items import ItemRing
from ding_ray.data.file_format import load_state, save_state

logger = logging.getLogger(__name__)
FILE_TYPE = "DequeBuffer"


class DequeBuffer(Buffer):
    """Holds the latest ``size`` pushed items (``BufferedData``: data, a unique ``index`` string,
    a ``meta`` dict); when full, a push drops the oldest.

    The items live in a ``ColumnarRing`` (``ItemRing``): dict data is stored as numpy columns, so
    a sampled item's ``data`` is a new dict of arrays (a copy, never the object pushed), while
    its ``meta`` is the dict the buffer keeps (a repeat of an item in one sample gets a copy).
    Draws use Python's ``random`` module, as DI-engine's do, so the same seed picks the same
    items. ``sliced``: grouped samples of ``unroll_len`` start at a multiple of ``unroll_len``.
    """

    def __init__(self, size: int, sliced: bool = False) -> None:
        if int(size) < 1:
            raise ValueError(f"DequeBuffer(size={size}): the size (items held) must be at least 1.")
        super().__init__(size=int(size))
        self.items = ItemRing(self.size)
        self.sliced = bool(sliced)

    @apply_middleware("push")
    def push(self, data: Any, meta: dict | None = None) -> BufferedData:
        """Store ``data`` (a dict of arrays/tensors/numbers, or any one object) with ``meta``."""
        if meta is not None and not isinstance(meta, dict):
            raise TypeError(
                f"push(data, meta): meta must be a dict (e.g. {{'priority': 1.0}}) or None, got "
                f"{type(meta).__name__}. DequeBuffer.push takes no env step."
            )
        meta = {} if meta is None else meta
        index = uuid.uuid1().hex
        self.items.append(data, index, meta)
        return BufferedData(data=data, index=index, meta=meta)

    @apply_middleware("sample")
    def sample(
        self,
        size: int | None = None,
        indices: list[str] | None = None,
        replace: bool = False,
        sample_range: slice | None = None,
        ignore_insufficient: bool = False,
        groupby: str | None = None,
        unroll_len: int | None = None,
    ) -> list[BufferedData] | list[list[BufferedData]]:
        """``size`` items drawn uniformly (with ``replace``, repeats allowed), the items of
        ``indices`` in that order, or with ``groupby`` (a meta key) ``size`` groups: per group its
        items in push order, ``unroll_len`` consecutive ones when given. ``sample_range`` slices
        the items (oldest first) drawn from. Too few items or groups raise ``ValueError``, or,
        with ``ignore_insufficient``, give what could be drawn (an empty list, or fewer groups)."""
        if not size and not indices:
            raise ValueError("sample() needs a size (items to draw) or indices (ids of items to get).")
        if size and indices and size != len(indices):
            raise ValueError(
                f"sample(size={size}, indices=[{len(indices)} ids]): give one, or equal lengths."
            )
        if indices and groupby:
            raise ValueError("sample() takes indices or groupby, not both.")
        if unroll_len and not groupby:
            raise ValueError("sample(unroll_len=...) needs groupby (the meta key whose groups are unrolled).")
        size = size or len(indices)
        positions = range(self.items.count())
        if sample_range is not None:
            positions = positions[sample_range]
        if indices:
            picked = self._by_index(indices, positions)
        elif groupby:
            picked = self._by_group(size, groupby, replace, unroll_len, positions)
        elif replace:
            picked = random.choices(positions, k=size) if len(positions) else []
        else:
            picked = random.sample(positions, k=size) if size <= len(positions) else []
        if len(picked) != size:
            if not ignore_insufficient:
                raise ValueError(f"There are less than {size} records/groups in buffer({self.count()})")
            logger.warning(
                "Sample ignored: the buffer holds %d items, %d were asked for.", self.count(), size
            )
        if groupby:
            return self._grouped(picked)
        return self._buffered(self.items.rows(picked)) if picked else []

    def _by_index(self, indices: list[str], positions: range) -> list[int]:
        rows = [self.items.row_of.get(index) for index in indices]
        if len(positions) == self.items.count():  # no sample_range: every held row is allowed
            missing = [index for index, row in zip(indices, rows, strict=True) if row is None]
        else:
            allowed = set(self.items.rows(positions).tolist())
            missing = [index for index, row in zip(indices, rows, strict=True) if row not in allowed]
        if missing:
            raise KeyError(
                f"sample(indices=...): no item with index {missing[0]!r} in the buffer (or in sample_range); "
                "it was deleted, dropped as the oldest, or never pushed here."
            )
        start = (self.items.ring.head - self.items.count()) % self.size
        return [(row - start) % self.size for row in rows]

    def _by_group(
        self, size: int, groupby: str, replace: bool, unroll_len: int | None, positions: range
    ) -> list[list[int]]:
        """Per drawn group the positions of its items (in ``positions``), in push order."""
        keys = [meta.get(groupby) for meta in self._metas(range(self.items.count()))]
        if unroll_len and unroll_len > 1:
            names = [key for key, n in Counter(keys).items() if n >= unroll_len]
            if not names:
                return []
        else:
            names = list(set(keys))
        if replace:
            drawn = random.choices(names, k=size)
        elif size > len(names):
            raise ValueError(f"There are less than {size} groups in buffer({len(names)} groups)")
        else:
            drawn = random.sample(names, k=size)
        members: dict[Any, list[int]] = {}
        for position in positions:
            members.setdefault(keys[position], []).append(position)
        groups = []
        for name in drawn:
            run = members.get(name, [])
            if unroll_len:
                if self.sliced:
                    start = random.choice(range(max(1, len(run)))) // unroll_len
                    last = start == (len(run) - 1) // unroll_len
                    run = run[-unroll_len:] if last else run[start * unroll_len : (start + 1) * unroll_len]
                else:
                    start = random.choice(range(max(1, len(run) - unroll_len)))
                    run = run[start : start + unroll_len]
            groups.append(run)
        return groups

    def _metas(self, positions: Iterable[int]) -> list[dict]:
        return [self.items.metas[row] for row in self.items.rows(list(positions)).tolist()]

    def _buffered(self, rows: Any, seen: set | None = None) -> list[BufferedData]:
        """``BufferedData`` of ``rows``; an item seen before (in ``seen``) gets a copy of its meta."""
        seen = set() if seen is None else seen
        out = []
        for row, data in zip(rows.tolist(), self.items.data(rows), strict=True):
            index, meta = self.items.ids[row], self.items.metas[row]
            out.append(BufferedData(data, index, copy.deepcopy(meta) if index in seen else meta))
            seen.add(index)
        return out

    def _grouped(self, groups: list[list[int]]) -> list[list[BufferedData]]:
        seen: set = set()
        return [self._buffered(self.items.rows(group), seen) if group else [] for group in groups]

    @apply_middleware("update")
    def update(self, index: str, data: Any | None = None, meta: dict | None = None) -> bool:
        """Replace the data (unless None) and the meta (unless None) of item ``index``; False if
        no such item is held."""
        row = self.items.row_of.get(index)
        if row is None:
            return False
        if data is not None:
            self.items.overwrite(row, data)
        if meta is not None:
            self.items.metas[row] = meta
        return True

    @apply_middleware("delete")
    def delete(self, indices: str | Iterable[str]) -> None:
        """Remove the items of ``indices`` (a string or several); ids not held are skipped."""
        if isinstance(indices, str):
            indices = [indices]
        rows = {self.items.row_of[i] for i in indices if i in self.items.row_of}
        if rows:
            self.items.remove(rows)

    @apply_middleware("clear")
    def clear(self) -> None:
        self.items.clear()

    def count(self) -> int:
        return self.items.count()

    def get(self, idx: int) -> BufferedData:
        """The item at position ``idx`` (0 the oldest, -1 the newest)."""
        n = self.count()
        if not -n <= idx < n:
            raise IndexError(f"DequeBuffer index {idx} out of range: it holds {n} items.")
        return self._buffered(self.items.rows([idx % n]))[0]

    def get_by_index(self, index: str) -> BufferedData:
        """The item whose ``index`` (id string) is given; KeyError if it is not held."""
        row = self.items.row_of.get(index)
        if row is None:
            raise KeyError(f"No item with index {index!r} in the buffer.")
        return BufferedData(self.items.data([row])[0], index, self.items.metas[row])

    def save_data(self, file_name: str) -> None:
        """Write the items (data, ids, metas) to a checksummed msgpack file (``file_format``)."""
        save_state(file_name, self.items.state_dict(), FILE_TYPE)

    def load_data(self, file_name: str) -> None:
        """Replace the items with those of a ``save_data`` file; middleware state is not in it."""
        self.items.load_state_dict(load_state(file_name, FILE_TYPE))

    def __iter__(self) -> Iterator[BufferedData]:
        return iter(self._buffered(self.items.rows(range(self.count())))) if self.count() else iter([])

    def __copy__(self) -> DequeBuffer:
        view = type(self)(self.size, self.sliced)
        view.items = self.items
        return view
