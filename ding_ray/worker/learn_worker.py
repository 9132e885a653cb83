"""``LearnWorker``: a self-contained learner (learn-mode policy + ``BaseLearner``) for any process.

A distributed learner receives big sampled batches (several minibatches per call, so one round
trip buys many gradient steps) and publishes its weights as numpy arrays with a version number:
the learner iteration at which they were taken.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.data.columnar import Batch, batch_size, take_rows
from ding_ray.policy import create_policy
from ding_ray.policy.weights import Weights, state_dict_to_numpy
from ding_ray.utils.checkpoint import (
    LEARNER_FILE,
    CheckpointStore,
    learner_bytes,
    load_learner_bytes,
    restore_latest,
    restore_learner,
)
from ding_ray.utils.runtime import set_pkg_seed
from ding_ray.worker import metrics
from ding_ray.worker.learner import BaseLearner
from ding_ray.worker.policy_lag import PolicyLag


class LearnWorker:
    """The calling loop (off-policy)::

    worker = LearnWorker(cfg)
    while True:
        info, priority = worker.train(buffer.sample(k * batch_size, worker.train_iter, columnar=True))
        buffer.update(priority)                     # when the policy reports priorities
        version, weights = worker.weights()         # every publish_freq iterations
    """

    def __init__(self, cfg: EasyDict, tb_logger: Any = None) -> None:
        set_pkg_seed(int(cfg.seed), use_cuda=bool(cfg.policy.cuda))
        # policy.load_path is the eval entry's (as in DI-engine): a run warm-starts only through
        # the learner's load_ckpt_before_run hook, which logs what it loads.
        self._policy = create_policy(cfg.policy, enable_field=["learn"])
        self._learner = BaseLearner(
            cfg.policy.learn.learner, self._policy.learn_mode, tb_logger, exp_name=cfg.exp_name
        )
        self._batch_size = int(self._policy.learn_mode.get_attribute("batch_size"))
        self._rng = np.random.default_rng(int(cfg.seed))
        self._samples = 0
        self.lag = PolicyLag()  # of the rows trained on (those with a policy_version column)
        self.batch_lag: float | None = None  # the median lag of the last call's data
        self._learner.call_hook("before_run")

    @property
    def train_iter(self) -> int:
        return self._learner.train_iter

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def train(self, batch: Mapping | None, envstep: int = -1) -> tuple[dict[str, Any], dict | None]:
        """One gradient step per ``batch_size`` rows of ``batch`` (rows shuffled first: a
        prioritized buffer returns its stratified draws in priority-range order).

        Returns (info, priority_info); priority_info is None unless the policy reports priorities.
        ``batch`` None (the buffer could not serve the sample) trains nothing.
        """
        start, iter_before = time.perf_counter(), self.train_iter
        if batch is None:
            return self._info([], 0, start, iter_before), None
        self._record_lag(batch)
        n = batch_size(batch)
        order = self._rng.permutation(n)
        logs, priorities, samples = [], [], 0
        for lo in range(0, n - self._batch_size + 1, self._batch_size):
            minibatch = take_rows(batch, self._shard(order[lo : lo + self._batch_size]))
            logs += self._learner.train(minibatch, envstep)
            samples += self._batch_size
            if self._learner.priority_info is not None:
                priorities.append(self._learner.priority_info)
        return self._info(logs, samples, start, iter_before), _concat(priorities)

    def train_on_policy(self, batches: Sequence[Mapping], envstep: int = -1) -> dict[str, Any]:
        """One learner call on all of ``batches`` joined (on-policy data), as
        ``serial_pipeline_onpolicy`` makes per collect: the policy's learn forward takes its epochs
        and minibatches, one iteration each."""
        start, iter_before = time.perf_counter(), self.train_iter
        data = _join(batches)
        self._record_lag(data)
        data = take_rows(data, self._shard(np.arange(batch_size(data))))
        logs = self._learner.train(data, envstep)
        return self._info(logs, batch_size(data), start, iter_before)

    def _record_lag(self, data: Mapping) -> None:
        if "policy_version" in data:
            self.batch_lag = self.lag.record(self.train_iter, data["policy_version"])

    def _shard(self, rows: np.ndarray) -> np.ndarray:
        """The rows of a minibatch (or of on-policy data) this learner trains on: all of them; a
        member of a data-parallel learner group takes its share."""
        return rows

    def _info(self, logs: list[dict], samples: int, start: float, iter_before: int) -> dict[str, Any]:
        """What one call did: its iterations (gradient steps), samples, time and mean log values."""
        seconds = time.perf_counter() - start
        self._samples += samples
        info: dict[str, Any] = {
            "iters": self.train_iter - iter_before,
            "samples": samples,
            "seconds": seconds,
            metrics.LEARNER_TRAIN_ITER: self.train_iter,
            metrics.LEARNER_SAMPLES_PER_S: samples / max(seconds, 1e-9),
        }
        info.update(self._learner.throughput())
        if self.lag.rows:
            info[metrics.LEARNER_POLICY_LAG_MEDIAN] = self.lag.quantile(0.5)
            info[metrics.LEARNER_POLICY_LAG_P95] = self.lag.quantile(0.95)
        for key in logs[0] if logs else ():
            values = [log[key] for log in logs if isinstance(log.get(key), (int, float))]
            if values:
                info[metrics.learner_key(key)] = float(np.mean(values))
        return info

    def weights(self) -> tuple[int, Weights]:
        """``(version, weights)`` of the model now; the version is the learner iteration."""
        return self.train_iter, state_dict_to_numpy(self._policy.learn_mode.state_dict()["model"])

    def state_dict(self) -> dict[str, Any]:
        """The learn mode's full state (model, target model, optimizer) and the iteration."""
        state = dict(self._policy.learn_mode.state_dict())
        state["last_iter"] = self.train_iter
        return state

    def save_run_checkpoint_file(self, store: CheckpointStore) -> dict[str, Any]:
        """Write ``learner.pth`` of a run checkpoint into the folder of ``store`` named after this
        learner's iteration; the folder, and what its ``meta.json`` records (the file's size and
        sha256, and the iteration)."""
        folder = store.folder(self.train_iter)
        return {
            "folder": folder,
            "file": store.write(folder, LEARNER_FILE, learner_bytes(self._learner)),
            "train_iter": self.train_iter,
        }

    def restore_run_checkpoint(self, store: CheckpointStore) -> str | None:
        """Go on from the latest complete checkpoint in ``store`` (learner state, counters, RNG
        states); its folder, or None when there is none."""
        return restore_latest(
            store,
            LEARNER_FILE,
            lambda data, where: restore_learner(self._learner, load_learner_bytes(data, where)),
        )

    def save_checkpoint(self, name: str | None = None) -> str:
        return self._learner.save_checkpoint(name)

    def close(self) -> None:
        self._learner.call_hook("after_run")
        self._learner.close()


def _concat(infos: list[dict]) -> dict | None:
    if not infos:
        return None
    return {key: np.concatenate([np.asarray(info[key]).ravel() for info in infos]) for key in infos[0]}


def _join(batches: Sequence[Mapping]) -> Batch:
    """One ``Batch`` of the rows of ``batches`` (flat or nested columns)."""

    def join(nodes: list[Mapping]) -> dict:
        out = {}
        for key, value in nodes[0].items():
            parts = [n[key] for n in nodes]
            out[key] = join(parts) if isinstance(value, Mapping) else np.concatenate(parts)
        return out

    return Batch(join(list(batches)))
