"""Columnar batches: a dict of numpy arrays sharing a leading batch axis, nested dicts allowed.

A transition travels through ding_ray either as one item (a dict of scalars/arrays/tensors) or,
many at a time, as a ``Batch`` of columns. The helpers here convert between the two forms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ding_ray.errors import ShapeError

Path = tuple  # keys from the top of a nested dict down to one leaf


class Batch(dict):
    """A dict of arrays whose first axis indexes items: the columnar form of a list of items.

    The class is only a marker: ``push`` stores a plain dict as *one* item and a ``Batch`` as
    ``batch_size(batch)`` items. Dicts nested inside a ``Batch`` are ordinary dicts.
    """


def to_numpy(value: Any) -> Any:
    """Convert a torch tensor to numpy; everything else is returned as it is."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # torch.Tensor, without importing torch
        return value.detach().cpu().numpy()
    return value


def flatten(tree: Mapping, prefix: Path = ()) -> dict[Path, Any]:
    """``{'obs': {'a': x}, 'done': y}`` -> ``{('obs', 'a'): x, ('done',): y}``."""
    flat: dict[Path, Any] = {}
    for key, value in tree.items():
        path = (*prefix, key)
        if type(value) is not np.ndarray and isinstance(value, Mapping):
            if not value:
                raise ShapeError(f"Field {_name(path)} is an empty dict; nothing can be stored for it.")
            flat.update(flatten(value, path))
        else:
            flat[path] = value
    return flat


def unflatten(flat: Mapping[Path, Any], cls: type = dict) -> dict:
    """Inverse of ``flatten``; the top-level dict is of type ``cls``."""
    out = cls()
    for path, value in flat.items():
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def batch_size(batch: Mapping) -> int:
    """Length of the leading axis shared by every column; raises ``ShapeError`` if they differ."""
    size = None
    for path, column in flatten(batch).items():
        n = len(column) if hasattr(column, "__len__") else None
        if n is None or getattr(column, "ndim", 1) == 0:
            raise ShapeError(f"Column {_name(path)} of a Batch has no leading batch axis.")
        if size is None:
            size = n
        elif n != size:
            raise ShapeError(f"Column {_name(path)} has {n} rows, other columns have {size}.")
    if size is None:
        raise ShapeError("A Batch needs at least one column.")
    return size


def as_batch(batch: Mapping) -> Batch:
    """A ``Batch`` whose leaves are all numpy arrays (tensors converted, lists turned to arrays)."""
    return as_batch_sized(batch)[0]


def as_batch_sized(batch: Mapping) -> tuple[Batch, int]:
    """``as_batch`` and the batch size, checked, in one pass."""
    values = list(batch.values())
    if values and all(type(v) is np.ndarray and v.ndim > 0 for v in values):  # flat numpy: fast path
        n = len(values[0])
        if all(len(v) == n for v in values):
            return Batch(batch), n
    out = Batch()
    for path, column in flatten(batch).items():
        column = to_numpy(column)
        if not isinstance(column, np.ndarray):
            column = _stack_leaf(path, list(column))
        _set(out, path, column)
    return out, batch_size(out)


def stack_items(items: Sequence[Mapping]) -> Batch:
    """Stack a list of items (dicts with identical key structure) into one ``Batch``."""
    if len(items) == 0:
        raise ShapeError("Cannot stack an empty list of items.")
    first = items[0]
    if not isinstance(first, Mapping):
        raise ShapeError(f"An item must be a dict, got {type(first).__name__}.")
    paths = list(flatten(first))
    out = Batch()
    if all(len(p) == 1 for p in paths):  # the common, flat case: no per-item flatten needed
        try:
            for (key,) in paths:
                out[key] = _stack_leaf((key,), [item[key] for item in items])
        except (KeyError, TypeError) as err:
            raise _structure_error(items, paths) from err
        if any(len(item) != len(paths) for item in items) or any(map(_holds_mappings, out.values())):
            raise _structure_error(items, paths)
        return out
    flats = [flatten(item) for item in items]
    for path in paths:
        try:
            values = [flat[path] for flat in flats]
        except KeyError as err:
            raise _structure_error(items, paths) from err
        _set(out, path, _stack_leaf(path, values))
    if any(len(flat) != len(paths) for flat in flats):
        raise _structure_error(items, paths)
    return out


