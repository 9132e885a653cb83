"""DI-engine's ``ding.torch_utils`` data conversions: walk nested dicts, lists, tuples and named
tuples and convert the leaves (tensor, ndarray, python or numpy scalar) on the way.

Each function keeps DI-engine 0.5.3's quirks, since user code written against it relies on them:
``to_device`` and ``to_dtype`` turn every tuple (named ones too) into a list, ``to_tensor`` turns a
float64 array into float32 but shares the memory of any other array, ``to_ndarray`` of an empty list
is None, and a list whose first element is a number becomes one tensor or array. The ``ignore_keys=[]``
defaults are DI-engine's signature; nothing here changes them.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def _is_named_tuple(item: Any) -> bool:
    return isinstance(item, tuple) and hasattr(item, "_fields")


def _starts_with_number(item: list | tuple) -> bool:
    """A list or tuple whose first element is a number (bools count) converts as one array."""
    return isinstance(item[0], (numbers.Integral, numbers.Real))


def _unsupported(item: Any, function: str, supported: str) -> TypeError:
    return TypeError(
        f"{function} cannot convert a {type(item).__name__}; it takes {supported}, "
        "nested in dicts, lists and tuples."
    )


def to_device(item: Any, device: str | torch.device, ignore_keys: list = []) -> Any:  # noqa: B006
    """Move every tensor and module in ``item`` to ``device``.

    Numbers, arrays, strings, None and distributions stay as they are. ``ignore_keys`` names keys of
    the top-level dict whose values are left where they are; tuples come back as lists.
    """
    if isinstance(item, (torch.nn.Module, torch.Tensor)):
        return item.to(device)
    if isinstance(item, str):
        return item
    if isinstance(item, Sequence):
        return [to_device(value, device) for value in item]
    if isinstance(item, dict):
        return {k: v if k in ignore_keys else to_device(v, device) for k, v in item.items()}
    if item is None or isinstance(
        item, (numbers.Integral, numbers.Real, np.ndarray, np.bool_, torch.distributions.Distribution)
    ):
        return item
    raise _unsupported(item, "to_device", "tensors, modules, arrays, numbers, strings and None")


def to_dtype(item: Any, dtype: torch.dtype) -> Any:
    """Cast every tensor in ``item`` (nested in dicts, lists and tuples) to ``dtype``; tuples become lists."""
    if isinstance(item, torch.Tensor):
        return item.to(dtype=dtype)
    if isinstance(item, dict):
        return {k: to_dtype(v, dtype) for k, v in item.items()}
    if isinstance(item, Sequence) and not isinstance(item, str):
        return [to_dtype(value, dtype) for value in item]
    raise _unsupported(item, "to_dtype", "tensors")


def to_tensor(
    item: Any,
    dtype: torch.dtype | None = None,
    ignore_keys: list = [],  # noqa: B006
    transform_scalar: bool = True,
) -> Any:
    """Convert arrays and scalars in ``item`` to tensors, of ``dtype`` if given.

    A float64 array becomes a float32 copy when ``dtype`` is None; other arrays share their memory.
    A list or tuple starting with a number becomes one tensor, a named tuple stays one, other lists
    and tuples become lists. Bools and strings stay as they are; so do other scalars when
    ``transform_scalar`` is False. ``ignore_keys``: dict keys, at any depth, whose values stay as they are.
    """
    if isinstance(item, dict):
        return {
            k: v if k in ignore_keys else to_tensor(v, dtype, ignore_keys, transform_scalar)
            for k, v in item.items()
        }
    if isinstance(item, (list, tuple)):
        if len(item) == 0:
            return []
        if _starts_with_number(item):
            return torch.as_tensor(item) if dtype is None else torch.tensor(item, dtype=dtype)
        if _is_named_tuple(item):
            return type(item)(*[to_tensor(value, dtype) for value in item])
        return [to_tensor(value, dtype, ignore_keys, transform_scalar) for value in item]
    if isinstance(item, np.ndarray):
        if dtype is not None:
            return torch.from_numpy(item).to(dtype)
        return torch.FloatTensor(item) if item.dtype == np.float64 else torch.from_numpy(item)
    if isinstance(item, (bool, str)):
        return item
    if np.isscalar(item):
        if not transform_scalar:
            return item
        scalar = torch.as_tensor(item)
        return scalar if dtype is None else scalar.to(dtype)
    if item is None:
        return None
    if isinstance(item, torch.Tensor):
        return item if dtype is None else item.to(dtype)
    raise _unsupported(item, "to_tensor", "arrays, tensors, scalars, strings and None")


def to_ndarray(item: Any, dtype: np.dtype | type | None = None) -> Any:
    """Convert tensors and scalars in ``item`` to numpy arrays, of ``dtype`` if given.

    An empty list or tuple becomes None; one starting with a number becomes one array; a named tuple
    stays one; bools and strings stay as they are. A tensor must be on the CPU and need no gradient.
    """
    if isinstance(item, dict):
        return {k: to_ndarray(v, dtype) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        if len(item) == 0:
            return None
        if _starts_with_number(item):
            return np.array(item) if dtype is None else np.array(item, dtype=dtype)
        if _is_named_tuple(item):
            return type(item)(*[to_ndarray(value, dtype) for value in item])
        return [to_ndarray(value, dtype) for value in item]
    if isinstance(item, torch.Tensor):
        array = item.numpy()
        return array if dtype is None else array.astype(dtype)
    if isinstance(item, np.ndarray):
        return item if dtype is None else item.astype(dtype)
    if isinstance(item, (bool, str)):
        return item
    if np.isscalar(item):
        return np.array(item) if dtype is None else np.array(item, dtype=dtype)
    if item is None:
        return None
    raise _unsupported(item, "to_ndarray", "tensors, arrays, scalars, strings and None")


def _nested_lists(item: Any, function: str, leaves: tuple[type, ...]) -> Any:
    """``item`` with each leaf of a type in ``leaves`` turned into (nested) python lists."""
    if item is None or np.isscalar(item):
        return item
    if isinstance(item, leaves):
        return item.tolist()
    if isinstance(item, (list, tuple)):
        return [_nested_lists(value, function, leaves) for value in item]
    if isinstance(item, dict):
        return {k: _nested_lists(v, function, leaves) for k, v in item.items()}
    kinds = " and ".join(t.__name__ for t in leaves)
    raise _unsupported(item, function, f"{kinds}s, scalars and None")


def to_list(item: Any) -> Any:
    """Turn tensors and arrays in ``item`` into python lists (tuples into lists too), dtypes kept."""
    return _nested_lists(item, "to_list", (torch.Tensor, np.ndarray))


def tensor_to_list(item: Any) -> Any:
    """Turn tensors in ``item`` into python lists (tuples into lists too); an array is refused."""
    return _nested_lists(item, "tensor_to_list", (torch.Tensor,))


def to_item(data: Any, ignore_error: bool = True) -> Any:
    """Turn one-element tensors and arrays in ``data`` into python scalars.

    With ``ignore_error`` a dict value that holds more than one element is dropped from the result
    instead of raising; lists and tuples (which become lists) never drop anything.
    """
    if data is None or isinstance(data, (bool, str)) or np.isscalar(data):
        return data
    if isinstance(data, (np.ndarray, torch.Tensor)):
        return data.item()
    if isinstance(data, (list, tuple)):
        return [to_item(value) for value in data]
    if isinstance(data, dict):
        items = {}
        for k, v in data.items():
            try:
                items[k] = to_item(v)
            except (ValueError, RuntimeError):  # what .item() raises for several elements
                if not ignore_error:
                    raise
        return items
    raise _unsupported(data, "to_item", "one-element tensors and arrays, scalars, strings and None")


def same_shape(data: list) -> bool:
    """Whether every tensor or array in the list ``data`` has the same shape (False for an empty list)."""
    if not isinstance(data, list):
        raise TypeError(f"same_shape takes a list of tensors or arrays, not a {type(data).__name__}.")
    return len({tuple(value.shape) for value in data}) == 1
