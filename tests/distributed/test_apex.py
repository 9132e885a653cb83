"""The Ape-X pipeline on the session's Ray: weights, versions, rate limit, restarts, metrics, deaths.

The tests share one set of actors and run in file order; the last one kills the learner.
"""

from __future__ import annotations

import time
import urllib.request

import numpy as np
import pytest
import ray

from ding_ray.distributed import ApexDriver, create_actors, make_plan, metric_name, wait_ready
from ding_ray.distributed.collector_pool import BUSY
from ding_ray.errors import ActorDiedError
from ding_ray.worker import metrics
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def setup(ray_session, tmp_path_factory):
    cfg = compiled(tmp_path_factory.mktemp("apex"), name="apex_it")
    plan = make_plan(cfg)
    actors = create_actors(cfg, plan.namespace)
    wait_ready(actors, 180)
    yield cfg, plan, actors
    actors.kill()


class RecordingDriver(ApexDriver):
    """Records the versions it publishes and, per finished collect call, who returned which
    policy version with which weights it had been launched."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.published: list[int] = []
        self.launched: dict = {}
        self.collected: list[tuple[str, int, int, int]] = []  # name, version, launched with, env steps

    def launch_collects(self) -> None:
        before = set(self.pool.refs())
        super().launch_collects()
        for ref in set(self.pool.refs()) - before:
            self.launched[ref] = -1 if self.weights is None else self.weights.version

    def process(self, ready: list) -> None:
        self._launched_with = {
            self.pool._by_ref[ref].name: self.launched.pop(ref, None) for ref in ready if self.pool.owns(ref)
        }
        super().process(ready)

    def on_collected(self, outcome) -> None:
        super().on_collected(outcome)
        info = outcome.info
        launched = self._launched_with[outcome.slot.name]
        self.collected.append(
            (outcome.slot.name, info["policy_version"], launched, info[metrics.COLLECTOR_ENV_STEPS])
        )

    def on_trained(self, call) -> None:
        super().on_trained(call)
        if not self.published or self.weights.version != self.published[-1]:
            self.published.append(self.weights.version)


def run(driver: ApexDriver, each=None) -> ApexDriver:
    while not driver.done:
        driver.launch_collects()
        driver.launch_training()
        driver.launch_eval()
        driver.process(driver.wait())
        if each is not None:
            each(driver)
    driver.close()
    return driver


def test_versions_increase_and_reach_collectors_and_batches(setup):
    cfg, plan, actors = setup
    driver = run(RecordingDriver(cfg, actors, plan, max_train_iter=120))
    assert driver.train_iter >= 120
    assert len(driver.published) >= 10 and np.all(np.diff(driver.published) > 0)
    held = ray.get([c.ping.remote() for c in actors.collectors])
    assert all(0 < v <= driver.published[-1] for v in held)
    for name in ("collector-0", "collector-1"):
        versions = [v for n, v, _, _ in driver.collected if n == name]
        assert len(versions) >= 3 and versions == sorted(versions) and versions[-1] > 0
    batch = ray.get(actors.buffer.sample.remote(256, driver.train_iter))
    assert batch["policy_version"].min() >= -1 and batch["policy_version"].max() > 0
    assert (batch["collect_iter"] == np.maximum(batch["policy_version"], 0)).all()
    assert driver.last_eval is not None  # eval_freq 40: the evaluator ran


def _torch_threads(worker) -> int | None:
    import sys

    return sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None


def test_every_actor_runs_torch_with_one_thread(setup):
    _, _, actors = setup
    threads = {name: ray.get(h.__ray_call__.remote(_torch_threads)) for name, h in actors.named()}
    assert threads.pop("buffer") in (None, 1)  # the buffer does not even import torch
    assert set(threads.values()) == {1}, threads


def test_rate_limiter_holds_samples_per_insert(setup):
    cfg, plan, actors = setup
    before = ray.get(actors.buffer.stats.remote())
    errors = []
    driver = RecordingDriver(cfg, actors, plan, max_train_iter=ray.get(actors.learner.ping.remote()) + 200)
    run(driver, each=lambda d: errors.append(d.limiter.error))
    after = ray.get(actors.buffer.stats.remote())
    limiter = driver.limiter
    assert max(errors) <= limiter.tolerance
    assert min(errors) >= -limiter.tolerance - plan.samples_per_insert * plan.n_sample * 2
    # The buffer's own counters agree with the limiter: every launched sample was served.
    assert after["buffer/sampled"] - before["buffer/sampled"] == limiter.sampled
    assert after["buffer/pushed"] - before["buffer/pushed"] >= limiter.inserted
    spi = limiter.sampled / (limiter.inserted - plan.min_replay_size)
    assert spi == pytest.approx(plan.samples_per_insert, abs=limiter.tolerance / limiter.inserted + 0.5)


def test_killed_collector_restarts_with_the_latest_weights(setup):
    cfg, plan, actors = setup
    start = ray.get(actors.learner.ping.remote())
    driver = RecordingDriver(cfg, actors, plan, max_train_iter=start + 20000)
    killed, deadline = [], time.monotonic() + 120

    def kill_once_then_finish(d):
        assert time.monotonic() < deadline, "collector-0 did not come back"
        slot = d.pool.slots[0]
        if not killed and d.train_iter >= start + 60 and slot.state == BUSY:
            ray.kill(slot.handle, no_restart=False)
            killed.append((d.train_iter, len(d.collected)))
        back = [x for x in d.collected[killed[0][1] :] if x[0] == "collector-0"] if killed else []
        if slot.restarts and len(back) >= 3:
            d.stop = True  # collector-0 is back and has delivered batches again

    run(driver, each=kill_once_then_finish)
    assert killed and driver.train_iter > killed[0][0]  # the run went on
    slot = driver.pool.slots[0]
    assert slot.restarts == 1 and slot.lost == driver.pool.lost_batches <= 1
    steps = [(v, launched, env_steps) for n, v, launched, env_steps in driver.collected if n == "collector-0"]
    restart = next(i for i in range(1, len(steps)) if steps[i][2] < steps[i - 1][2])  # its counter reset
    version, launched_with, _ = steps[restart]
    assert version == launched_with > 0  # the restarted collector pulled the weights it was given
    other = [x for x in driver.collected if x[0] == "collector-1"]
    assert len(other) > len(steps) // 2  # collector-1 kept going meanwhile


class EvalRecordingDriver(RecordingDriver):
    """Also records the weights version of every evaluation that came back."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.evaluated: list[int] = []

    def on_evaluated(self) -> None:
        version = self._eval_weights.version
        super().on_evaluated()
        if self._eval_failures == 0:  # it answered (a dead evaluator counts a failure instead)
            self.evaluated.append(version)


