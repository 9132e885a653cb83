"""Bad envs inside the collector and evaluator actors behave as they do in one process: an env whose
step always fails ends the call with its cause (no endless loop), an inf evaluation return is a
failed episode (no stop, no new ckpt_best; counted on the Ray dashboard), a misshapen observation
is refused by name, an env whose first reset hangs is named as what holds the run up, and an env's
error reaches ``ding-ray train --mode ray`` and result.json as the one line it is in one process."""

from __future__ import annotations

import math
import os
import re
import time
import urllib.request

import pytest
import ray

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs (here and in the actors)
from ding_ray.distributed.actors import CollectorActor, EvaluatorActor
from ding_ray.distributed.metrics import metric_name
from ding_ray.entry import compile_ray_config, ray_pipeline
from ding_ray.errors import EnvError, ShapeError, StageError
from ding_ray.worker import metrics
from tests.bad_input.configs import CREATE, small_main
from tests.distributed.test_fit_cpus import run_fresh
from tests.distributed.test_ray_pipeline import read_result

pytestmark = pytest.mark.ray
CALL_S = 120  # bound on any call: before the fix the collector's never returned


class BadEnvCollector(CollectorActor):
    """A collector actor whose process imports this module, and so has the BadInput envs."""


class BadEnvEvaluator(EvaluatorActor):
    """An evaluator actor whose process imports this module, and so has the BadInput envs."""


def metric_lines(port: int, name: str) -> list[str]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return [line for line in text.splitlines() if line.startswith("ray_" + name)]


def ray_cfg(tmp_path, **env):
    return compile_ray_config((small_main(str(tmp_path / "exp"), env=env), CREATE), seed=0, save_cfg=False)


def test_a_collector_actor_whose_env_always_fails_ends_its_call_with_the_cause(ray_session, tmp_path):
    cfg = ray_cfg(tmp_path, env_id="BadInputBrokenStep-v0", kwargs=dict(mistake="str_reward"))
    actor = ray.remote(num_cpus=0.5)(BadEnvCollector).remote(cfg, 0)
    try:
        with pytest.raises(EnvError) as err:  # Ray's task error is also an EnvError
            ray.get(actor.collect_batch.remote(None)[0], timeout=CALL_S)
    finally:
        ray.kill(actor)
    assert "failed in step 5 times in a row" in str(err.value)
    assert "reward is a str ('1.0'), not a number" in str(err.value)


def test_an_evaluator_actor_counts_an_inf_return_as_failed_and_keeps_its_best(ray_session, tmp_path):
    cfg = ray_cfg(
        tmp_path, env_id="BadInputNonFinite-v0", kwargs=dict(bad_every=10, length=10), stop_value=100
    )
    actor = ray.remote(num_cpus=0.5)(BadEnvEvaluator).remote(cfg)
    best = os.path.join(cfg.exp_name, "ckpt", "ckpt_best.pth.tar")
    try:
        first = ray.get(actor.evaluate.remote(None, 1, 100), timeout=CALL_S)  # return 10
        saved = os.stat(best).st_mtime_ns
        second = ray.get(actor.evaluate.remote(None, 2, 200), timeout=CALL_S)  # return inf
    finally:
        ray.kill(actor)
    assert first[metrics.EVAL_RETURN_MEAN] == 10 and first[metrics.EVAL_NONFINITE_EPISODES] == 0
    assert second["stop"] is False and second["best_return"] == 10
    assert math.isnan(second[metrics.EVAL_RETURN_MEAN]) and second[metrics.EVAL_NONFINITE_EPISODES] == 1
    assert os.stat(best).st_mtime_ns == saved  # ckpt_best is still the first evaluation's
    # the count is a counter on the Ray dashboard, tagged with the actor and the experiment
    name, deadline = metric_name(metrics.EVAL_NONFINITE_EPISODES), time.monotonic() + 30
    while not (lines := metric_lines(ray_session, name)):
        assert time.monotonic() < deadline, f"{name} never reached Prometheus"
        time.sleep(0.5)
    assert any('actor="evaluator"' in ln and ln.endswith(" 1.0") for ln in lines), lines


def test_an_evaluator_actor_refuses_a_misshapen_observation_by_name(ray_session, tmp_path):
    cfg = ray_cfg(tmp_path, env_id="BadInputShapeShift-v0")
    actor = ray.remote(num_cpus=0.5)(BadEnvEvaluator).remote(cfg)
    try:
        with pytest.raises(ShapeError, match=r"observation of shape \(5,\) at step 3 of its episode"):
            ray.get(actor.evaluate.remote(None, 1, 100), timeout=CALL_S)
    finally:
        ray.kill(actor)


def test_a_collector_whose_env_reset_hangs_is_reported_as_stuck_in_its_constructor(ray_session, tmp_path):
    """Not as a lack of resources: Ray placed the actor, and its env's first reset never returns."""
    env = dict(env_id="BadInputHanging-v0", kwargs=dict(marker=None, hang_at=0, hang_s=CALL_S))
    main = small_main(str(tmp_path / "hang"), env=env)
    # long enough for the learner to start on a busy machine (it is waited for with the same timeout)
    main["ray"] = dict(num_collectors=1, actor_start_timeout_s=30.0, progress_bar=False)
    start = time.monotonic()
    with pytest.raises(StageError) as err:
        ray_pipeline((main, CREATE), seed=0, max_env_step=1000)
    assert time.monotonic() - start < CALL_S  # the hang did not end by itself
    message = str(err.value)
    assert "No collector actor started within 30 s (ray.actor_start_timeout_s)" in message
    assert re.search(r"Placed on a node and still in its constructor: collector-0 \(pid \d+\)", message)
    assert "It creates its 2 envs (env 'BadInputHanging-v0') and resets each once" in message
    assert "check that the env's creation and its reset() return" in message
    assert "raise ray.actor_start_timeout_s if it only starts slowly" in message
    assert "Waiting for a node" not in message and "Resources free" not in message
    assert "Placed on a node" in read_result(main["exp_name"])["error"]


BROKEN_RUN = """
from tests.bad_input.configs import CREATE, small_main

env = dict(env_id="BadInputBrokenStep-v0", kwargs=dict(mistake="str_reward"))
main_config = small_main("broken", env=env, ray=dict(num_collectors=1, num_cpus=2, progress_bar=False))
create_config = CREATE
"""


def test_an_env_error_in_a_collector_actor_reaches_the_command_line_as_one_line(tmp_path):
    """Not as Ray's coloured traceback of the actor with the error at its end: that goes to the log."""
    (tmp_path / "broken.py").write_text(BROKEN_RUN)
    argv = ["train", "broken.py", "--mode", "ray", "--import", "tests.bad_input.envs"]
    proc = run_fresh(["-m", "ding_ray.entry.cli", *argv, "--max-env-step", "1000"], cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ding-ray: error: Stage 'collector' failed: EnvError: env 0 "), last
    assert "The env's reward is a str ('1.0'), not a number" in last
    assert "RayTaskError" not in last and "\x1b" not in last and "ray::" not in last
    assert "EnvError raised in a Ray actor:\nray::CollectorActor.collect()" in proc.stderr  # the log
    error = read_result(str(tmp_path / "broken_seed0"))["error"]
    assert error == "StageError: " + last.removeprefix("ding-ray: error: ")
    assert "\n" not in error  # one line in result.json too
