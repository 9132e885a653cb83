"""Frame storage: each frame of stacked image observations held once, stacks rebuilt from frame ids.

A frame-stacked observation ``(stack, H, W)`` shares ``stack - 1`` frames with the observation
of the env's next step, and ``obs`` shares frames with ``next_obs``; stored as columns, a Pong
transition holds 8 frames of which 1 is new. ``FrameStore`` keeps a pool of frames; a row holds
``stack`` frame ids per field, and sampling rebuilds the stacks with one fancy index,
``frames[ids]`` (the layout of Dopamine's and DQN Zoo's circular replay, with explicit ids).

Frames are found again by content, not by env or step: ``put`` fingerprints every incoming
frame (a 64-bit linear hash, vectorized), looks the fingerprint up among the recently stored
frames, and checks the match byte for byte, so a stack is always rebuilt exactly as pushed,
whichever envs, episode boundaries (a stack never takes frames of another episode: its ids are
its own) or n-step targets it comes from. A frame is reference-counted by the rows that hold
it and its slot is reused once no row does, so a row's frames live exactly as long as the row.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

MIN_FRAME_BYTES = 1024  # smaller frames stay plain columns: ids would save little (84x84 uint8: 7056)
INDEX_WINDOW = 1 << 16  # the newest frames whose fingerprints are looked up (older ones: no reuse)
VERIFY_CHUNK = 1024  # frames compared at a time with the stored ones (bounds the temporaries)
BLOCK_FRAMES = 2048  # frame slots per block of an incremental save (84x84 frames: 14 MB a block)


def frame_field(shape: tuple, dtype: np.dtype) -> bool:
    """Whether a field of per-row ``shape`` and ``dtype`` is an image stack to store as frames:
    uint8 ``(stack, H, W)`` with frames of at least ``MIN_FRAME_BYTES``, or a sequence of them
    ``(T, stack, H, W)`` (an unroll of IMPALA's, R2D2's sequences): a row then holds ``T`` stacks."""
    return dtype == np.uint8 and len(shape) >= 3 and shape[-2] * shape[-1] >= MIN_FRAME_BYTES


def stacks_per_row(shape: tuple) -> int:
    """The frame stacks one row of a frame field of per-row ``shape`` holds (1, or ``T``)."""
    return math.prod(shape[:-3])


def initial_frames(capacity: int) -> int:
    """Frame slots for a ring of ``capacity`` rows: an episode of ``L`` steps holds ``L + 1``
    distinct frames (a stack shares the others with its neighbours), so one per row plus room
    for episode starts (lives of 16 steps on average) and envs interleaved far apart. Slots are
    used lowest first and numpy's zeros are paged in when written: unused room costs no memory."""
    return capacity + capacity // 16 + 64