def unstack_batch(batch: Mapping) -> list[dict]:
    """Split a ``Batch`` into a list of per-item dicts (rows are views of the batch's arrays)."""

    def rows(node: Mapping) -> list[dict]:
        columns = [rows(v) if isinstance(v, Mapping) else list(v) for v in node.values()]
        return row_builder(len(columns))(zip(*columns, strict=False), *node.keys())

    return rows(batch)


_BUILDERS: dict[int, Any] = {}


def row_builder(n_keys: int) -> Any:
    """``f(rows, *keys) -> [{keys[0]: row[0], ...} for row in rows]``, compiled for ``n_keys`` keys.

    A dict display in a comprehension builds each dict about twice as fast as ``dict(zip(...))``,
    which matters when a learner asks for a list of 256 dicts per step. The generated source is
    made from the key count only (the keys are passed as arguments), never from data.
    """
    builder = _BUILDERS.get(n_keys)
    if builder is None:
        keys = ", ".join(f"k{i}" for i in range(n_keys))
        values = "".join(f"v{i}, " for i in range(n_keys))
        display = ", ".join(f"k{i}: v{i}" for i in range(n_keys))
        source = f"lambda rows, {keys}: [{{{display}}} for ({values}) in rows]"
        builder = _BUILDERS[n_keys] = eval(source)  # noqa: S307 - source built from integers only
    return builder


def take_rows(batch: Mapping, idx: np.ndarray) -> Batch:
    """The rows ``idx`` of every column, as a new ``Batch``."""

    def take(node: Mapping) -> dict:
        return {k: take(v) if isinstance(v, Mapping) else np.take(v, idx, axis=0) for k, v in node.items()}

    return Batch(take(batch))


def _stack_leaf(path: Path, values: list) -> np.ndarray:
    """One column from the values of one field across items."""
    first = values[0]
    if hasattr(first, "detach") and hasattr(first, "numpy"):
        values = [to_numpy(v) for v in values]
        first = values[0]
    if isinstance(first, np.ndarray) and first.ndim > 0:
        try:
            return np.array(values)  # as np.stack for arrays of one shape, in a third of the time
        except ValueError as err:
            raise ShapeError(f"Field {_name(path)} has items of different shapes: {err}") from err
    try:
        column = np.asarray(values)
    except ValueError:  # ragged lists
        column = None
    if column is None or column.dtype.kind in "OUSV":
        column = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            column[i] = value
        return column
    if column.dtype == np.float64 and isinstance(first, float) and not isinstance(first, np.floating):
        column = column.astype(np.float32)  # python floats are stored as torch's default dtype
    return column


def _set(tree: dict, path: Path, value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _holds_mappings(column: np.ndarray) -> bool:
    """A dict among a flat column's values (an item nested where item 0 is not): only an object
    column can hold one, so numeric columns cost nothing to check."""
    return column.dtype == object and any(isinstance(v, Mapping) for v in column)


def _structure_error(items: Sequence[Mapping], paths: list[Path]) -> ShapeError:
    expected = sorted(_name(p) for p in paths)
    for i, item in enumerate(items):
        got = sorted(_name(p) for p in flatten(item)) if isinstance(item, Mapping) else None
        if got != expected:
            return ShapeError(
                f"Item {i} has fields {got}, but item 0 has {expected}; all items pushed together "
                "must have the same fields."
            )
    return ShapeError(f"Items do not share the fields {expected}.")


def _name(path: Path) -> str:
    return "'" + ".".join(str(k) for k in path) + "'"
