"""What a user trips over in the first hour (issue 27): a resume through an example keeps the run's
seed and budget, a resumed run's rates count only its own steps, checkpoints come every
``checkpoint.every_s`` seconds too, and Ctrl-C ends an example with one line and exit status 130."""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ding_ray.config import compile_config
from ding_ray.configs.cartpole_dqn import create_config, main_config
from ding_ray.entry import serial_pipeline
from ding_ray.entry.cli import main as cli_main
from ding_ray.entry.cli_commands import settle_run_args
from ding_ray.errors import ConfigError
from ding_ray.utils.checkpoint import CheckpointSchedule, CheckpointStore
from ding_ray.utils.result import write_result
from tests.distributed.conftest import with_ctrl_c

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "cartpole_ppo.py")


def _example(cwd, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run(
        [sys.executable, EXAMPLE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def test_an_example_resumed_without_flags_keeps_the_runs_seed_and_budget_and_counts_its_own_rate(tmp_path):
    first = _example(tmp_path, "--seed", "4", "--max-env-step", "256")
    assert first.returncode == 0, first.stderr[-3000:]
    exp = str(tmp_path / "cartpole_ppo_seed4")
    ran = _json(os.path.join(exp, "result.json"))
    assert ran["seed"] == 4 and ran["env_steps"] >= 256

    resumed = _example(tmp_path, "--resume", "cartpole_ppo_seed4")  # no --seed, no --max-env-step
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    result = _json(os.path.join(exp, "result.json"))
    assert result["resumed_from"] == CheckpointStore(exp).latest().folder
    # the run's seed, not the example's default 0, in result.json and total_config.json
    assert result["seed"] == 4 and _json(os.path.join(exp, "total_config.json"))["seed"] == 4
    # the run's budget of 256 env steps was spent already: nothing more (the default is 100,000)
    assert result["env_steps"] == ran["env_steps"] and result["train_iter"] == ran["train_iter"]
    # a resumed process that collected nothing ran at 0 env steps/s, whatever the counters say
    assert result["env_steps_per_s"] == 0.0 and result["train_iter_per_s"] == 0.0, result


def test_the_settled_seed_and_budget_given_run_own_default(tmp_path):
    exp = str(tmp_path / "run")
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = exp
    serial_pipeline((cfg, create_config), seed=3, max_env_step=200)

    def settle(**given):
        args = argparse.Namespace(**{"seed": None, "max_env_step": None, "max_train_iter": None, **given})
        settle_run_args(args, max_env_step=30_000)
        return args.seed, args.max_env_step, args.max_train_iter

    assert settle(resume=None) == (0, 30_000, None)  # a new run: the script's defaults
    assert settle(resume=exp) == (3, 200, None)  # the resumed run's own
    assert settle(resume=exp, seed=7, max_env_step=900) == (7, 900, None)  # the command line wins


def test_ding_ray_train_resume_without_a_config_keeps_the_budget(tmp_path, capsys):
    exp = str(tmp_path / "run")
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = exp
    serial_pipeline((cfg, create_config), seed=2, max_env_step=200)
    before = _json(os.path.join(exp, "result.json"))
    assert cli_main(["train", "--resume", exp]) == 0
    out = capsys.readouterr().out
    assert "seed 2, 200 env steps" in out, out  # it said "no env step budget" and trained on
    assert _json(os.path.join(exp, "result.json"))["env_steps"] == before["env_steps"]


def test_result_rates_count_only_the_steps_since_the_resume(tmp_path):
    record = write_result(
        str(tmp_path),
        env_steps=86_872,
        train_iter=5_000,
        best_eval_return=None,
        last_eval_return=None,
        stop=False,
        wall_s=23.3,
        env_steps_before=46_296,
        train_iter_before=2_670,
    )
    assert record["env_steps_per_s"] == round((86_872 - 46_296) / 23.3, 1)  # 1,741.5, not 3,728.4
    assert record["train_iter_per_s"] == round((5_000 - 2_670) / 23.3, 1)


def test_a_checkpoint_is_due_after_every_s_seconds_or_freq_iterations_whichever_first():
    now = [0.0]
    schedule = CheckpointSchedule(dict(freq=100, every_s=60.0), train_iter=250, clock=lambda: now[0])
    assert not schedule.due(299)
    assert schedule.due(300)  # freq first
    schedule.done(300)
    now[0] = 59.0
    assert not schedule.due(310)
    now[0] = 60.0
    assert schedule.due(310)  # every_s first
    schedule.done(310)
    assert not schedule.due(399) and schedule.due(400)
    only_freq = CheckpointSchedule(dict(freq=100, every_s=0), clock=lambda: 1e9)
    assert not only_freq.due(99)
    only_time = CheckpointSchedule(dict(freq=0, every_s=5.0), clock=lambda: now[0])
    assert not only_time.due(10**9)
    now[0] += 5.0
    assert only_time.due(0)


def test_a_serial_run_shorter_than_checkpoint_freq_checkpoints_every_s(tmp_path):
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = exp = str(tmp_path / "run")
    cfg["checkpoint"] = dict(freq=10_000, every_s=0.05)  # the run ends long before 10,000 iterations
    serial_pipeline((cfg, create_config), seed=0, max_env_step=1_000)
    result = _json(os.path.join(exp, "result.json"))
    assert result["train_iter"] < 10_000
    # some during the run, one at its end (freq alone: only the one at the end)
    assert result["checkpoints_saved"] >= 3, result
    assert CheckpointStore(exp).latest().meta["budget"] == dict(max_env_step=1_000, max_train_iter=None)


@pytest.mark.parametrize("every_s", [-1, float("nan")])
def test_checkpoint_every_s_out_of_range_is_refused_by_name(tmp_path, every_s):
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = str(tmp_path / "run")
    cfg["checkpoint"] = dict(every_s=every_s)
    with pytest.raises(ConfigError, match=r"checkpoint\.every_s"):
        compile_config(cfg, create_cfg=create_config, save_cfg=False)


def test_ctrl_c_ends_an_example_with_one_line_and_exit_status_130(tmp_path):
    env = {**os.environ, "PYTHONPATH": REPO}
    args = ["--max-env-step", "1000000", "--set", "env.stop_value=100000", "checkpoint.every_s=0.5"]
    proc = subprocess.Popen(
        with_ctrl_c([sys.executable, EXAMPLE, *args]),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    store = CheckpointStore(str(tmp_path / "cartpole_ppo_seed0"))
    deadline = time.monotonic() + 180
    while store.latest() is None and time.monotonic() < deadline:  # training is under way
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("cartpole_ppo.py: interrupted"), err[-3000:]
    result = _json(str(tmp_path / "cartpole_ppo_seed0" / "result.json"))
    assert result["error"].startswith("KeyboardInterrupt") and result["last_checkpoint"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