def _blocks(slots: int) -> int:
    return -(-slots // BLOCK_FRAMES)


def store_nbytes(frame_shape: tuple, dtype: Any, slots: int) -> int:
    """Bytes of a ``FrameStore`` of ``slots`` frames: each frame, and per slot its reference count,
    fingerprint and free-list entry (8 bytes each)."""
    return slots * (math.prod(frame_shape) * np.dtype(dtype).itemsize + 3 * 8)


class FrameStore:
    """A pool of equal-shaped frames, each held once and shared by the rows that reference it.

    ``put`` returns one id array ``(n, stack)`` per field; ``release`` drops the references of
    overwritten rows; ``frames.take(ids, axis=0)`` rebuilds the stacks.
    """

    def __init__(self, frame_shape: tuple, dtype: Any, capacity: int) -> None:
        self.frame_shape, self.dtype = tuple(frame_shape), np.dtype(dtype)
        self.frames = np.zeros((capacity, *self.frame_shape), self.dtype)
        self.refs = np.zeros(capacity, np.int64)  # rows (times stack positions) holding each frame
        self.fps = np.zeros(capacity, np.uint64)  # fingerprint of the frame in each slot
        self._free = np.arange(capacity - 1, -1, -1, dtype=np.int64)  # a stack: slot 0 is used first
        self._n_free = capacity
        self._never_used = capacity  # free slots at the bottom of the stack never handed out (not paged in)
        self._index: dict[int, int] = {}  # fingerprint -> slot, for the newest INDEX_WINDOW frames
        self._recent: list = [None] * INDEX_WINDOW  # (fingerprint, slot) of the newest indexed frames
        self._recent_pos = 0
        nbytes = int(np.prod(self.frame_shape)) * self.dtype.itemsize
        self._word = next(np.dtype(f"u{w}") for w in (8, 4, 2, 1) if nbytes % w == 0)
        rng = np.random.default_rng(0x5EED)  # fixed: fingerprints must agree after a reload
        self._weights = rng.integers(1, 2**63, nbytes // self._word.itemsize, dtype=np.uint64)
        self._weights = (self._weights | 1).astype(self._word)
        self._grown = False
        self.key = uuid.uuid4().hex  # names this store to an archive of its blocks
        # per block of BLOCK_FRAMES slots: written since an archive last saved it (``take_written``)
        self.written = np.zeros(_blocks(capacity), bool)

    @property
    def capacity(self) -> int:
        return len(self.frames)

    @property
    def held(self) -> int:
        """Frames referenced by at least one row."""
        return self.capacity - self._n_free

    @property
    def nbytes(self) -> int:
        return self.frames.nbytes + self.refs.nbytes + self.fps.nbytes + self._free.nbytes

    @property
    def resident_nbytes(self) -> int:
        """``nbytes`` less the frame slots never written (numpy's zeros are paged in on write)."""
        return self.nbytes - self._never_used * self.frames[:1].nbytes

    # ------------------------------------------------------------------ writing
    def fingerprint(self, frames: np.ndarray) -> np.ndarray:
        """One uint64 per frame of ``frames`` (``(k, *frame_shape)``, C-contiguous)."""
        return (self._words(frames) @ self._weights).astype(np.uint64, copy=False)

    def _words(self, frames: np.ndarray) -> np.ndarray:
        """``frames`` (C-contiguous) as one row of machine words per frame."""
        return frames.reshape(len(frames), -1).view(np.uint8).view(self._word)

    def put(self, stacks: Sequence[np.ndarray], released: np.ndarray | None = None) -> list[np.ndarray]:
        """Frame ids ``(n, ..., stack)`` of each array in ``stacks`` (``(n, ..., stack, *frame_shape)``).

        Frames already held (by content) are shared, new ones stored. ``released``: frame ids
        of rows being overwritten by these; their references are dropped after the new rows'
        frames are matched, so a frame both rows hold is never freed and stored again.
        """
        # cast as a plain column's assignment would (an int64 or bool image into uint8 frames)
        flat = [np.ascontiguousarray(s, dtype=self.dtype).reshape(-1, *self.frame_shape) for s in stacks]
        fp = np.concatenate([self.fingerprint(f) for f in flat]) if flat else np.empty(0, np.uint64)
        uniq, first, inverse = np.unique(fp, return_index=True, return_inverse=True)
        cand = np.fromiter((self._index.get(k, -1) for k in uniq.tolist()), np.int64, len(uniq))
        safe = np.maximum(cand, 0)
        found = (cand >= 0) & (self.refs[safe] > 0) & (self.fps[safe] == uniq)
        slots = np.where(found, cand, -1)
        # Matched frames are referenced before any release, so releasing cannot free them.
        counts = np.bincount(inverse, minlength=len(uniq))
        self.refs[slots[found]] += counts[found]
        if released is not None and len(released):
            self.release(released)
        new = np.flatnonzero(~found)
        if len(new):
            new_slots = self._allocate(len(new))
            slots[new] = new_slots
            self._copy_in(flat, first[new], new_slots)
            self._mark_written(new_slots)
            self.fps[new_slots] = uniq[new]
            self.refs[new_slots] = counts[new]
            self._index_slots(uniq[new].tolist(), new_slots.tolist())
        ids = slots[inverse]
        self._verify(flat, ids, fp)
        out, lo = [], 0
        for s, frames in zip(stacks, flat, strict=True):
            out.append(ids[lo : lo + len(frames)].reshape(s.shape[: s.ndim - len(self.frame_shape)]))
            lo += len(frames)
        return out

    def take_written(self) -> np.ndarray:
        """The blocks written since the last call (for an incremental save); marks them saved."""
        blocks = np.flatnonzero(self.written)
        self.written[:] = False
        return blocks

    def block(self, index: int) -> np.ndarray:
        """The frames of block ``index`` (a view; the last block may be shorter)."""
        return self.frames[index * BLOCK_FRAMES : (index + 1) * BLOCK_FRAMES]

    def _mark_written(self, slots: np.ndarray) -> None:
        self.written[np.asarray(slots, np.int64) // BLOCK_FRAMES] = True

    def release(self, ids: np.ndarray) -> None:
        """Drop one reference per entry of ``ids``; frames no row holds any more are freed."""
        ids = ids.ravel()
        np.subtract.at(self.refs, ids, 1)
        freed = np.unique(ids[self.refs[ids] == 0])
        self._push_free(freed)

    def _copy_in(self, flat: list[np.ndarray], positions: np.ndarray, slots: np.ndarray) -> None:
        """Store the incoming frames at ``positions`` (over the fields in order) into ``slots``."""
        lo = 0
        for frames in flat:
            mine = (positions >= lo) & (positions < lo + len(frames))
            if mine.any():
                self.frames[slots[mine]] = frames[positions[mine] - lo]
            lo += len(frames)

    def _index_slots(self, keys: list[int], slots: list[int]) -> None:
        """Make frames findable by fingerprint; the oldest indexed frame leaves the window."""
        index, recent, pos = self._index, self._recent, self._recent_pos
        for key, slot in zip(keys, slots, strict=True):
            old = recent[pos]
            if old is not None and index.get(old[0]) == old[1]:
                del index[old[0]]
            index[key] = slot
            recent[pos] = (key, slot)
            pos = (pos + 1) % INDEX_WINDOW
        self._recent_pos = pos

    def _verify(self, flat: list[np.ndarray], ids: np.ndarray, fp: np.ndarray) -> None:
        """Compare every incoming frame with the stored frame its id names (word by word, in
        chunks); a fingerprint collision (different bytes) gets a slot of its own."""
        lo, scratch = 0, self._scratch(min(len(ids), VERIFY_CHUNK))
        for frames in flat:
            words = self._words(frames)
            for a in range(0, len(frames), VERIFY_CHUNK):
                b = min(a + VERIFY_CHUNK, len(frames))
                stored = self._words(
                    self.frames.take(ids[lo + a : lo + b], axis=0, out=scratch[: b - a], mode="clip")
                )
                same = (stored == words[a:b]).all(axis=1)
                if not same.all():
                    self._split_collisions(frames, ids, fp, lo + a + np.flatnonzero(~same), lo)
            lo += len(frames)

    def _scratch(self, k: int) -> np.ndarray:
        """A reused array of ``k`` frames (a fresh one per push would be paged in every time)."""
        if len(getattr(self, "_scratch_frames", ())) < k:
            self._scratch_frames = np.empty((k, *self.frame_shape), self.dtype)
        return self._scratch_frames

    def _split_collisions(
        self, frames: np.ndarray, ids: np.ndarray, fp: np.ndarray, positions: np.ndarray, lo: int
    ) -> None:
        wrong = ids[positions].copy()
        own = self._allocate(len(positions))
        self.frames[own] = frames[positions - lo]
        self._mark_written(own)
        self.fps[own] = fp[positions] ^ np.uint64(1)  # never found by this fingerprint again
        self.refs[own] = 1
        ids[positions] = own
        self.release(wrong)

    def _allocate(self, k: int) -> np.ndarray:
        if k > self._n_free:
            self._grow(k - self._n_free)
        self._n_free -= k
        self._never_used = min(self._never_used, self._n_free)
        return self._free[self._n_free : self._n_free + k][::-1].copy()

    def _push_free(self, slots: np.ndarray) -> None:
        self._free[self._n_free : self._n_free + len(slots)] = slots
        self._n_free += len(slots)

    def _grow(self, missing: int) -> None:
        old = self.capacity
        new = max(old + old // 4, old + missing)
        if not self._grown:
            logger.warning(
                "The buffer's rows hold more distinct frames than the %d frame slots reserved (about "
                "one per row): their stacks share fewer frames than frame-stacked envs' do (envs "
                "interleaved far apart, or observations that are not frame stacks); growing to %d.",
                old,
                new,
            )
            self._grown = True
        try:  # in place (realloc): no second copy of gigabytes of frames
            self.frames.resize((new, *self.frame_shape), refcheck=True)
        except ValueError:  # another reference to the array: copy
            frames = np.zeros((new, *self.frame_shape), self.dtype)
            frames[:old] = self.frames
            self.frames = frames
        self.refs = np.concatenate([self.refs, np.zeros(new - old, np.int64)])
        self.written = np.concatenate([self.written, np.zeros(_blocks(new) - len(self.written), bool)])
        self.fps = np.concatenate([self.fps, np.zeros(new - old, np.uint64)])
        free = np.empty(new, np.int64)
        free[: self._n_free] = self._free[: self._n_free]
        free[self._n_free : self._n_free + new - old] = np.arange(new - 1, old - 1, -1)
        self._free = free
        self._n_free += new - old

    # ------------------------------------------------------------------ persistence
    def compact(self, id_columns: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The frames ``id_columns`` reference, in one array, and the columns renumbered into it."""
        live = np.unique(np.concatenate([c.ravel() for c in id_columns])) if id_columns else np.empty(0, int)
        return self.frames[live], [np.searchsorted(live, c).astype(np.int64) for c in id_columns]

    @classmethod
    def from_compact(cls, frames: np.ndarray, id_columns: list[np.ndarray], capacity: int) -> FrameStore:
        """A store holding ``frames`` in slots ``0..len-1``, referenced by ``id_columns``."""
        return cls.rebuilt(frames.shape[1:], frames.dtype, len(frames), id_columns, capacity, frames)

    @classmethod
    def rebuilt(
        cls, frame_shape: tuple, dtype: Any, n: int, id_columns: list[np.ndarray], capacity: int, fill: Any
    ) -> FrameStore:
        """A store whose slots ``0..n-1`` hold ``fill`` (an array, or a function that writes them
        into the view it is given: no second copy of gigabytes), referenced by ``id_columns``."""
        store = cls(frame_shape, dtype, max(capacity, n))
        if callable(fill):
            fill(store.frames[:n])
        else:
            store.frames[:n] = fill
        store._mark_written(np.arange(n))
        for column in id_columns:
            store.refs[:n] += np.bincount(column.ravel(), minlength=n)[:n]
        store.fps[:n] = store.fingerprint(store.frames[:n]) if n else store.fps[:0]
        store._n_free = 0
        store._push_free(np.arange(store.capacity - 1, n - 1, -1))
        store._never_used = store.capacity - n
        store._push_free(np.flatnonzero(store.refs[:n] == 0)[::-1])  # frames no row holds
        held = np.flatnonzero(store.refs[:n] > 0)[-INDEX_WINDOW:]
        store._index_slots(store.fps[held].tolist(), held.tolist())
        return store
