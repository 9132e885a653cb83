"""Prioritized replay throughput: ding_ray's AdvancedReplayBuffer against a textbook reference.

Run:  python benchmarks/bench_buffer.py  [--capacity 100000] [--window 0.4] [--repeats 7] [--clock wall|cpu]

The reference is written below: a per-item Python sum/min segment tree and a list of transition
dicts, the way a typical PER implementation (DI-engine's, OpenAI baselines') is built. It runs
in a process of its own (its 100k dicts stay out of ding_ray's heap, as in a real program), on
the same kind of data. The two take turns in timing windows of at least ``window`` seconds. A
rate is the best of its ``repeats`` windows (as timeit reports the run least disturbed by other
processes); a ratio is the median over the pairs of windows of ours divided by the reference's
window right after it, so it holds on any machine and while the machine's speed drifts. On a
shared machine ``--clock cpu`` times each process by its own CPU time.

Output: one line per figure, ``bench_buffer <figure>=<value> reference=<value> ratio_vs_reference=<r> ...``;
the same in ``benchmarks/results/buffer.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time

import numpy as np
from results_io import write_result

from ding_ray.data import AdvancedReplayBuffer, Batch

BATCH, PUSH_CHUNK = 256, 64
# Measured earlier on the 2-core development machine (not in this run), for comparison only.
DI_ENGINE_053 = {"sample256_per_s": 369.0, "update256_per_s": 229.0, "learner_steps_per_s": 140.0}
RLLIB_260_LEARNER_STEPS_PER_S = 42.0


# ---------------------------------------------------------------------- reference implementation
class ReferenceTree:
    """A textbook segment tree over Python lists, updated and searched one item at a time."""

    def __init__(self, capacity: int, op, neutral: float) -> None:
        self.size = 1
        while self.size < capacity:
            self.size *= 2
        self.op, self.values = op, [neutral] * (2 * self.size)

    def update(self, i: int, value: float) -> None:
        i += self.size
        values, op = self.values, self.op
        values[i] = value
        i //= 2
        while i >= 1:
            values[i] = op(values[2 * i], values[2 * i + 1])
            i //= 2

    def root(self) -> float:
        return self.values[1]

    def find_prefixsum(self, s: float) -> int:
        i, values = 1, self.values
        while i < self.size:
            left = values[2 * i]
            if s < left:
                i = 2 * i
            else:
                s -= left
                i = 2 * i + 1
        return i - self.size


class ReferencePER:
    """Prioritized replay as usually written: list-of-dicts storage, per-item tree operations."""

    def __init__(self, capacity: int, alpha: float = 0.6, beta: float = 0.4) -> None:
        self.capacity, self.alpha, self.beta = capacity, alpha, beta
        self.data: list = [None] * capacity
        self.ids = [-1] * capacity
        self.priority = [0.0] * capacity
        self.sum_tree = ReferenceTree(capacity, lambda a, b: a + b, 0.0)
        self.min_tree = ReferenceTree(capacity, min, float("inf"))
        self.head = self.count = self.pushed = 0
        self.max_priority = 1.0

    def push(self, items: list) -> None:
        for item in items:
            i = self.head
            self.data[i], self.ids[i], self.priority[i] = item, self.pushed, self.max_priority
            weight = self.max_priority**self.alpha
            self.sum_tree.update(i, weight)
            self.min_tree.update(i, weight)
            self.head, self.pushed = (i + 1) % self.capacity, self.pushed + 1
            self.count = min(self.count + 1, self.capacity)

    def sample(self, size: int) -> list:
        total = self.sum_tree.root()
        segment = total / size
        max_weight = (self.count * self.min_tree.root() / total) ** -self.beta
        out = []
        for k in range(size):
            i = self.sum_tree.find_prefixsum(random.uniform(segment * k, segment * (k + 1)))
            prob = self.sum_tree.values[i + self.sum_tree.size] / total
            item = dict(self.data[i])
            item["IS"] = (self.count * prob) ** -self.beta / max_weight
            item["priority"], item["replay_unique_id"], item["replay_buffer_idx"] = (
                self.priority[i],
                self.ids[i],
                i,
            )
            out.append(item)
        return out

    def update(self, info: dict) -> None:
        for uid, i, p in zip(
            info["replay_unique_id"], info["replay_buffer_idx"], info["priority"], strict=True
        ):
            if self.ids[i] == uid:
                self.priority[i] = p
                weight = p**self.alpha
                self.sum_tree.update(i, weight)
                self.min_tree.update(i, weight)
                self.max_priority = max(self.max_priority, p)


# ---------------------------------------------------------------------- data and timing
def cartpole_batch(rng: np.random.Generator, n: int) -> Batch:
    obs = rng.standard_normal((n, 4)).astype(np.float32)
    return Batch(
        obs=obs,
        next_obs=obs + np.float32(0.01),
        action=rng.integers(0, 2, n),
        reward=np.ones(n, dtype=np.float32),
        done=rng.random(n) < 0.05,
    )


def cartpole_items(rng: np.random.Generator, n: int) -> list[dict]:
    b = cartpole_batch(rng, n)
    return [{k: v[i] for k, v in b.items()} for i in range(n)]


def ids_of_batch(out: Batch) -> dict:
    return {"replay_unique_id": out["replay_unique_id"], "replay_buffer_idx": out["replay_buffer_idx"]}


def ids_of_items(out: list) -> dict:
    return {k: [x[k] for x in out] for k in ("replay_unique_id", "replay_buffer_idx")}


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCK["wall"]


def rate(fn, units: float, window: float) -> float:
    """Units/s over one window of at least ``window`` seconds."""
    calls, start = 0, clock()
    while True:
        fn()
        calls += 1
        elapsed = clock() - start
        if elapsed >= window:
            return calls * units / elapsed


def paired(ours, ref, units: float, window: float, repeats: int) -> tuple[float, float, float]:
    """``(best ours, best reference, median ratio)`` over ``repeats`` pairs of windows.

    ``ref(units)`` times one reference window (in the reference's process) and returns its rate.
    The two run in alternate windows and each ratio compares a window of ours with the reference
    window right after it, so the ratio holds even while the machine's speed drifts (on a shared
    2-core VM it moves by tens of percent within seconds). The rates are the best window of each,
    as timeit reports the run least disturbed by other processes.
    """
    mine, theirs = [], []
    for _ in range(repeats):
        mine.append(rate(ours, units, window))
        theirs.append(ref(units))
    ratios = sorted(a / b for a, b in zip(mine, theirs, strict=True))
    return max(mine), max(theirs), ratios[len(ratios) // 2]


def reference_process(conn, cap: int, window: float, clock_name: str) -> None:
    """Time the reference on request: each command names what to run for one window.

    The reference lives in a process of its own, as a list-of-dicts buffer would in a real
    program: its 100k dicts sit in its own garbage collector's heap and caches, not in ding_ray's.
    """
    global clock
    clock = CLOCK[clock_name]
    rng = np.random.default_rng(1)
    random.seed(0)
    ref = ReferencePER(cap)
    items = [cartpole_items(rng, PUSH_CHUNK) for _ in range(16)]
    priorities = [rng.random(BATCH) + 0.1 for _ in range(32)]
    count = iter(range(1 << 62))

    def push() -> None:
        ref.push(items[next(count) % 16])

    def update(info: dict) -> None:
        ref.update(dict(info, priority=priorities[next(count) % 32]))

    fixed: dict = {}
    commands = {
        "push": push,
        "sample": lambda: ref.sample(BATCH),
        "update": lambda: update(fixed["info"]),
        "step": lambda: update(ids_of_items(ref.sample(BATCH))),
    }
    while (command := conn.recv()) is not None:
        if command == "fill":
            while ref.pushed < cap:
                push()
            fixed["info"] = ids_of_items(ref.sample(BATCH))
            conn.send(None)
        else:
            name, units = command
            conn.send(rate(commands[name], units, window))


def report(figure: str, value: float, reference: float, ratio: float, **extra: float) -> dict:
    """Print one figure's line; the same as a record."""
    parts = [
        f"bench_buffer {figure}={value:.0f}",
        f"reference={reference:.1f}",
        f"ratio_vs_reference={ratio:.1f}",
    ]
    parts += [f"{k}={v:.1f}" for k, v in extra.items()]
    print(" ".join(parts), flush=True)
    row = dict(figure=figure, value=round(value), reference=round(reference, 1))
    return dict(row, ratio_vs_reference=round(ratio, 2), **{k: round(v, 2) for k, v in extra.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--window", type=float, default=0.4, help="seconds per timing window")
    parser.add_argument(
        "--repeats", type=int, default=7, help="window pairs per figure (odd: the median ratio is one pair's)"
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCK),
        default="wall",
        help="cpu: this process's CPU time (other load excluded)",
    )
    args = parser.parse_args()
    global clock
    clock = CLOCK[args.clock]
    cap, window, repeats = args.capacity, args.window, args.repeats
    rng = np.random.default_rng(0)
    random.seed(0)
    print(
        f"# prioritized buffer of {cap} CartPole transitions, batch {BATCH}; ding_ray and the reference "
        f"alternate over {repeats} pairs of {window}s windows of {args.clock} time: "
        "rate = best window, ratio = median of the pairs' ratios"
    )
    if hasattr(os, "getloadavg"):  # other processes on a small machine move every figure
        print("# load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))

    context = multiprocessing.get_context("spawn")
    conn, child_conn = context.Pipe()
    child = context.Process(target=reference_process, args=(child_conn, cap, window, args.clock), daemon=True)
    child.start()

    def reference(name: str):
        def timed(units: float) -> float:
            conn.send((name, units))
            return conn.recv()

        return timed

    # Push: columnar batches of 64 (or lists of 64 dicts), the rings wrapping after the first pass.
    chunks = [cartpole_batch(rng, PUSH_CHUNK) for _ in range(64)]
    item_chunks = [cartpole_items(rng, PUSH_CHUNK) for _ in range(16)]
    buf = AdvancedReplayBuffer({"replay_buffer_size": cap})
    buf.seed(0)
    it = iter(range(1 << 62))
    push_ref = reference("push")
    push_col = paired(lambda: buf.push(chunks[next(it) % 64]), push_ref, PUSH_CHUNK, window, repeats)
    push_lst = paired(lambda: buf.push(item_chunks[next(it) % 16]), push_ref, PUSH_CHUNK, window, repeats)
    while buf.push_count < cap:
        buf.push(chunks[next(it) % 64])
    conn.send("fill")
    conn.recv()

    new_priority = [rng.random(BATCH) + 0.1 for _ in range(32)]
    state = {"k": 0}

    def next_priority() -> np.ndarray:
        state["k"] += 1
        return new_priority[state["k"] % 32]

    info = ids_of_batch(buf.sample(BATCH, 0, columnar=True))

    def step_columnar() -> None:
        out = buf.sample(BATCH, 1, columnar=True)
        buf.update(dict(ids_of_batch(out), priority=next_priority()))

    def step_list() -> None:
        out = buf.sample(BATCH, 1)
        buf.update(dict(ids_of_items(out), priority=next_priority()))

    def update_fixed() -> None:
        buf.update(dict(info, priority=next_priority()))

    ref_sample, ref_step = reference("sample"), reference("step")
    sample_col = paired(lambda: buf.sample(BATCH, 1, columnar=True), ref_sample, 1, window, repeats)
    sample_lst = paired(lambda: buf.sample(BATCH, 1), ref_sample, 1, window, repeats)
    update = paired(update_fixed, reference("update"), 1, window, repeats)
    step_col = paired(step_columnar, ref_step, 1, window, repeats)
    step_lst = paired(step_list, ref_step, 1, window, repeats)
    conn.send(None)
    child.join()

    rows = [
        report("push_columnar_items_per_s", *push_col, batch=PUSH_CHUNK),
        report("push_list_items_per_s", *push_lst, batch=PUSH_CHUNK),
    ]
    die = DI_ENGINE_053
    rows += [
        report(
            "sample256_columnar_per_s",
            *sample_col,
            ratio_vs_dingine_053=sample_col[0] / die["sample256_per_s"],
        ),
        report(
            "sample256_list_per_s", *sample_lst, ratio_vs_dingine_053=sample_lst[0] / die["sample256_per_s"]
        ),
        report("update256_per_s", *update, ratio_vs_dingine_053=update[0] / die["update256_per_s"]),
    ]
    for name, steps in (("columnar", step_col), ("list", step_lst)):
        rows.append(
            report(
                f"{name}_learner_steps_per_s",
                *steps,
                ratio_vs_dingine_053=steps[0] / die["learner_steps_per_s"],
                ratio_vs_rllib_260=steps[0] / RLLIB_260_LEARNER_STEPS_PER_S,
            )
        )
    reference = (
        "the textbook prioritized replay written in this script (per-item Python segment trees, a list "
        "of dicts), in a process of its own, timed in windows alternating with ding_ray's in the same "
        "run; ratio_vs_dingine_053 and ratio_vs_rllib_260 compare with figures measured earlier, not "
        f"in this run ({args.clock} clock, capacity {cap})"
    )
    ratio = {f"{row['figure']}/reference": row["ratio_vs_reference"] for row in rows}
    write_result("buffer", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
