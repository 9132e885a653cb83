"""How long the last run checkpoint of a pixel replay buffer takes to write: the whole buffer in
one file (``buffer_bytes`` without frame blocks, the reference) against the incremental save
(``FrameBlocks``: after a flush, only the frames pushed since, plus the rows' columns).

``ray job stop`` sends SIGKILL 3 s after SIGTERM: what the run saves on its way out must fit.
The buffer holds ``--rows`` Atari-like transitions (frame stacks (4, 84, 84) uint8 with moving
sprites, one new frame a step); ``--since-flush`` rows arrive after the last flush (the buffer
actor flushes every ``checkpoint.frames_flush_s``; 20,000 rows is 10 s at 2,000 env steps/s).

Run:  python benchmarks/bench_final_save.py [--rows 1000000] [--since-flush 20000]
Prints one ``bench_final_save name=value ...`` line per figure and writes them to
``benchmarks/results/final_save.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from easydict import EasyDict
from numpy.lib.stride_tricks import sliding_window_view
from results_io import write_result

from ding_ray.data import Batch
from ding_ray.data.advanced import AdvancedReplayBuffer
from ding_ray.utils.checkpoint import BUFFER_FILE, CheckpointStore, FrameBlocks, buffer_bytes

CHUNK = 1000


def push(buffer: AdvancedReplayBuffer, start: int, n: int) -> None:
    """``n`` transitions whose frames differ as a game's do: a fixed background, six sprites that
    move, and the step's number in the first row (every frame its own)."""
    background = np.random.default_rng(0).integers(0, 40, (84, 84), dtype=np.uint8)
    for lo in range(start, start + n, CHUNK):
        k = np.arange(lo, lo + CHUNK + 4)
        frames = np.repeat(background[None], len(k), axis=0)
        for j in range(6):
            rows, cols = (k * (j + 1)) % 76, (k * (2 * j + 3)) % 76
            for i in range(len(k)):
                frames[i, rows[i] : rows[i] + 8, cols[i] : cols[i] + 8] = 200 + j
        frames[:, 0, :8] = k.astype("<u8").view(np.uint8).reshape(-1, 8)
        stacks = sliding_window_view(frames, 4, axis=0).transpose(0, 3, 1, 2)
        batch = dict(
            obs=stacks[:CHUNK], next_obs=stacks[1 : CHUNK + 1], action=k[:CHUNK] % 6,
            reward=np.zeros(CHUNK, np.float32), done=np.zeros(CHUNK, bool),
        )  # fmt: skip
        buffer.push(Batch(batch), 0)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--since-flush", type=int, default=20_000)
    args = parser.parse_args()
    buffer = AdvancedReplayBuffer(EasyDict(replay_buffer_size=args.rows))
    fill_s = timed(lambda: push(buffer, 0, args.rows - args.since_flush))
    with tempfile.TemporaryDirectory(prefix="bench_final_save_") as root:
        store = CheckpointStore(root)
        frames = FrameBlocks(store)
        first_s = timed(lambda: frames.flush(buffer))  # the flushes so far, at once
        push(buffer, args.rows - args.since_flush, args.since_flush)
        folder = store.folder(1)

        def incremental() -> None:
            files = {BUFFER_FILE: store.write(folder, BUFFER_FILE, buffer_bytes(buffer, frames))}
            store.commit(folder, files, {"train_iter": 1, "frame_blocks": frames.referenced()})

        incremental_s = timed(incremental)
        whole_folder = store.folder(2)
        whole_s = timed(lambda: store.write(whole_folder, BUFFER_FILE, buffer_bytes(buffer)))
    figures = dict(
        rows=buffer.count(),
        since_flush=args.since_flush,
        fill_s=round(fill_s, 1),
        all_blocks_s=round(first_s, 2),
        whole_file_s=round(whole_s, 2),
        incremental_s=round(incremental_s, 2),
    )
    ratio = {"whole_file_s/incremental_s": round(whole_s / incremental_s, 1)}
    print("bench_final_save " + " ".join(f"{k}={v}" for k, v in {**figures, **ratio}.items()), flush=True)
    reference = (
        "whole_file_s, measured in the same run: the same buffer written as one self-contained file "
        "(no frame blocks)"
    )
    write_result("final_save", figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
