"""Replay storage of Atari transitions: frames held once (ding_ray's default) vs naive columns.

Run:  python benchmarks/bench_frame_storage.py  [--transitions 100000] [--extra 20000] [--naive 20000]
                                                [--envs 8]

Real Pong frames: ale-py's ``AtariVectorEnv('pong')`` (84x84 grayscale, frame stack 4, frame skip
4, random actions) steps ``--envs`` envs; every step's transitions (``obs`` and ``next_obs``
uint8 ``(4, 84, 84)``, action, reward, done) are pushed, 256 rows a push as a collector's
batch arrives, into

- the prioritized buffer (``AdvancedReplayBuffer``, Ape-X's) with ``--transitions`` rows and
  frame storage (the default, ``frame_dedup=True``), filled, then ``--extra`` rows more pushed
  (overwriting the oldest: push rates are given for both phases), and
- the same buffer with ``frame_dedup=False`` (one column per field, each stack stored whole),
  ``--naive`` rows, given the same pushes (its bytes per row do not depend on the capacity;
  100k rows would take 5.6 GB).

Figures, both layouts in the same run: bytes per stored transition (every array the buffer
holds: storage and priority bookkeeping, and the storage alone; the process's resident memory
too), what 1M transitions take, push and sample throughput (uniform and prioritized draws of
32, the learner's batch, and 512, an Ape-X learner's multi-batch; per wall second and per CPU
second of the calling thread, the steadier figure on a shared machine), and a snapshot of the full
frame-storage buffer: file size, seconds to save and to load.

Output: ``bench_frame_storage <figure>=<value> ...`` lines, then one JSON line with everything, also
written to ``benchmarks/results/frame_storage.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

import numpy as np
from results_io import write_result

from ding_ray.data import AdvancedReplayBuffer, Batch, NaiveReplayBuffer

PUSH_ROWS = 256


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def buffer_bytes(buffer) -> tuple[int, int]:
    """(bytes of every array the buffer holds, bytes of its storage alone)."""
    storage = buffer._storage.nbytes
    extra = 0
    for name in ("_priority",):  # the prioritized buffer's row records (one array, four fields)
        arr = getattr(buffer, name, None)
        if arr is not None:
            extra += arr.base.nbytes if arr.base is not None else arr.nbytes
    tree = getattr(buffer, "_sum_tree", None)
    if tree is not None:
        extra += sum(v.nbytes for v in vars(tree).values() if isinstance(v, np.ndarray))
    return storage + extra, storage


def pong_batches(n_rows: int, n_envs: int, seed: int = 0):
    """Batches of ``PUSH_ROWS`` real Pong transitions, ``n_rows`` in all."""
    from ale_py.vector_env import AtariVectorEnv

    env = AtariVectorEnv("pong", num_envs=n_envs)
    rng = np.random.default_rng(seed)
    try:
        obs, _ = env.reset(seed=seed)
        parts, held, sent = [], 0, 0
        while sent < n_rows:
            action = rng.integers(0, env.single_action_space.n, n_envs)
            next_obs, reward, term, trunc, _ = env.step(action)
            # AtariVectorEnv resets a finished env on its next step: that step's obs is the reset
            # frame, not a successor, and is not a transition (next-step autoreset).
            parts.append(dict(obs=obs, next_obs=next_obs, action=action, reward=reward, done=term))
            held += n_envs
            obs = next_obs
            if held >= PUSH_ROWS or sent + held >= n_rows:
                batch = Batch({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
                batch["reward"] = batch["reward"].astype(np.float32)
                take = min(len(batch["obs"]), n_rows - sent)
                yield Batch({k: v[:take] for k, v in batch.items()})
                sent += take
                parts, held = [], 0
    finally:
        env.close()


def timed_push(buffer, batch) -> np.ndarray:
    """(wall, CPU) seconds of one push; CPU time is this thread's (robust on a shared machine)."""
    start = np.array([time.perf_counter(), time.thread_time()])
    buffer.push(batch)
    return np.array([time.perf_counter(), time.thread_time()]) - start


def sample_rates(buffer, sizes=(32, 512), seconds=1.0) -> dict[str, float]:
    """Transitions sampled per wall second and per CPU second, per batch size."""
    out = {}
    for size in sizes:
        n, start, cpu = 0, time.perf_counter(), time.thread_time()
        while time.perf_counter() - start < seconds:
            batch = buffer.sample(size, columnar=True)
            n += len(batch["obs"])
        out[f"sample{size}_transitions_per_s"] = n / (time.perf_counter() - start)
        out[f"sample{size}_transitions_per_cpu_s"] = n / (time.thread_time() - cpu)
    return out


