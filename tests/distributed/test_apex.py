"""The Ape-X pipeline on the session's Ray: weights, versions, rate limit, restarts, metrics, deaths.

Each test runs the Task pipeline ``pipelines.off_policy`` builds, plus stages of its own that watch (and
break) it. The tests share one set of actors and run in file order; the last one kills the learner.
"""

from __future__ import annotations

import os
import time
import urllib.request

import numpy as np
import pytest
import ray
from ray.exceptions import RayActorError

from ding_ray.distributed import RayRun, make_plan, metric_name, wait_ready
from ding_ray.errors import ActorDiedError
from ding_ray.framework import OnlineRLContext, Task, current_task, pipelines
from ding_ray.worker import metrics
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def rc(ray_session, tmp_path_factory):
    cfg = compiled(tmp_path_factory.mktemp("apex"), name="apex_it", num_collectors=2)
    rc = RayRun(cfg, make_plan(cfg))
    wait_ready(rc.actors, 180)
    yield rc
    rc.actors.kill()


class Recorder:
    """What a run did, seen from a stage appended to the pipeline: the versions the learner
    published, and per finished collect call who returned which policy version."""

    def __init__(self, rc: RayRun) -> None:
        self.published: list[int] = []
        self.collected: list[tuple[str, int, int]] = []  # collector, policy version, its env steps
        self.evaluated: list[int] = []  # the weights version of each evaluation that came back
        pop = rc.collector.pop_infos

        def pop_and_record() -> list[dict]:  # the monitor stage takes the infos of finished calls
            infos = pop()
            self.collected += [
                (i["collector"], i["policy_version"], i[metrics.COLLECTOR_ENV_STEPS]) for i in infos
            ]
            return infos

        rc.collector.pop_infos = pop_and_record
        self.rc = rc

    def __call__(self, ctx: OnlineRLContext) -> None:
        latest = self.rc.learner.latest
        if latest is not None and (not self.published or latest.version != self.published[-1]):
            self.published.append(latest.version)
        if ctx.eval_output:
            self.evaluated.append(ctx.eval_output["episode_info"]["policy_version"])


def run(rc: RayRun, each=None, **budget) -> tuple[Recorder, OnlineRLContext]:
    """The async pipeline on ``rc``, with a recorder (and ``each``) after every iteration."""
    recorder = Recorder(rc)
    with Task(OnlineRLContext()) as task:
        pipelines.off_policy(task, rc.cfg, rc, **budget)
        task.use(recorder)
        if each is not None:
            task.use(lambda ctx: each(recorder, ctx))
        task.run()
    return recorder, task.ctx


def test_versions_increase_and_reach_collectors_and_batches(rc):
    recorder, ctx = run(rc, max_train_iter=120)
    assert ctx.train_iter >= 120
    published = recorder.published
    assert len(published) >= 10 and np.all(np.diff(published) > 0)
    held = ray.get([c.ping.remote() for c in rc.actors.collectors])
    assert all(0 < v <= published[-1] for v in held)
    for name in ("collector-0", "collector-1"):
        versions = [v for n, v, _ in recorder.collected if n == name]
        assert len(versions) >= 3 and versions == sorted(versions) and versions[-1] > 0
    batch = ray.get(rc.actors.buffer.sample.remote(256, ctx.train_iter))
    assert batch["policy_version"].min() >= -1 and batch["policy_version"].max() > 0
    assert (batch["collect_iter"] == np.maximum(batch["policy_version"], 0)).all()
    assert recorder.evaluated and ctx.last_eval_iter > 0  # eval_freq 40: the evaluator ran
    # the learner trained on data some versions old: the lag is measured for result.json
    lag = rc.summary()["policy_lag"]
    assert 0 <= lag["median"] <= lag["p95"] and lag["p95"] > 0


def _torch_threads(worker) -> int | None:
    import sys

    return sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None


