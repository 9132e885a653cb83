"""``RunMonitor``: the driver's reporting - a tqdm line, TensorBoard and dashboard gauges - and
``monitor_stage``, the stage of a Ray run that feeds it.

TensorBoard (``<exp_name>/log/ray``) and the Ray dashboard get the same ``section/name`` keys:
totals over all collectors, the latest learner, buffer and evaluator values, and what only the
driver knows (samples per insert, policy version lag, lost batches, restarts).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

import ray
from tqdm import tqdm

from ding_ray.distributed.metrics import RayMetrics
from ding_ray.distributed.supervisor import Recovered
from ding_ray.utils.result import log_config
from ding_ray.utils.run_dir import events_writer
from ding_ray.worker import metrics

# Per-collector values the driver replaces by its own totals.
_PER_COLLECTOR = (
    metrics.COLLECTOR_ENV_STEPS,
    metrics.COLLECTOR_ENV_STEPS_PER_S,
    metrics.COLLECTOR_POLICY_VERSION,
)


logger = logging.getLogger(__name__)

# What only the driver sees, exported by it to the dashboard.
DRIVER_KEYS = frozenset(
    {
        metrics.COLLECTOR_POLICY_VERSION_LAG,
        metrics.COLLECTOR_LOST_BATCHES,
        metrics.COLLECTOR_RESTARTS,
        metrics.BUFFER_SAMPLES_PER_INSERT,
    }
)


class RunMonitor:
    def __init__(
        self,
        exp_name: str,
        progress_bar: bool = True,
        interval_s: float = 2.0,
        total: int | None = None,
        start_env_steps: int = 0,
    ) -> None:
        """``start_env_steps``: where a resumed run's counter starts; rates count only the steps since."""
        self._tb = events_writer(exp_name, "ray")
        self._metrics = RayMetrics("driver", exp_name)
        self._bar = tqdm(
            total=total,
            initial=start_env_steps,  # tqdm's own rate then counts from here
            unit=" env steps",
            disable=not progress_bar,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        self._interval_s = interval_s
        self.scalars: dict[str, float] = {}
        self._start = self._last = time.monotonic()
        self._start_steps = self._last_steps = start_env_steps
        self.rate = 0.0  # env steps per second since the start, as the progress bar shows it
        self._last_bar = 0.0

    def update(self, scalars: Mapping[str, object]) -> None:
        """Keep the latest numeric ``section/name`` values of a call's info."""
        for key, value in scalars.items():
            if "/" in key and key not in _PER_COLLECTOR and isinstance(value, Real):
                self.scalars[key] = float(value)

    def log_config(self, cfg: Mapping) -> None:
        log_config(self._tb, cfg)

    def evaluated(self, info: Mapping[str, object]) -> None:
        """An evaluation's ``evaluator/*`` values to TensorBoard at once, at the env step its weights
        were taken, so a curve shows each evaluation where it belongs (the evaluator actor exports
        them to the dashboard itself)."""
        scalars = {k: float(v) for k, v in info.items() if k.startswith("evaluator/") and isinstance(v, Real)}
        step = int(info.get("envstep", 0))
        logger.info(
            "evaluation at train_iter %s (env step %d): return %.1f +- %.1f (min %.1f, max %.1f)%s",
            info.get("train_iter"),
            step,
            scalars.get(metrics.EVAL_RETURN_MEAN, float("nan")),
            scalars.get(metrics.EVAL_RETURN_STD, float("nan")),
            scalars.get(metrics.EVAL_RETURN_MIN, float("nan")),
            scalars.get(metrics.EVAL_RETURN_MAX, float("nan")),
            ": stop value reached" if info.get("stop") else "",
        )
        for key, value in scalars.items():
            self._tb.add_scalar(key, value, step)

    def report(self, env_steps: int, train_iter: int, last_eval: float | None, force: bool = False) -> None:
        now = time.monotonic()
        if now - self._last_bar >= 0.5 or force:
            self._last_bar = now
            self._bar.update(env_steps - self._bar.n)
            eval_text = "-" if last_eval is None else f"{last_eval:.1f}"
            self.rate = rate = (env_steps - self._start_steps) / max(now - self._start, 1e-9)
            text = f"iter {train_iter}, eval {eval_text}, {rate:.0f} steps/s"
            self._bar.set_postfix_str(text, refresh=False)
        if now - self._last < self._interval_s and not force:
            return
        self.scalars[metrics.COLLECTOR_ENV_STEPS] = env_steps
        rate = (env_steps - self._last_steps) / max(now - self._last, 1e-9)
        self.scalars[metrics.COLLECTOR_ENV_STEPS_PER_S] = rate
        self._last, self._last_steps = now, env_steps
        for key, value in self.scalars.items():
            # learner values over iterations, as the serial learner's log_show hook (and DI-engine's)
            # writes them; the rest over env steps
            self._tb.add_scalar(key, value, train_iter if key.startswith("learner/") else env_steps)
        # the dashboard gets only what the driver alone knows; the actors export their own figures
        self._metrics.record({k: v for k, v in self.scalars.items() if k in DRIVER_KEYS}, force=True)

    def close(self) -> None:
        try:
            self._bar.close()
        except (OSError, ValueError):  # stderr is a closed pipe (Ctrl-C ended `| tee` too)
            pass
        self._tb.close()


def monitor_stage(rc: Any) -> tuple[RunMonitor, Callable]:
    """The monitor of a Ray run (``RayRun``) and the stage that feeds it every iteration:
    the collectors' infos, the learner's outputs, evaluations, the driver's own figures, and the
    buffer's statistics (one stats call in flight, never waited on)."""
    before = 0 if rc.resumed is None else int(rc.resumed.meta["env_steps"])
    monitor = RunMonitor(
        rc.cfg.exp_name,
        rc.cfg.ray.progress_bar,
        rc.cfg.ray.report_interval_s,
        rc.budget["max_env_step"],
        start_env_steps=before,  # a resumed run's rates count only its own steps
    )
    monitor.log_config(rc.cfg)
    stats: dict[str, Any] = dict(ref=None, at=0.0)

    def _monitor(ctx: Any) -> None:
        rc.ctx = ctx
        lags = []
        for info in rc.collector.pop_infos():
            lags.append(ctx.train_iter - max(info["policy_version"], 0))
            monitor.update(info)
        if lags:
            monitor.scalars[metrics.COLLECTOR_POLICY_VERSION_LAG] = sum(lags) / len(lags)
        for output in ctx.train_output if isinstance(ctx.train_output, list) else [ctx.train_output]:
            if isinstance(output, dict):
                monitor.update(output)
        if ctx.eval_output:
            monitor.evaluated(ctx.eval_output["episode_info"])
        monitor.scalars[metrics.COLLECTOR_LOST_BATCHES] = rc.collector.pool.lost_batches
        monitor.scalars[metrics.COLLECTOR_RESTARTS] = rc.collector.pool.restarts
        if rc.limiter is not None:
            monitor.scalars[metrics.BUFFER_SAMPLES_PER_INSERT] = rc.limiter.samples_per_insert_now()
        if stats["ref"] is not None and ray.wait([stats["ref"]], timeout=0)[0]:
            with contextlib.suppress(Recovered):  # the buffer died meanwhile: ask the new one
                monitor.update(rc.supervisor.get(stats["ref"], ["buffer"]))
            stats["ref"] = None
        due = time.monotonic() - stats["at"] >= rc.cfg.ray.report_interval_s
        if stats["ref"] is None and rc.actors.buffer is not None and due:
            stats["ref"], stats["at"] = rc.buffer.stats(), time.monotonic()
        monitor.report(ctx.env_step, ctx.train_iter, rc.last_eval_return())

    return monitor, _monitor