def uniform_view(buffer: AdvancedReplayBuffer) -> NaiveReplayBuffer:
    """A uniform buffer over the same storage (to time uniform draws without a second copy)."""
    view = NaiveReplayBuffer(dict(replay_buffer_size=buffer.replay_buffer_size))
    view._storage = buffer._storage
    return view


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=100_000, help="rows of the frame-storage buffer")
    parser.add_argument("--extra", type=int, default=20_000, help="rows pushed once it is full")
    parser.add_argument("--naive", type=int, default=20_000, help="rows of the naive-column buffer")
    parser.add_argument("--envs", type=int, default=8)
    args = parser.parse_args()

    rss0 = rss_bytes()
    dedup = AdvancedReplayBuffer(dict(replay_buffer_size=args.transitions))
    naive = AdvancedReplayBuffer(dict(replay_buffer_size=args.naive, frame_dedup=False))
    buffers = {"dedup": dedup, "naive": naive}
    for b in buffers.values():
        b.seed(0)
    # (wall, CPU) seconds and rows pushed, while the buffer fills and once it is full (overwriting)
    push_s = {(name, phase): np.zeros(2) for name in buffers for phase in ("fill", "full")}
    rows = {key: 0 for key in push_s}
    env_start, rss_full = time.perf_counter(), None
    for batch in pong_batches(args.transitions + args.extra, args.envs):
        for name, buffer in buffers.items():
            phase = "full" if buffer._storage.filled == buffer.replay_buffer_size else "fill"
            push_s[name, phase] += timed_push(buffer, batch)
            rows[name, phase] += len(batch["obs"])
        if rss_full is None and dedup._storage.filled == dedup.replay_buffer_size:
            rss_full = rss_bytes()
    env_seconds = time.perf_counter() - env_start - sum(v[0] for v in push_s.values())

    figures: dict[str, float] = {
        "pong_env_steps": sum(rows[("dedup", p)] for p in ("fill", "full")),
        "env_steps_per_s_while_recording": sum(rows[("dedup", p)] for p in ("fill", "full")) / env_seconds,
    }
    for name, buffer in buffers.items():
        total, storage = buffer_bytes(buffer)
        capacity = buffer.replay_buffer_size
        figures[f"{name}_rows"] = capacity
        figures[f"{name}_bytes_per_transition"] = total / capacity
        figures[f"{name}_storage_bytes_per_transition"] = storage / capacity
        # less the reserved frame slots never written (numpy's zeros are paged in on write)
        resident = total - buffer._storage.nbytes + buffer._storage.resident_nbytes
        figures[f"{name}_resident_bytes_per_transition"] = resident / capacity
        figures[f"{name}_GB_per_1M_transitions"] = total / capacity * 1e6 / 1e9
        for phase in ("fill", "full"):
            wall, cpu = push_s[name, phase]
            if rows[name, phase]:
                figures[f"{name}_push_{phase}_transitions_per_s"] = rows[name, phase] / wall
                figures[f"{name}_push_{phase}_transitions_per_cpu_s"] = rows[name, phase] / cpu
        for key, value in sample_rates(buffer).items():
            figures[f"{name}_prioritized_{key}"] = value
        for key, value in sample_rates(uniform_view(buffer)).items():
            figures[f"{name}_uniform_{key}"] = value
    (store,) = dedup._storage.frame_stores
    figures["dedup_frames_held_per_transition"] = store.held / dedup.count()
    figures["naive_over_dedup_bytes"] = (
        figures["naive_bytes_per_transition"] / figures["dedup_bytes_per_transition"]
    )
    # Resident memory of the process when the frame buffer was full (both buffers, the env, numpy).
    figures["process_rss_growth_GB"] = (rss_full - rss0) / 1e9

    # The arrays of a 1M-row buffer of the same rows, allocated (numpy's zeros are paged in only
    # when written, so this costs no memory): the bytes it holds once full, frames reserve included.
    million = AdvancedReplayBuffer(dict(replay_buffer_size=1_000_000))
    million.push(dedup.sample(8, columnar=True))
    figures["dedup_1M_rows_allocated_GB"] = buffer_bytes(million)[0] / 1e9
    del million

    with tempfile.TemporaryDirectory(prefix="bench_frame_storage_") as tmp:
        path = os.path.join(tmp, "buffer.msgpack")
        # CPU seconds of the process (zlib runs in threads) beside wall seconds: steadier when
        # other jobs share the machine.
        start, cpu = time.perf_counter(), time.process_time()
        dedup.save_data(path)
        figures["snapshot_rows"] = dedup.count()
        figures["snapshot_save_s"] = time.perf_counter() - start
        figures["snapshot_save_cpu_s"] = time.process_time() - cpu
        figures["snapshot_file_MB"] = os.path.getsize(path) / 1e6
        figures["snapshot_file_bytes_per_transition"] = os.path.getsize(path) / dedup.count()
        del naive
        loaded = AdvancedReplayBuffer(dict(replay_buffer_size=args.transitions))
        start, cpu = time.perf_counter(), time.process_time()
        loaded.load_data(path)
        figures["snapshot_load_s"] = time.perf_counter() - start
        figures["snapshot_load_cpu_s"] = time.process_time() - cpu
        idx = np.arange(0, dedup.count(), 997)
        a, b = dedup._storage.gather(idx), loaded._storage.gather(idx)
        figures["snapshot_round_trip_exact"] = float(all(np.array_equal(a[k], b[k]) for k in a))

    for key, value in figures.items():
        print(
            f"bench_frame_storage {key}={value:.4g}"
            if isinstance(value, float)
            else f"bench_frame_storage {key}={value}"
        )
    print(json.dumps(figures))
    ratio = {
        f"dedup/naive {what}": figures[f"dedup_{what}"] / figures[f"naive_{what}"]
        for what in (
            "bytes_per_transition",
            "push_fill_transitions_per_s",
            "prioritized_sample32_transitions_per_s",
        )
        if f"naive_{what}" in figures and f"dedup_{what}" in figures
    }
    reference = (
        "naive, measured in the same run on the same pushes: the same prioritized buffer with "
        "frame_dedup=False (each stack stored whole, one column per field)"
    )
    write_result(
        "frame_storage",
        {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()},
        reference=reference,
        ratio={k: round(v, 3) for k, v in ratio.items()},
    )


if __name__ == "__main__":
    main()
