"""What a Ray run still has in flight when its budget ends is waited for and counted, as DI-engine's
loop, whose training and evaluations are synchronous, leaves nothing unfinished:

- the learner's last train calls (it runs them before the run's last checkpoint either way):
  result.json, the last checkpoint's folder and its meta.json agree on ``train_iter``;
- the evaluation in flight: a run that ends before its iteration-0 evaluation comes back still
  reports it (before, ``best_eval_return`` was None and TensorBoard had no evaluation);
- a restart of the learner that no call has revealed yet (it died after its last call): it is
  recorded, and the counters are the restarted learner's (before, result.json kept the iterations
  the restart lost, and the final checkpoint held fewer than its folder's name said).
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path

import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config, ray_pipeline
from ding_ray.entry.plot import read_curve
from ding_ray.framework import pipelines
from ding_ray.framework.middleware import termination_checker
from tests.distributed.configs import small_config

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def short_run(ray_session, tmp_path_factory) -> tuple[str, dict, dict]:
    """A run of 600 env steps whose first evaluation outlasts its training: (exp_name, main, create).
    The damaged-buffer test below changes its folder after the first test has read it."""
    exp_name = str(tmp_path_factory.mktemp("run_end") / "short")
    main, create = small_config(exp_name)
    # 40 episodes of the untrained policy take longer than the whole run's training (600 env steps)
    main["env"].update(evaluator_env_num=2, n_evaluator_episode=40)
    ray_pipeline((main, create), seed=0, max_env_step=600)
    return exp_name, main, create


def test_a_run_shorter_than_its_first_evaluation_reports_it_and_counts_each_train_call(short_run):
    exp_name = short_run[0]
    with open(os.path.join(exp_name, "result.json")) as f:
        result = json.load(f)
    assert result["stop"] is False and result["env_steps"] >= 600
    assert result["best_eval_return"] is not None and result["last_eval_return"] is not None
    curve = read_curve(exp_name)  # the evaluation reached TensorBoard, at the env step of its weights
    assert curve.x[0] == 0 and curve.y[-1] == pytest.approx(result["last_eval_return"])

    folder = result["last_checkpoint"]
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    assert result["train_iter"] > 0
    assert meta["train_iter"] == result["train_iter"]  # what the learner trained, counted by both
    assert os.path.basename(folder) == f"iter_{result['train_iter']:08d}"
    assert meta["evaluator"]["best_return"] == result["best_eval_return"]


def test_each_checkpoint_folder_is_named_after_the_iteration_its_learner_file_holds(ray_session, tmp_path):
    """The learner may be train calls ahead of the driver's count when a checkpoint is due: the
    folder takes the iteration of the weights written into it, not the driver's."""
    exp_name = str(tmp_path / "periodic")
    main, create = small_config(exp_name, sample_prefetch=3)
    main["checkpoint"] = dict(freq=8, keep=100)
    ray_pipeline((main, create), seed=0, max_env_step=1500)
    folders = sorted((tmp_path / "periodic" / "checkpoints").glob("iter_*"))
    assert len(folders) >= 3
    for folder in folders:
        meta = _meta(str(folder))
        assert folder.name == f"iter_{meta['train_iter']:08d}", (folder.name, meta["train_iter"])


def _meta(folder: str) -> dict:
    with open(os.path.join(folder, "meta.json")) as f:
        return json.load(f)


def test_a_learner_restart_no_call_revealed_before_the_end_is_recorded(ray_session, tmp_path):
    from ding_ray.configs.cartpole_ppo import create_config, main_config

    main = copy.deepcopy(main_config)
    main["exp_name"], main["checkpoint"] = str(tmp_path / "ppo"), dict(freq=10)
    main.setdefault("ray", {})["progress_bar"] = False
    main["env"]["stop_value"] = 1e9  # the run ends at its iteration budget
    cfg = compile_ray_config((main, create_config), seed=0, save_cfg=False)
    killed = []

    def kill_after_the_last_round(ctx):
        if killed or ctx.train_iter < 40:
            return
        learner = rc.actors.learner
        before = ray.get(learner.instance.remote(), timeout=60)["id"]
        ray.kill(learner, no_restart=False)
        killed.append(ctx.train_iter)
        deadline = time.monotonic() + 60
        # the kill has landed once another process answers (a call Ray retries waits for it)
        while time.monotonic() < deadline:
            if ray.get(learner.instance.options(max_task_retries=-1).remote(), timeout=60)["id"] != before:
                break
            time.sleep(0.05)

    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        pipelines.on_policy(task, cfg, rc)  # no budget of its own: the checker goes after the kill
        task.use(kill_after_the_last_round)
        task.use(termination_checker(max_train_iter=40, at_budget=True))
        task.run()
    result = rc.result
    assert killed == [40] and result.get("error") is None
    (event,) = result["recoveries"]
    assert event["actor"] == "learner"
    restored = _meta(event["restored_from"])["train_iter"]
    assert event["lost_train_iters"] == 40 - restored
    # what the restarted learner holds, counted by result.json and written by the last checkpoint
    assert result["train_iter"] == restored == _meta(result["last_checkpoint"])["train_iter"]


def test_a_ray_resume_whose_buffer_file_is_damaged_fails_in_one_line_and_changes_nothing(short_run):
    """The buffer actor reads the damaged file in its constructor: the run ends with the error's
    own line (not Ray's traceback text), and the run folder is left byte for byte as it was."""
    exp_name, main, create = short_run
    folder = Path(exp_name)
    (buffer_file,) = (folder / "checkpoints").glob("iter_*/buffer.msgpack")
    data = bytearray(buffer_file.read_bytes())
    data[len(data) // 2] ^= 1
    buffer_file.write_bytes(bytes(data))
    before = {p: p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}
    with pytest.raises(Exception) as caught:  # noqa: B017 - whatever its type: its text is checked
        ray_pipeline((main, create), seed=0, max_env_step=1200, resume=exp_name)
    message = str(caught.value)
    assert "\n" not in message and "\x1b" not in message, message
    assert "buffer.msgpack does not match the size and sha256" in message
    after = {p: p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}
    assert after == before
