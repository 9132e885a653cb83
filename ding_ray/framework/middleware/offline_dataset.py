"""Offline RL data files and the torch datasets that read them back.

Two formats, chosen by ``data_type`` as in DI-engine:

- ``'naive'``: ding_ray's safe msgpack file (``ding_ray.data.file_format``: versioned header,
  sha256 checksum, only numbers, strings and numeric arrays inside). DI-engine's ``'naive'`` is a
  pickle file; ding_ray never writes or reads pickle, because loading one can run any code.
- ``'hdf5'``: one HDF5 dataset per field (``obs``, ``action``, ``reward``, ``next_obs``,
  ``done``, ... and ``group/field`` for nested dicts), through h5py, the optional ``hdf5``
  extra (``pip install "ding_ray[hdf5]"``). DI-engine's own HDF5 files (those five fields) load too.

Either way the transitions are stored column by column, as ``ding_ray.data.Batch`` holds them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from ding_ray.data.columnar import flatten, stack_items, unflatten
from ding_ray.data.file_format import load_state, save_state
from ding_ray.data.storage import column_state, columns_from_state
from ding_ray.errors import ConfigError, DataFormatError, ShapeError

DATA_TYPES = ("naive", "hdf5")
FILE_KIND = "OfflineDataset"  # the header's buffer_type of a 'naive' file


def import_h5py() -> Any:
    """h5py, or a ``ConfigError`` that says how to install it."""
    try:
        import h5py
    except ImportError as err:
        raise ConfigError(
            'HDF5 offline data needs h5py: pip install "ding_ray[hdf5]", or use data_type="naive" '
            "(ding_ray's msgpack file, no extra package)."
        ) from err
    return h5py


def check_data_type(data_type: str) -> None:
    if data_type not in DATA_TYPES:
        raise ConfigError(
            f"Offline data type {data_type!r} is unknown; choose 'naive' (ding_ray's msgpack file) or 'hdf5'."
        )


# ---------------------------------------------------------------------------- writing
def save_offline_data(transitions: list, path: str, data_type: str = "naive") -> None:
    """Write ``transitions`` (a list of transition dicts) to ``path`` in ``data_type``'s format."""
    check_data_type(data_type)
    if not transitions:
        raise ShapeError("There are no transitions to save: the list is empty.")
    columns = flatten(stack_items(list(transitions)))
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if data_type == "naive":
        _save_msgpack(columns, len(transitions), path)
    else:
        _save_hdf5(columns, path)


def _save_msgpack(columns: dict, rows: int, path: str) -> None:
    paths = list(columns)
    schema = [{"path": list(p), "dtype": c.dtype.str, "shape": list(c.shape[1:])} for p, c in columns.items()]
    state = {
        "rows": rows,
        "storage": {"schema": schema, "columns": column_state(paths, list(columns.values()), rows)},
    }
    save_state(path, state, FILE_KIND)


def _save_hdf5(columns: dict, path: str) -> None:
    h5py = import_h5py()
    for p, c in columns.items():
        if c.dtype == object:
            raise ShapeError(
                f"Field {'.'.join(map(str, p))!r} holds values of mixed or non-numeric types, which HDF5 "
                "cannot store; use data_type='naive' or give the field one numeric type."
            )
        if any("/" in str(k) for k in p):
            raise ShapeError(f"Field {'.'.join(map(str, p))!r}: a key with '/' cannot name an HDF5 dataset.")
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        for p, c in columns.items():
            f.create_dataset("/".join(map(str, p)), data=c, compression="gzip")
    os.replace(tmp, path)  # a reader never sees half a file


# ---------------------------------------------------------------------------- reading
def _data_path(cfg_or_path: Any) -> str:
    if isinstance(cfg_or_path, (str, os.PathLike)):
        return os.fspath(cfg_or_path)
    try:
        return cfg_or_path.policy.collect.data_path
    except AttributeError as err:
        raise ConfigError(
            "An offline dataset takes a file path or a config with policy.collect.data_path."
        ) from err


