"""The on-disk buffer format: msgpack, a header, a checksum, and nothing that executes on load.

A file is one msgpack map::

    {"header":   {"format": "ding_ray.replay_buffer", "version": 1 or 2, "buffer_type": ...,
                  "schema": [{"path": [...], "dtype": "<f4", "shape": [4]}, ...]},
     "payload":  <bytes: the msgpack-encoded state dict>,
     "checksum": {"algorithm": "sha256", "digest": <sha256 of packed header + payload>}}

Version 3 is written when the frame stores are kept beside the file (``data.frame_archive``: a
run checkpoint's frame blocks; the entry holds the archive's manifest instead of the frames).
Version 2 is written when the storage keeps image stacks as frames (``storage.frame_stores``:
each frame once, the frame fields' columns hold frame ids; the header then also lists the
frame stores, ``{"fields": [...], "frames": count, "frame_shape": [...]}``) or holds uint8
arrays of ``COMPRESS_MIN_BYTES`` or more, which are stored zlib-compressed in chunks (Atari
frames shrink about 60x). Every other buffer is still written as version 1; both are read.

Numpy arrays inside the payload are msgpack extension values holding dtype, shape and raw
bytes; only plain numeric and boolean dtypes are accepted when reading, so loading never
creates Python objects other than numbers, strings, bytes, lists, dicts and numeric arrays.
Files are written to a temporary file in the same folder and renamed over the target, so a
crash never leaves a half-written file under the final name.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgpack
import numpy as np

from ding_ray.errors import DataFormatError

FORMAT_NAME = "ding_ray.replay_buffer"
FORMAT_VERSION = 3  # the newest version written and read
FRAMES_VERSION = 2  # the first version with frame stores and compressed arrays
ARCHIVED_VERSION = 3  # frame stores kept beside the file, in a run checkpoint's frame blocks
READABLE_VERSIONS = (1, 2, 3)
_EXT_ARRAY = 1
_EXT_SCALAR = 2
_EXT_ZARRAY = 3  # version 2: [dtype, shape, [zlib chunk, ...]]
COMPRESS_MIN_BYTES = 1 << 20  # uint8 arrays (frames, images) this large are compressed
_ZCHUNK = 1 << 23  # bytes per compressed chunk: chunks are (de)compressed in parallel threads
_ZLEVEL = 1  # Atari frames shrink about 60x at level 1, at hundreds of MB/s per core
_NUMERIC_KINDS = "biufc"  # bool, signed, unsigned, float, complex


# ---------------------------------------------------------------------- encoding
def _encode(obj: Any) -> Any:
    """msgpack ``default`` hook for the numpy values a state dict holds."""
    if isinstance(obj, np.ndarray):
        if obj.dtype == np.uint8 and obj.nbytes >= COMPRESS_MIN_BYTES:
            return msgpack.ExtType(_EXT_ZARRAY, _pack_compressed(obj))
        return msgpack.ExtType(_EXT_ARRAY, _pack_array(obj))
    if isinstance(obj, np.generic):
        return msgpack.ExtType(_EXT_SCALAR, _pack_array(np.asarray(obj)))
    raise TypeError(f"a value of type {type(obj).__name__} cannot be stored in a buffer file")


def _pack_array(arr: np.ndarray) -> bytes:
    if arr.dtype.kind not in _NUMERIC_KINDS or arr.dtype.fields is not None:
        raise TypeError(f"arrays of dtype {arr.dtype} cannot be stored in a buffer file")
    arr = np.ascontiguousarray(arr)
    # The array's own buffer, not tobytes(): a frame store is hundreds of MB, one copy fewer.
    raw = memoryview(arr.reshape(-1).view(np.uint8))
    return msgpack.packb([arr.dtype.str, list(arr.shape), raw], use_bin_type=True)


def _pack_compressed(arr: np.ndarray) -> bytes:
    raw = memoryview(np.ascontiguousarray(arr).reshape(-1))
    chunks = [raw[i : i + _ZCHUNK] for i in range(0, len(raw), _ZCHUNK)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # zlib releases the GIL
        parts = list(pool.map(lambda chunk: zlib.compress(chunk, _ZLEVEL), chunks))
    return msgpack.packb([arr.dtype.str, list(arr.shape), parts], use_bin_type=True)


def encode_state(state: Mapping, buffer_type: str) -> bytes:
    """The bytes of a buffer file holding ``state``."""
    compressed = []

    def default(obj: Any) -> Any:
        ext = _encode(obj)
        compressed.append(ext.code == _EXT_ZARRAY)
        return ext

    try:
        payload = msgpack.packb(state, default=default, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as err:
        raise DataFormatError(f"The buffer state cannot be written: {err}.") from err
    frames = _frames_of(state)
    header = {
        "format": FORMAT_NAME,
        # the oldest version that holds the state: older readers still read what they can
        "version": (
            ARCHIVED_VERSION
            if any(f.get("archived") for f in frames)
            else FRAMES_VERSION
            if frames or any(compressed)
            else 1
        ),
        "buffer_type": buffer_type,
        "schema": _schema_of(state),
    }
    if frames:
        header["frame_stores"] = frames
    digest = _digest(header, payload)
    return msgpack.packb(
        {"header": header, "payload": payload, "checksum": {"algorithm": "sha256", "digest": digest}},
        use_bin_type=True,
    )


def _digest(header: Mapping, payload: bytes) -> bytes:
    """sha256 of the packed header followed by the payload (hashed in place, not concatenated)."""
    sha = hashlib.sha256(msgpack.packb(header, use_bin_type=True))
    sha.update(payload)
    return sha.digest()


def _schema_of(state: Mapping) -> list:
    storage = state.get("storage")
    return list(storage.get("schema", [])) if isinstance(storage, Mapping) else []


def _frames_of(state: Mapping) -> list:
    """The header's summary of the storage's frame stores (empty without any)."""
    storage = state.get("storage")
    stores = storage.get("frame_stores") if isinstance(storage, Mapping) else None
    if not isinstance(stores, list):
        return []
    summary = []
    for store in stores:
        if not isinstance(store, Mapping):
            summary.append({"fields": None, "frames": 0, "frame_shape": []})
        elif isinstance(store.get("archived"), Mapping):  # counted in the archive's manifest
            slots = store["archived"].get("slots")
            summary.append({"fields": store.get("fields"), "archived": True, "frames": slots})
        else:
            frames = store.get("frames")
            shape = list(frames.shape) if isinstance(frames, np.ndarray) else [0]
            summary.append({"fields": store.get("fields"), "frames": shape[0], "frame_shape": shape[1:]})
    return summary


# ---------------------------------------------------------------------- decoding
def _decode(code: int, data: bytes) -> Any:
    """msgpack ``ext_hook``: rebuild numeric arrays, refuse anything else."""
    if code not in (_EXT_ARRAY, _EXT_SCALAR, _EXT_ZARRAY):
        raise DataFormatError(f"unknown extension type {code}")
    parts = msgpack.unpackb(data, raw=False)
    if not (isinstance(parts, list) and len(parts) == 3 and isinstance(parts[0], str)):
        raise DataFormatError("malformed array record")
    if code == _EXT_ZARRAY:
        if parts[0] != np.dtype(np.uint8).str:
            raise DataFormatError(f"compressed arrays are uint8, got dtype {parts[0]!r}")
        return _decompress(parts[1], parts[2]).reshape(parts[1])
    dtype_str, shape, raw = parts
    try:
        dtype = np.dtype(dtype_str)
    except TypeError as err:
        raise DataFormatError(f"unknown dtype {dtype_str!r}") from err
    if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise DataFormatError(f"dtype {dtype_str!r} is not a plain numeric dtype")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise DataFormatError(f"bad array shape {shape!r}")
    if not isinstance(raw, bytes) or len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise DataFormatError("array data does not match its dtype and shape")
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return arr[()] if code == _EXT_SCALAR else arr


def _decompress(shape: Any, chunks: Any) -> np.ndarray:
    """The bytes of a compressed array, flat; never inflates past the size its shape declares."""
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise DataFormatError(f"bad array shape {shape!r}")
    if not (isinstance(chunks, list) and all(isinstance(c, bytes) for c in chunks)):
        raise DataFormatError("malformed compressed array")
    size = int(np.prod(shape, dtype=np.int64))  # only uint8 arrays are compressed: 1 byte each
    if len(chunks) != -(-size // _ZCHUNK):
        raise DataFormatError("compressed array has the wrong number of chunks")

    array = np.empty(size, np.uint8)

    def inflate(i: int) -> None:
        want = min(_ZCHUNK, size - i * _ZCHUNK)
        unzip = zlib.decompressobj()
        try:
            out = unzip.decompress(chunks[i], want)
        except zlib.error as err:
            raise DataFormatError(f"compressed array chunk {i} is corrupt: {err}") from err
        if len(out) != want or not unzip.eof or unzip.unconsumed_tail:
            raise DataFormatError(f"compressed array chunk {i} does not hold {want} bytes")
        array[i * _ZCHUNK : i * _ZCHUNK + want] = np.frombuffer(out, np.uint8)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(inflate, range(len(chunks))))  # list(): re-raises a chunk's error
    return array


def decode_state(blob: bytes, expected_type: str | None = None) -> dict:
    """The state dict held by the bytes of a buffer file; raises ``DataFormatError`` on any defect."""
    try:
        outer = msgpack.unpackb(blob, raw=False)
    except Exception as err:  # msgpack raises several unrelated types for bad input
        raise DataFormatError(
            f"Not a readable ding_ray buffer file (truncated or not msgpack): {err!r}. "
            "Only files written by save_data() can be loaded."
        ) from err
    if not (isinstance(outer, dict) and isinstance(outer.get("header"), dict)):
        raise DataFormatError(
            "Not a ding_ray buffer file: no header. Only files written by save_data() can be loaded."
        )
    header = outer["header"]
    if header.get("format") != FORMAT_NAME:
        raise DataFormatError(
            f"Not a ding_ray buffer file: format is {header.get('format')!r}, not {FORMAT_NAME!r}."
        )
    if header.get("version") not in READABLE_VERSIONS:
        raise DataFormatError(
            f"Buffer file format version {header.get('version')!r} is not supported; this ding_ray reads "
            f"versions {list(READABLE_VERSIONS)}. Load it with the ding_ray version that wrote it."
        )
    if expected_type is not None and header.get("buffer_type") != expected_type:
        raise DataFormatError(
            f"The file holds a {header.get('buffer_type')!r}; it cannot be loaded into a {expected_type}."
        )
    payload, checksum = outer.get("payload"), outer.get("checksum")
    if not (
        isinstance(payload, bytes) and isinstance(checksum, dict) and checksum.get("algorithm") == "sha256"
    ):
        raise DataFormatError("Buffer file is missing its payload or its sha256 checksum.")
    digest = _digest(header, payload)
    if checksum.get("digest") != digest:
        raise DataFormatError("Buffer file checksum mismatch: the file is corrupted or was modified.")
    try:
        state = msgpack.unpackb(payload, raw=False, ext_hook=_decode, strict_map_key=False)
    except DataFormatError as err:
        raise DataFormatError(f"Buffer file payload is invalid: {err}") from err
    except Exception as err:
        raise DataFormatError(f"Buffer file payload cannot be decoded: {err!r}") from err
    if not isinstance(state, dict):
        raise DataFormatError("Buffer file payload is not a state dict.")
    if _schema_of(state) != header.get("schema"):
        raise DataFormatError("Buffer file header schema does not match the stored columns.")
    frames = _frames_of(state)
    if frames != header.get("frame_stores", []) or (header["version"] < FRAMES_VERSION and frames):
        raise DataFormatError("Buffer file header frame stores do not match the stored frames.")
    if (header["version"] == ARCHIVED_VERSION) != any(f.get("archived") for f in frames):
        raise DataFormatError("Buffer file version does not match where its frames are kept.")
    return state


# ---------------------------------------------------------------------- files
def save_state(file_name: str, state: Mapping, buffer_type: str) -> None:
    """Write ``state`` to ``file_name`` atomically (temporary file in the same folder, then rename)."""
    blob = encode_state(state, buffer_type)
    folder = os.path.dirname(os.path.abspath(file_name))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(file_name)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, file_name)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_state(file_name: str, expected_type: str | None = None) -> dict:
    """Read and verify a buffer file; see ``decode_state``. The error names the file and what to do."""
    with open(file_name, "rb") as f:
        blob = f.read()
    try:
        return decode_state(blob, expected_type)
    except DataFormatError as err:
        raise file_error(file_name, err) from err


def file_error(file_name: str, err: DataFormatError) -> DataFormatError:
    """``err`` (a defect found in a buffer file's contents) as an error naming the file and what to do."""
    return DataFormatError(
        f"File '{file_name}' cannot be loaded: {err} Nothing was loaded from it; use an intact copy "
        "(an earlier snapshot, or write the data again), or go on without it (an empty buffer)."
    )