def test_every_actor_runs_torch_with_one_thread(rc):
    threads = {name: ray.get(h.__ray_call__.remote(_torch_threads)) for name, h in rc.actors.named()}
    assert threads.pop("buffer") in (None, 1)  # the buffer does not even import torch
    assert set(threads.values()) == {1}, threads


def test_rate_limiter_holds_samples_per_insert(rc):
    plan, limiter, actors = rc.plan, rc.limiter, rc.actors
    before = ray.get(actors.buffer.stats.remote())
    start = dict(sampled=limiter.sampled, inserted=limiter.inserted)
    errors = []
    run(rc, each=lambda r, ctx: errors.append(limiter.error), max_train_iter=200)
    while rc.learner.pending or rc.limiter.in_flight:  # let the last calls finish, as a new run would
        rc.learner.poll()
        time.sleep(0.05)
    after = ray.get(actors.buffer.stats.remote())
    assert max(errors) <= limiter.tolerance
    assert min(errors) >= -limiter.tolerance - plan.samples_per_insert * plan.n_sample * 2
    # The buffer's own counters agree with the limiter: every launched sample was served.
    assert after["buffer/sampled"] - before["buffer/sampled"] == limiter.sampled - start["sampled"]
    assert (
        after["buffer/pushed"] - before["buffer/pushed"]
        >= limiter.inserted - start["inserted"] - 2 * plan.n_sample
    )
    spi = limiter.sampled / (limiter.inserted - plan.min_replay_size)
    assert spi == pytest.approx(plan.samples_per_insert, abs=limiter.tolerance / limiter.inserted + 0.5)


def test_killed_collector_restarts_with_the_latest_weights(rc):
    killed, deadline = [], time.monotonic() + 120

    def kill_once_then_finish(recorder, ctx):
        assert time.monotonic() < deadline, "collector-0 did not come back"
        slot = rc.collector.pool.slots[0]
        if not killed and ctx.train_iter >= 60 and slot.ref is not None:  # a call in flight
            ray.kill(slot.handle, no_restart=False)
            killed.append((ctx.train_iter, len(recorder.collected), recorder.published[-1]))
        back = [x for x in recorder.collected[killed[0][1] :] if x[0] == "collector-0"] if killed else []
        if rc.supervisor.restarts("collector-0") and len(back) >= 3:
            current_task().finish = True  # collector-0 is back and has delivered batches again

    recorder, ctx = run(rc, each=kill_once_then_finish, max_train_iter=20000)
    assert killed and ctx.train_iter > killed[0][0]  # the run went on
    slot = rc.collector.pool.slots[0]
    assert rc.supervisor.restarts("collector-0") == 1 and slot.lost == rc.collector.pool.lost_batches <= 1
    steps = [(v, env_steps) for n, v, env_steps in recorder.collected if n == "collector-0"]
    restart = next(i for i in range(1, len(steps)) if steps[i][1] < steps[i - 1][1])  # its counter reset
    # the restarted process pulled the weights it was handed, not its own initial ones
    assert steps[restart][0] >= killed[0][2] > 0
    other = [x for x in recorder.collected if x[0] == "collector-1"]
    assert len(other) > len(steps) // 2  # collector-1 kept going meanwhile


def test_killed_evaluator_restarts_and_evaluates_the_latest_weights(rc):
    killed, deadline = [], time.monotonic() + 120

    def kill_mid_eval_then_finish(recorder, ctx):
        assert time.monotonic() < deadline, "the evaluator did not come back"
        if not killed and recorder.evaluated and rc.evaluator.pending:
            ray.kill(rc.actors.evaluator, no_restart=False)
            killed.append((ctx.train_iter, len(recorder.evaluated)))
        if killed and len(recorder.evaluated) >= killed[0][1] + 2:
            current_task().finish = True  # two evaluations since the restart

    recorder, ctx = run(rc, each=kill_mid_eval_then_finish, max_train_iter=20000)
    assert killed and ctx.train_iter > killed[0][0]  # training went on meanwhile
    before, after = recorder.evaluated[: killed[0][1]], recorder.evaluated[killed[0][1] :]
    assert after == sorted(after) and after[0] > before[-1]
    assert ray.get(rc.actors.evaluator.ping.remote()) == after[-1]  # the new process holds those weights


