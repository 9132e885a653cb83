"""Sum and min segment trees whose updates and searches take a whole batch of indices at once.

Layout: a heap array of ``2 * P`` nodes (``P`` = capacity rounded up to a power of two); node
``k`` has children ``2k`` and ``2k + 1`` and leaf ``i`` is node ``P + i``.

The root is wide. Below a *frontier* of ``F = min(P, root_fanout)`` nodes the tree is binary;
the levels above the frontier are not stored, and the root's value (total, minimum) or the
frontier node a prefix sum falls in is found by one vectorized scan of the frontier nodes
(only those above real leaves). Every binary level costs a batch update or search about six
numpy calls, while scanning a couple of thousand frontier nodes costs as much as two or three
levels, so a wide root removes about ten levels of Python-driven work for a 100k-item buffer.
"""

from __future__ import annotations

import numpy as np


class SegmentTree:
    """A segment tree for an associative, commutative ``operation`` (a numpy ufunc)."""

    def __init__(
        self, capacity: int, operation: np.ufunc, neutral_element: float, root_fanout: int = 4096
    ) -> None:
        if capacity < 1:
            raise ValueError(f"A segment tree needs capacity >= 1, got {capacity}.")
        self.capacity = int(capacity)
        self._p = 1 << (self.capacity - 1).bit_length()
        self._f = min(self._p, 1 << (max(1, int(root_fanout)) - 1).bit_length())
        self._depth = (self._p // self._f).bit_length() - 1  # binary levels between frontier and leaves
        self._used = -(-self.capacity // (self._p // self._f))  # frontier nodes above real leaves
        self._op = operation
        self._neutral = float(neutral_element)
        # zeros (a sum tree's neutral) come from the system untouched until written
        size = 2 * self._p
        self._tree = np.zeros(size) if self._neutral == 0 else np.full(size, self._neutral)
        # Level d (0 = frontier, depth = leaves) as a view, indexed by position within the level:
        # the children of position k are positions 2k and 2k + 1 of level d + 1, and a leaf's
        # position is its index (so the sibling of position k is k ^ 1).
        self._levels = [self._tree[self._f << d : self._f << (d + 1)] for d in range(self._depth + 1)]
        self._leaves = self._levels[-1]
        self._shifts = np.arange(0, self._depth + 1, dtype=np.int64)[:, None]
        self._dirty = True  # frontier changed since the cached reduction was computed

    @property
    def leaves(self) -> np.ndarray:
        """Read-only view of the ``capacity`` leaf values."""
        view = self._leaves[: self.capacity]
        view.flags.writeable = False
        return view

    def __getitem__(self, idx: np.ndarray | int) -> np.ndarray | float:
        return self._leaves[idx]

    def update(self, idx: np.ndarray, values: np.ndarray | float) -> None:
        """Set leaves ``idx`` (in ``[0, capacity)``) to ``values``; with repeated indices the last
        value wins."""
        idx = np.asarray(idx, dtype=np.int64)
        op, levels, depth = self._op, self._levels, self._depth
        self._leaves[idx] = values
        # Row r: the positions r levels above the leaves on each leaf's path.
        path = idx >> self._shifts
        siblings = path[:-1] ^ 1
        node = values
        for r in range(depth):
            # A parent is its child on the path (just computed) combined with that child's
            # sibling, read after the child's level was written: if both children were written,
            # the sibling holds its new value. With repeated nodes the last write wins, and the
            # last occurrence of a node is also the last of its child on the path, so it is right.
            node = op(node, levels[depth - r][siblings[r]])
            levels[depth - r - 1][path[r + 1]] = node
        self._dirty = True

    def update_range(self, start: int, values: np.ndarray | float, count: int | None = None) -> None:
        """Set the contiguous leaves ``[start, start + count)``; cheaper than ``update`` (slices)."""
        count = len(values) if count is None else count
        lo, hi = start, start + count
        op, levels = self._op, self._levels
        levels[-1][lo:hi] = values
        for d in range(self._depth - 1, -1, -1):
            lo, hi = lo >> 1, ((hi - 1) >> 1) + 1
            below = levels[d + 1]
            op(below[2 * lo : 2 * hi : 2], below[2 * lo + 1 : 2 * hi : 2], out=levels[d][lo:hi])
        self._dirty = True

    def fill(self, values: np.ndarray) -> None:
        """Replace all leaves (``values`` has ``capacity`` entries) and rebuild every node."""
        self.clear()
        self.update_range(0, np.asarray(values, dtype=np.float64))

    def clear(self) -> None:
        self._tree[:] = self._neutral
        self._dirty = True

    def _frontier(self) -> np.ndarray:
        """The frontier nodes that have leaves below them (those past the capacity stay neutral)."""
        return self._levels[0][: self._used]


class SumSegmentTree(SegmentTree):
    """Sums, with a batched prefix-sum search for proportional sampling, and the smallest
    positive leaf (a prioritized buffer's lowest weight, which its importance weights need).

    The smallest positive leaf is followed through the writes instead of kept in a min tree,
    whose updates would touch as many cold nodes as the sums' do. ``_min_count`` is a lower
    bound on how many leaves hold ``_min``; once a write may have replaced them all it is 0 and
    the next query scans the leaves. A buffer seldom samples, hence seldom rewrites, its
    lowest-priority item, so scans are rare.
    """

    def __init__(self, capacity: int, root_fanout: int = 4096) -> None:
        super().__init__(capacity, np.add, 0.0, root_fanout)
        self._running = np.zeros(self._used + 1)
        self._min, self._min_count = float("inf"), 0  # count 0: unknown until the next scan

    def update(self, idx: np.ndarray, values: np.ndarray | float) -> None:
        """Set leaves ``idx`` (in ``[0, capacity)``) to ``values``; with repeated indices the last
        value wins."""
        idx = np.asarray(idx, dtype=np.int64)
        replaced = self._leaves[idx]
        super().update(idx, values)
        self._follow_min(replaced, self._leaves[idx])  # read back: only the last repeat counts

    def update_range(self, start: int, values: np.ndarray | float, count: int | None = None) -> None:
        """Set the contiguous leaves ``[start, start + count)``; cheaper than ``update`` (slices)."""
        count = len(values) if count is None else count
        leaves = self._leaves[start : start + count]
        replaced = leaves.copy()
        super().update_range(start, values, count)
        self._follow_min(replaced, leaves)

    def clear(self) -> None:
        super().clear()
        self._min_count = 0

    def min_positive(self) -> float:
        """The smallest positive leaf (inf if there is none)."""
        if self._min_count <= 0:
            leaves = self._leaves[: self.capacity]
            positive = leaves[leaves > 0]
            self._min = float(positive.min()) if len(positive) else float("inf")
            self._min_count = int(np.count_nonzero(positive == self._min))
        return self._min

    def _follow_min(self, replaced: np.ndarray, written: np.ndarray) -> None:
        if self._min_count <= 0 or len(written) == 0:
            return
        # argmin, not a ufunc reduction: far cheaper on a few hundred values.
        if replaced.item(replaced.argmin()) <= self._min:  # some may have held the minimum (or were empty)
            # A leaf repeated in ``idx`` is counted twice: the bound only gets lower, which is safe.
            self._min_count -= int(np.count_nonzero(replaced == self._min))
        lowest = written.item(written.argmin())
        if lowest > 0:
            if lowest < self._min:
                self._min, self._min_count = lowest, 1
        elif written.any():  # positive leaves written along with zeros: not followed, scan later
            self._min_count = 0

    def _running_sums(self) -> np.ndarray:
        """``[0, f_0, f_0 + f_1, ..., total]`` over the frontier nodes ``f``, cached until the
        next update: entry ``k`` is the sum of the leaves left of frontier node ``k``."""
        if self._dirty:
            np.add.accumulate(self._frontier(), out=self._running[1:])
            self._dirty = False
        return self._running

    def reduce(self) -> float:
        """Sum of all leaves."""
        return float(self._running_sums()[-1])

    def prefix_sum(self, end: int) -> float:
        """Sum of leaves ``[0, end)``."""
        running = self._running_sums()
        per_node = self._p // self._f
        block = min(end // per_node, self._used - 1)
        inside = self._leaves[block * per_node : end].sum()
        return float(running[block] + inside)

    def find_prefixsum_idx(self, prefix_sums: np.ndarray, return_values: bool = False) -> np.ndarray | tuple:
        """For each ``s`` the first leaf ``i`` with ``sum(leaves[: i + 1]) > s``.

        Values must lie in ``[0, reduce())``. The leaf found always has a positive value: if
        rounding at a node boundary lands on an empty leaf, that query is redone exactly. With
        ``return_values`` the leaves' values come back too (they are read anyway).
        """
        running = self._running_sums()
        prefix_sums = np.asarray(prefix_sums, dtype=np.float64)
        # Only the inner borders are searched, so a sum rounded up past the total still falls in
        # the last frontier node.
        node = running[1:-1].searchsorted(prefix_sums, side="right")  # position in the frontier
        values = prefix_sums - running[node]
        levels, depth = self._levels, self._depth
        for d in range(1, depth + 1):
            node += node  # the left child's position in level d
            left = levels[d][node]
            go_right = values >= left
            if d < depth:  # the residual is not needed below the last level
                values -= left * go_right
            node += go_right
        found = levels[depth][node]  # the position in the last level is the leaf index
        if np.count_nonzero(found) < len(found):  # leaves are >= 0: a zero means an empty leaf
            empty = found <= 0
            node[empty] = self._exact_search(prefix_sums[empty])
            found = levels[depth][node]
        return (node, found) if return_values else node

    def _exact_search(self, prefix_sums: np.ndarray) -> np.ndarray:
        """Slow path (a full running sum) for the rare query hit by rounding."""
        leaves = self._leaves[: self.capacity]
        positive = np.flatnonzero(leaves > 0)
        if len(positive) == 0:
            raise ValueError("Cannot search a segment tree whose leaves are all zero.")
        found = np.searchsorted(np.cumsum(leaves), prefix_sums, side="right")
        # Snap to the nearest positive leaf at or before the position found.
        pos = np.searchsorted(positive, np.minimum(found, self.capacity - 1), side="right") - 1
        return positive[np.maximum(pos, 0)]


class MinSegmentTree(SegmentTree):
    """Minimums (the neutral element is +inf)."""

    def __init__(self, capacity: int, root_fanout: int = 4096) -> None:
        super().__init__(capacity, np.minimum, float("inf"), root_fanout)

    def reduce(self) -> float:
        """Minimum over all leaves."""
        if self._dirty:
            self._min = float(self._frontier().min())
            self._dirty = False
        return self._min
