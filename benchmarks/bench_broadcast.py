"""Time to deliver a learner's weights to 1, 2 and 4 collector actors through the object store.

The learner side ``ray.put``s the numpy state dict once; every receiver ``ray.get``s the same
shared-memory copy (zero-copy on the node) and loads it into its torch model, which is what a
collector does at a rollout boundary. Reference, measured in the same run: one ``ray.put`` +
``ray.get`` of the same dict in one process. For contrast, ``by_value`` passes the dict inside
each call, so it is serialised once per receiver.

Run:  python benchmarks/bench_broadcast.py [--repeat 9]
Prints one ``bench_broadcast name=value ...`` line per figure and writes them to
``benchmarks/results/broadcast.json``; the target is ``deliver_4 / deliver_1 <= 2`` (one
object-store copy, not N pickles).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import ray
import torch
from results_io import write_result

from ding_ray.distributed.weights import WeightsPublisher, WeightsRef, pull
from ding_ray.policy.weights import Weights, load_weights, state_dict_to_numpy
from ding_ray.utils.runtime import set_torch_threads


def mlp(params: int) -> torch.nn.Module:
    """An MLP of square layers with about ``params`` parameters."""
    width = 1024 if params >= 4_000_000 else 512
    layers = max(1, round(params / (width * width + width)))
    return torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])


class _Mode:
    """The slice of a policy mode that ``load_weights`` uses."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])


class Receiver:
    """Stands for a collector: holds a model and a version, loads newer weights."""

    def __init__(self, params: int) -> None:
        set_torch_threads(1)
        self._mode = _Mode(mlp(params))
        self.version = -1

    def load_weights(self, version: int, weights: Weights) -> bool:
        load_weights(self._mode, weights)
        self.version = version
        return True

    def pull(self, weights: WeightsRef) -> int:
        pull(self, weights)
        return self.version

    def by_value(self, version: int, weights: Weights) -> int:
        self.load_weights(version, weights)
        return self.version


def deliver(receivers: list, weights: Weights, version: int, by_value: bool = False) -> float:
    start = time.perf_counter()
    if by_value:
        ray.get([r.by_value.remote(version, weights) for r in receivers])
    else:
        ref = WeightsPublisher().publish(version, weights)  # one ray.put
        ray.get([r.pull.remote(ref) for r in receivers])
    return time.perf_counter() - start


def put_get(weights: Weights) -> float:
    start = time.perf_counter()
    out = ray.get(ray.put(weights))
    assert len(out) == len(weights)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    set_torch_threads(1)
    ray.init(num_cpus=4, include_dashboard=False)
    remote_receiver = ray.remote(num_cpus=0.25)(Receiver)
    version = 0
    rows, ratio = [], {}
    for params in (1_000_000, 10_000_000):
        weights = state_dict_to_numpy(mlp(params).state_dict())
        n = int(sum(np.size(v) for v in weights.values()))
        receivers = [remote_receiver.remote(params) for _ in range(4)]
        ray.get([r.pull.remote(None) for r in receivers])  # started
        reference = statistics.median(put_get(weights) for _ in range(args.repeat))
        samples: dict[int, list[float]] = {1: [], 2: [], 4: []}
        for _ in range(args.repeat):  # 1, 2, 4 in turn, so drifting machine speed hits all alike
            for k, runs in samples.items():
                version += 1
                runs.append(deliver(receivers[:k], weights, version))
        times = {k: statistics.median(runs) for k, runs in samples.items()}
        by_value = []
        for _ in range(args.repeat):
            version += 1
            by_value.append(deliver(receivers, weights, version, by_value=True))
        by_value_4 = statistics.median(by_value)
        print(f"bench_broadcast params={n} put_get_s={reference:.4f}")
        for k in (1, 2, 4):
            print(
                f"bench_broadcast params={n} receivers={k} deliver_s={times[k]:.4f} "
                f"ratio_to_put_get={times[k] / reference:.2f} ratio_to_1={times[k] / times[1]:.2f}"
            )
        print(
            f"bench_broadcast params={n} receivers=4 by_value_s={by_value_4:.4f} "
            f"ratio_to_object_store={by_value_4 / times[4]:.2f}"
        )
        for r in receivers:
            ray.kill(r)
        rows.append(
            dict(
                params=n,
                put_get_s=round(reference, 5),
                **{f"deliver_{k}_s": round(times[k], 5) for k in times},
                by_value_4_s=round(by_value_4, 5),
            )
        )
        ratio[f"deliver_4/deliver_1 params={n}"] = round(times[4] / times[1], 2)
        ratio[f"deliver_1/put_get params={n}"] = round(times[1] / reference, 2)
        ratio[f"by_value_4/deliver_4 params={n}"] = round(by_value_4 / times[4], 2)
    ray.shutdown()
    reference = "put_get_s, measured in the same run: one ray.put and ray.get of the same dict in one process"
    write_result("broadcast", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
