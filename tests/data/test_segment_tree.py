import numpy as np
import pytest

from ding_ray.data.segment_tree import MinSegmentTree, SumSegmentTree


@pytest.mark.parametrize("capacity,fanout", [(1, 2048), (3, 2), (1000, 2048), (5000, 64), (4096, 16)])
def test_batched_updates_match_brute_force(capacity, fanout):
    rng = np.random.default_rng(capacity)
    sum_tree, min_tree = SumSegmentTree(capacity, fanout), MinSegmentTree(capacity, fanout)
    leaves = np.zeros(capacity)
    mins = np.full(capacity, np.inf)
    for _ in range(50):
        idx = rng.integers(0, capacity, rng.integers(1, 300))  # with repeats: the last value wins
        values = rng.random(len(idx)) + 0.01
        sum_tree.update(idx, values)
        min_tree.update(idx, values)
        leaves[idx] = values
        mins[idx] = values
        assert sum_tree.reduce() == pytest.approx(leaves.sum(), rel=1e-12)
        assert min_tree.reduce() == mins.min()
    np.testing.assert_array_equal(sum_tree.leaves, leaves)
    # Every inner node is right too: the updated tree searches exactly like one built afresh.
    rebuilt = SumSegmentTree(capacity, fanout)
    rebuilt.fill(leaves)
    queries = rng.random(2000) * rebuilt.reduce()
    np.testing.assert_array_equal(sum_tree.find_prefixsum_idx(queries), rebuilt.find_prefixsum_idx(queries))


@pytest.mark.parametrize("fanout", [1, 16, 2048])
def test_find_prefixsum_matches_cumsum_search(fanout):
    rng = np.random.default_rng(0)
    capacity = 3000
    tree = SumSegmentTree(capacity, fanout)
    leaves = rng.random(capacity) * (rng.random(capacity) > 0.3)  # many zero leaves
    tree.fill(leaves)
    queries = rng.random(4000) * tree.reduce()
    idx, values = tree.find_prefixsum_idx(queries, return_values=True)
    expected = np.searchsorted(np.cumsum(leaves), queries, side="right")
    assert np.mean(idx == expected) > 0.999  # rounding may move a query across a border
    assert np.all(leaves[idx] > 0)  # never an empty leaf
    np.testing.assert_array_equal(values, leaves[idx])


def test_update_range_and_prefix_sum():
    rng = np.random.default_rng(1)
    tree = SumSegmentTree(1000, root_fanout=8)
    leaves = np.zeros(1000)
    for start in (0, 37, 500, 990):
        values = rng.random(10)
        tree.update_range(start, values)
        leaves[start : start + 10] = values
    assert tree.reduce() == pytest.approx(leaves.sum())
    for end in (0, 1, 37, 47, 999, 1000):
        assert tree.prefix_sum(end) == pytest.approx(leaves[:end].sum())


def test_empty_leaves_are_never_found_at_the_edges():
    tree = SumSegmentTree(8, root_fanout=2)
    tree.update(np.array([2, 5]), np.array([1.0, 1.0]))
    found = tree.find_prefixsum_idx(np.array([0.0, 0.999999, 1.0, 1.9999999, np.nextafter(2.0, 0)]))
    assert set(found.tolist()) <= {2, 5}
    assert found[0] == 2 and found[-1] == 5


def test_min_positive_follows_writes_exactly():
    """Random writes (repeated indices, removals to 0, ranges, ties) never leave a wrong minimum."""
    rng = np.random.default_rng(7)
    capacity = 500
    tree = SumSegmentTree(capacity, 16)
    leaves = np.zeros(capacity)
    assert tree.min_positive() == np.inf
    for step in range(400):
        kind = step % 4
        if kind == 0:  # a prioritized update, often hitting the current minimum, with repeats
            idx = rng.integers(0, capacity, 64)
            idx[:4] = np.argmin(np.where(leaves > 0, leaves, np.inf))
            values = rng.choice([0.5, 1.0, 2.0], len(idx)) * rng.random(len(idx)) + 1e-3
            tree.update(idx, values)
            leaves[idx] = values  # numpy fancy assignment: the last repeat wins, as in the tree
        elif kind == 1:  # removals, some along with new lowest weights
            idx = rng.integers(0, capacity, 8)
            values = 0.0 if step % 8 == 1 else np.where(rng.random(8) < 0.5, 0.0, rng.random(8) * 1e-4 + 1e-6)
            tree.update(idx, values)
            leaves[idx] = values
        elif kind == 2:  # a ring write of equal weights (ties with the minimum are common)
            start, count = int(rng.integers(0, capacity - 32)), 32
            tree.update_range(start, 1.0, count)
            leaves[start : start + count] = 1.0
        else:
            tree.min_positive()  # a query in between writes
        positive = leaves[leaves > 0]
        assert tree.min_positive() == (positive.min() if len(positive) else np.inf)
    tree.update(np.array([], dtype=np.int64), np.array([]))  # an empty write changes nothing
    assert tree.min_positive() == leaves[leaves > 0].min()
    tree.fill(np.where(leaves > 0, leaves * 3, 0.0))
    assert tree.min_positive() == 3 * leaves[leaves > 0].min()
    tree.clear()
    assert tree.min_positive() == np.inf