def _refuse_pickle(path: str) -> None:
    """A DI-engine 'naive' file (a pickle) gets an error that says how to convert it; ding_ray never
    unpickles, because loading a pickle can run any code."""
    with open(path, "rb") as f:
        head = f.read(2)
    if len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5:  # pickle protocols 2 to 5
        raise DataFormatError(
            f"{path} is a pickle file (DI-engine's 'naive' offline data), which ding_ray does not load: "
            "unpickling can run any code. If you trust it, convert it where DI-engine is installed: "
            "offline_data_save_type(pickle.load(open(path, 'rb')), path, data_type='hdf5') from "
            "ding.utils.data writes <path without .pkl>_demos.hdf5, which ding_ray reads with "
            "data_type='hdf5'. Or collect the data again with ding_ray's collect_demo_data."
        )


class NaiveRLDataset(Dataset):
    """The transitions of a ``'naive'`` offline data file (ding_ray's msgpack, not pickle).

    ``dataset[i]`` is the i-th transition as a dict of numpy values. Takes the file path or a
    config with ``policy.collect.data_path``, as DI-engine's class of the same name.
    """

    def __init__(self, cfg: Any) -> None:
        self._data_path = _data_path(cfg)
        _refuse_pickle(self._data_path)
        state = load_state(self._data_path, FILE_KIND)
        rows = state.get("rows")
        storage = state.get("storage")
        if not isinstance(rows, int) or rows < 0 or not isinstance(storage, Mapping):
            raise DataFormatError(f"{self._data_path}: not an offline data file (no row count or columns).")
        self._columns = columns_from_state(storage.get("columns"), rows)
        self._rows = rows

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, idx: int) -> dict:
        return _row(self._columns, idx, self._rows)

    @property
    def columns(self) -> dict:
        """The whole dataset as nested dicts of arrays (a ``Batch``'s layout)."""
        return unflatten(self._columns)


class HDF5Dataset(Dataset):
    """The transitions of an HDF5 offline data file, read into memory at once.

    Each dataset in the file (``obs``, ``group/field``, ...) is one field of the transitions;
    they must all have the same length. Needs h5py (``pip install "ding_ray[hdf5]"``).
    """

    def __init__(self, cfg: Any) -> None:
        h5py = import_h5py()
        self._data_path = _data_path(cfg)
        columns: dict = {}
        try:
            with h5py.File(self._data_path, "r") as f:
                f.visititems(
                    lambda name, node: (
                        columns.__setitem__(tuple(name.split("/")), node[()])
                        if isinstance(node, h5py.Dataset)
                        else None
                    )
                )
        except OSError as err:
            raise DataFormatError(f"{self._data_path}: not a readable HDF5 file: {err}") from err
        lengths = {len(c) for c in columns.values() if np.ndim(c) > 0}
        if not columns or len(lengths) != 1 or any(np.ndim(c) == 0 for c in columns.values()):
            raise DataFormatError(
                f"{self._data_path}: an offline data file needs datasets of one common length, one per field."
            )
        self._columns, self._rows = columns, lengths.pop()

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, idx: int) -> dict:
        return _row(self._columns, idx, self._rows)

    @property
    def columns(self) -> dict:
        return unflatten(self._columns)


def _row(columns: dict, idx: int, rows: int) -> dict:
    if not -rows <= idx < rows:
        raise IndexError(f"index {idx} is out of range for a dataset of {rows} transitions")
    return unflatten({path: column[idx] for path, column in columns.items()})


def load_offline_data(path: str, data_type: str = "naive") -> Dataset:
    """The dataset class for ``data_type`` over the file at ``path``."""
    check_data_type(data_type)
    return NaiveRLDataset(path) if data_type == "naive" else HDF5Dataset(path)