def test_killed_evaluator_restarts_and_evaluates_the_latest_weights(setup):
    cfg, plan, actors = setup
    start = ray.get(actors.learner.ping.remote())
    driver = EvalRecordingDriver(cfg, actors, plan, max_train_iter=start + 20000)
    killed, deadline = [], time.monotonic() + 120

    def kill_mid_eval_then_finish(d):
        assert time.monotonic() < deadline, "the evaluator did not come back"
        if not killed and d.evaluated and d._eval_ref is not None:
            ray.kill(actors.evaluator, no_restart=False)
            killed.append((d.train_iter, len(d.evaluated)))
        if killed and len(d.evaluated) >= killed[0][1] + 2:
            d.stop = True  # two evaluations since the restart

    run(driver, each=kill_mid_eval_then_finish)
    assert killed and driver.train_iter > killed[0][0]  # training went on meanwhile
    after = driver.evaluated[killed[0][1] :]
    assert after == sorted(after) and after[0] > driver.evaluated[killed[0][1] - 1]
    assert ray.get(actors.evaluator.ping.remote()) == after[-1]  # the new process holds those weights


def test_metrics_reach_prometheus(setup, ray_session):
    wanted = {
        metric_name(metrics.COLLECTOR_ENV_STEPS): 'actor="collector-0"',
        metric_name(metrics.LEARNER_TRAIN_ITER): 'actor="learner"',
        metric_name("buffer/size"): 'actor="buffer"',
        metric_name(metrics.EVAL_RETURN_MEAN): 'actor="evaluator"',
        metric_name(metrics.BUFFER_SAMPLES_PER_INSERT): 'actor="driver"',
        metric_name(metrics.COLLECTOR_POLICY_VERSION_LAG): 'actor="driver"',
    }
    deadline, missing = time.monotonic() + 30, dict(wanted)
    while missing and time.monotonic() < deadline:
        text = urllib.request.urlopen(f"http://127.0.0.1:{ray_session}/metrics", timeout=5).read().decode()
        lines = [line for line in text.splitlines() if not line.startswith("#")]
        missing = {
            name: tag
            for name, tag in missing.items()
            if not any(line.startswith("ray_" + name + "{") and tag in line for line in lines)
        }
        time.sleep(1)
    assert not missing


def test_dead_learner_ends_the_run_with_its_name(setup):
    cfg, plan, actors = setup
    driver = ApexDriver(cfg, actors, plan, max_train_iter=10**6)

    def kill_learner(d):
        if d.train_iter > 0:
            ray.kill(actors.learner)

    with pytest.raises(ActorDiedError, match="learner actor 'learner'"):
        run(driver, each=kill_learner)