def scrape(port: int) -> dict[str, list[str]]:
    """``{metric name: [its sample lines]}`` and ``{metric name: [its TYPE]}`` of the ding_ray metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples: dict[str, list[str]] = {}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if line.startswith("# TYPE ray_ding_ray_"):
            samples.setdefault("TYPE " + line.split()[2], []).append(line.split()[3])
        elif name.startswith("ray_ding_ray_"):
            samples.setdefault(name, []).append(line)
    return samples


def test_metrics_reach_prometheus_once_each_tagged_with_the_experiment(rc, ray_session):
    experiment = f'experiment="{os.path.basename(rc.cfg.exp_name)}"'
    wanted = {  # metric -> the one process that exports it
        metric_name(metrics.COLLECTOR_ENV_STEPS): "collector-",  # each collector its own series
        metric_name(metrics.LEARNER_TRAIN_ITER): "learner",
        metric_name("buffer/size"): "buffer",
        metric_name(metrics.EVAL_RETURN_MEAN): "evaluator",
        metric_name(metrics.BUFFER_SAMPLES_PER_INSERT): "driver",
        metric_name(metrics.COLLECTOR_POLICY_VERSION_LAG): "driver",
        metric_name("learner/call_seconds"): "learner",
        metric_name(metrics.LEARNER_POLICY_LAG): "learner",
    }
    deadline, samples = time.monotonic() + 30, {}
    while time.monotonic() < deadline:
        samples = scrape(ray_session)
        found = {
            name: [
                s
                for s in samples.get(f"ray_{name}", [])
                + samples.get(f"ray_{name}_total", [])
                + samples.get(f"ray_{name}_bucket", [])
            ]
            for name in wanted
        }
        if all(any(experiment in line for line in lines) for lines in found.values()):
            break
        time.sleep(1)
    for name, owner in wanted.items():
        lines = [line for line in found[name] if experiment in line]  # other tests' runs share this Ray
        assert lines, (name, sorted(samples))
        assert all(f'actor="{owner}' in line for line in lines), (name, lines)
    # levels are gauges, running totals counters, call durations histograms
    types = {k[5:]: v[0] for k, v in samples.items() if k.startswith("TYPE ")}
    assert types[f"ray_{metric_name('buffer/size')}"] == "gauge"
    counter = f"ray_{metric_name(metrics.COLLECTOR_ENV_STEPS)}"
    assert types.get(counter, types.get(counter + "_total")) == "counter", types
    assert types[f"ray_{metric_name('learner/call_seconds')}"] == "histogram"
    assert types[f"ray_{metric_name(metrics.LEARNER_POLICY_LAG)}"] == "histogram"
    # every ding_ray series names an experiment
    assert all(
        'experiment="' in line and 'experiment=""' not in line
        for name, lines in samples.items()
        if not name.startswith("TYPE ")
        for line in lines
    )


def test_a_learner_that_cannot_come_back_ends_the_run_once_with_its_name(rc):
    def kill_learner(recorder, ctx):
        if ctx.train_iter > 0:
            ray.kill(rc.actors.learner)  # no_restart: Ray does not bring it back

    # Ray's own exception type, so `except RayActorError` catches it; the note names the stage
    with pytest.raises(RayActorError, match="The learner actor .* died and did not come back") as err:
        run(rc, each=kill_learner, max_train_iter=10**6)
    assert isinstance(err.value, ActorDiedError) and "resume=" in str(err.value)
    assert any("raised in stage" in note for note in err.value.__notes__)
