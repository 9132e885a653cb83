"""The ``ding-ray`` command, run for real in subprocesses: train, eval, plot, list and the errors."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

from ding_ray.configs import list_configs, load_config
from ding_ray.entry.cli_commands import parse_override

TRAIN_STEPS = 1500  # CartPole DQN: about 700 train iterations, 3-4 evaluations, a few seconds


def ding_ray(*args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ding_ray.entry.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """One ``ding-ray: error:`` line, no traceback, exit code 1."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ding-ray: error: ")
    for fragment in fragments:
        assert fragment in last


def read_png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two seeds of the bundled CartPole DQN, trained with a tiny budget through the command."""
    cwd = tmp_path_factory.mktemp("cli")
    outs = []
    for seed in (3, 4):
        proc = ding_ray(
            "train",
            "cartpole_dqn",
            "--seed",
            str(seed),
            "--max-env-step",
            str(TRAIN_STEPS),
            "--set",
            "policy.learn.learning_rate=5e-4",
            "env.n_evaluator_episode=2",
            cwd=cwd,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout)
    return cwd, outs


def test_help_documents_every_subcommand(tmp_path):
    top = ding_ray("--help", cwd=tmp_path)
    assert top.returncode == 0
    for command in ("train", "eval", "plot", "list"):
        assert command in top.stdout
    options = {
        "train": ["CONFIG", "--seed", "--mode", "--address", "--max-env-step", "--resume", "--set"],
        "eval": ["CKPT", "--config", "--episodes", "--video"],
        "plot": ["EXP_DIR", "--x", "--out", "--spread"],
        "list": [],
    }
    for command, names in options.items():
        proc = ding_ray(command, "--help", cwd=tmp_path)
        assert proc.returncode == 0
        for name in names:
            assert name in proc.stdout, (command, name)
    assert ding_ray(cwd=tmp_path).returncode == 2  # a subcommand is required (argparse's usage error)


def test_list_names_components_and_bundled_configs(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "ding-ray")
    cmd = [script, "list"] if os.path.exists(script) else [sys.executable, "-m", "ding_ray.entry.cli", "list"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line and line[0] != " ")
    assert {"dqn", "ppo", "sac"} <= set(lines["policies"].split(", "))
    assert {"naive", "advanced"} <= set(lines["buffers"].split(", "))
    assert {"base", "subprocess"} <= set(lines["env managers"].split(", "))
    for name in list_configs():
        assert f"  {name} " in proc.stdout


def test_bundled_configs_load_and_match_the_examples():
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    for name in list_configs():
        bundled = load_config(name)
        bundled.main_config.env.env_id = "changed"  # a copy: the next load is unchanged
        assert load_config(name).main_config.env.env_id != "changed"
        path = os.path.join(examples, f"{name}.py")
        if os.path.exists(path):  # the examples' values are the tuned ones
            spec = importlib.util.spec_from_file_location(f"_example_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            assert load_config(name).main_config == module.main_config, name
            assert load_config(name).create_config == module.create_config, name


def test_parse_override_reads_python_literals_else_text():
    assert parse_override("policy.learn.learning_rate=3e-4") == (["policy", "learn", "learning_rate"], 3e-4)
    assert parse_override("policy.model.encoder_hidden_size_list=[64, 64]")[1] == [64, 64]
    assert parse_override("env.stop_value=None")[1] is None
    assert parse_override("policy.cuda=True")[1] is True
    assert parse_override("env.env_id=CartPole-v1")[1] == "CartPole-v1"


def test_parse_override_reads_a_dict_whose_quotes_ray_submit_dropped():
    # `ray submit ... --set "ray.learner_resources={'learner_node':1}"` arrives without the inner quotes
    assert parse_override("ray.learner_resources={learner_node:1}")[1] == {"learner_node": 1}
    assert parse_override("x={a:1,b:2.5,c:None,d:-1e-3}")[1] == {"a": 1, "b": 2.5, "c": None, "d": -1e-3}
    assert parse_override("x=[CartPole-v1,MountainCar-v0]")[1] == ["CartPole-v1", "MountainCar-v0"]
    assert parse_override("x={'a':1}")[1] == {"a": 1}  # the quoted form as before
    assert parse_override("x={a:1")[1] == "{a:1"  # not a literal either way: the text, for the config check


def test_train_serial_writes_the_run_and_says_where(runs):
    cwd, outs = runs
    run_dir = cwd / "cartpole_dqn_seed3"
    result = json.loads((run_dir / "result.json").read_text())
    assert TRAIN_STEPS <= result["env_steps"] < TRAIN_STEPS + 64
    assert result["pipeline"] == "serial" and result["seed"] == 3 and result["train_iter"] > 0
    config = json.loads((run_dir / "total_config.json").read_text())
    assert config["policy"]["learn"]["learning_rate"] == 5e-4  # --set, parsed as a number
    assert config["env"]["n_evaluator_episode"] == 2
    assert (run_dir / "ckpt" / "ckpt_final.pth.tar").is_file()
    for where in (
        "result.json",
        "total_config.json",
        "ckpt",
        "tensorboard --logdir",
        "ding-ray plot",
        "--resume",
    ):
        assert where in outs[0]
    assert "budget spent after" in outs[0] or "stop value reached" in outs[0]


def test_train_resume_continues_a_run_with_its_own_settings(runs):
    cwd, _ = runs
    run_dir = cwd / "cartpole_dqn_seed4"
    first = json.loads((run_dir / "result.json").read_text())
    proc = ding_ray(
        "train", "--resume", "cartpole_dqn_seed4", "--max-env-step", str(2 * TRAIN_STEPS), cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["seed"] == 4 and result["pipeline"] == "serial"  # the run's seed and mode
    assert result["resumed_from"].startswith(str(run_dir / "checkpoints" / "iter_"))
    assert result["train_iter"] > first["train_iter"] and result["env_steps"] >= 2 * TRAIN_STEPS
    config = json.loads((run_dir / "total_config.json").read_text())
    assert config["policy"]["learn"]["learning_rate"] == 5e-4  # the run's --set value, kept
    # TensorBoard: a second events file in the same folder, its points after the first one's
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(
        (run_dir / "log" / "serial").glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime
    )
    assert len(files) == 2
    steps = []
    for path in files:
        acc = EventAccumulator(str(path))
        acc.Reload()
        steps.append([e.step for e in acc.Scalars("learner/total_loss")])
    assert min(steps[1]) > max(steps[0])


def test_train_config_file_takes_the_onpolicy_pipeline(tmp_path):
    (tmp_path / "my_ppo.py").write_text(
        "from ding_ray.configs.cartpole_ppo import main_config, create_config\n"
        "main_config['exp_name'] = 'my_ppo'\n"
    )
    proc = ding_ray("train", "my_ppo.py", "--max-env-step", "512", "--seed", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "my_ppo_seed1" / "result.json").read_text())
    assert result["pipeline"] == "serial_onpolicy" and result["env_steps"] >= 512


def test_eval_a_checkpoint_of_the_run(runs):
    cwd, _ = runs
    ckpt = os.path.join("cartpole_dqn_seed3", "ckpt", "ckpt_final.pth.tar")
    proc = ding_ray("eval", ckpt, "--episodes", "2", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(li for li in proc.stdout.splitlines() if "mean evaluation return over 2 episodes" in li)
    assert 1 <= float(line.rsplit(":", 1)[1]) <= 500  # CartPole's returns
    assert (cwd / "cartpole_dqn_seed3" / "eval" / "log" / "eval").is_dir()  # beside the run


def test_eval_a_run_folder_evaluates_the_checkpoint_load_policy_takes(runs):
    cwd, _ = runs
    proc = ding_ray("eval", "cartpole_dqn_seed3", "--episodes", "2", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    best = os.path.join("cartpole_dqn_seed3", "ckpt", "ckpt_best.pth.tar")
    assert f"evaluating {best}" in proc.stdout
    by_file = ding_ray("eval", best, "--episodes", "2", cwd=cwd)
    ret = [
        next(li for li in p.stdout.splitlines() if "mean evaluation return" in li) for p in (proc, by_file)
    ]
    assert ret[0] == ret[1]  # the same weights, seed and episodes


def test_eval_video_records_or_names_the_extra(runs):
    cwd, _ = runs
    ckpt = os.path.join("cartpole_dqn_seed3", "ckpt", "ckpt_final.pth.tar")
    proc = ding_ray("eval", ckpt, "--episodes", "1", "--video", "episode.mp4", cwd=cwd)
    if importlib.util.find_spec("moviepy") is None:
        assert_user_error(proc, 'pip install "ding_ray[video]"')
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        import imageio_ffmpeg  # moviepy's own dependency

        frames, _ = imageio_ffmpeg.count_frames_and_secs(str(cwd / "episode.mp4"))
        assert frames > 1  # a whole episode, not the one-frame recording of a reset


def test_plot_one_run_and_several_seeds(runs):
    cwd, _ = runs
    proc = ding_ray("plot", "cartpole_dqn_seed3", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    png = cwd / "cartpole_dqn_seed3" / "learning_curve.png"
    assert png.stat().st_size > 1000 and min(read_png_size(png)) > 100
    proc = ding_ray(
        "plot", "cartpole_dqn_seed3", "cartpole_dqn_seed4", "--x", "wall_time", "--spread", "std",
        "--out", "curves/both.png", cwd=cwd,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert min(read_png_size(cwd / "curves" / "both.png")) > 100
    # the two seeds are one experiment: one summary line names both
    summary = next(li for li in proc.stdout.splitlines() if li.startswith("cartpole_dqn: "))
    assert "cartpole_dqn_seed3:" in summary and "cartpole_dqn_seed4:" in summary


def test_plot_says_which_events_file_is_cut_short(runs):
    cwd, _ = runs
    shutil.copytree(cwd / "cartpole_dqn_seed3", cwd / "cut_seed3")
    (events,) = (cwd / "cut_seed3" / "log").glob("serial/events.out.tfevents*")
    whole = ding_ray("plot", "cut_seed3", "--out", "whole.png", cwd=cwd)
    assert whole.returncode == 0 and "warning" not in whole.stdout, whole.stdout
    data = events.read_bytes()
    events.write_bytes(data[: len(data) - 7])  # the last record loses its end
    proc = ding_ray("plot", "cut_seed3", "--out", "cut.png", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    warning = next(li for li in proc.stdout.splitlines() if li.startswith("warning:"))
    assert str(events.relative_to(cwd)) in warning and f"of {len(data) - 7}" in warning


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["train", "no_such_config.py"], ["'no_such_config.py' does not exist"]),
        (["train", "cartpole_dq"], ["No bundled config named 'cartpole_dq'", "'cartpole_dqn'"]),
        (["train", "cartpole_dqn", "--set", "policy.learn.learning_rate"], ["--set expects key.path=value"]),
        (
            ["train", "cartpole_dqn", "--set", "policy.learn.lr=1e-3"],
            ["Unknown config key 'policy.learn.lr'"],
        ),
        (
            ["train", "cartpole_dqn", "--resume", "somewhere"],
            ["no complete checkpoint under", "start a new run"],
        ),
        (["train", "cartpole_dqn", "--address", "auto"], ["--mode ray"]),
        # --address becomes ray.address: nothing listens on port 9
        (
            ["train", "apex_dqn", "--address", "127.0.0.1:9"],
            ["Cannot reach the Ray cluster at '127.0.0.1:9'"],
        ),
        (["eval", "no_such.pth.tar"], ["'no_such.pth.tar' does not exist"]),
        (["plot", "no_such_run"], ["'no_such_run' does not exist"]),
    ],
)
def test_user_errors_are_one_line(tmp_path, args, fragments):
    assert_user_error(ding_ray(*args, cwd=tmp_path), *fragments)
    assert not (tmp_path / "cartpole_dqn_seed0" / "result.json").exists()


# An error or warning line of Ray (Python: 'WARNING file.py:N --'; C++: '[time E pid tid] file.cc')
# or of ding_ray ('13:21:03 W ding_ray.x: ...').
ALARM = re.compile(r"\b(WARNING|ERROR)\b|^\[[^\]]* [WE] \d+ \d+\]| [WE] ding_ray\.")


@pytest.mark.ray
def test_train_ray_mode_with_a_tiny_budget_prints_no_alarm_and_names_its_actors(tmp_path):
    proc = ding_ray(
        "train", "apex_dqn", "--max-env-step", "2500",
        "--set", "ray.num_collectors=2", "ray.helper_nice=0", "policy.random_collect_size=500",
        "ray.train_iters_per_call=2",  # the learner starts at 2 x 2 x 128 = 512 transitions
        cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "apex_dqn_seed0" / "result.json").read_text())
    assert result["pipeline"].startswith("ray") and result["env_steps"] >= 2500 and result["train_iter"] > 0
    assert "apex_dqn_seed0" in proc.stdout and "(ray, seed 0" in proc.stdout
    lines = re.split(r"[\r\n]+", proc.stdout + proc.stderr)  # progress bar updates end in \r
    assert [line for line in lines if ALARM.search(line)] == []
    # the driver rolls out random steps itself while the actors start, under its own name
    assert "[driver-warm-up]" in proc.stderr
    assert set(re.findall(r"\[(collector-\d+)\]", proc.stderr)) <= {"collector-0", "collector-1"}
    # the progress bar shows no evaluation return before the first evaluation has finished
    assert ", eval " in proc.stderr and "eval -inf" not in proc.stderr


@pytest.mark.ray
def test_train_ray_mode_with_a_budget_within_the_warm_up_says_what_to_set(tmp_path):
    proc = ding_ray(
        "train", "apex_dqn", "--max-env-step", "400",
        "--set", "ray.num_collectors=1", "ray.helper_nice=0", "policy.random_collect_size=600",
        "ray.train_iters_per_call=2",  # 2 x 2 x 128 = 512: the random warm-up is the larger
        cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "apex_dqn_seed0" / "result.json").read_text())["train_iter"] == 0
    warnings = [line for line in proc.stderr.splitlines() if ALARM.search(line)]
    assert len(warnings) == 1 and warnings[0].endswith(
        "max_env_step=400 ends before training starts: the first 600 env steps fill the replay buffer "
        "(policy.random_collect_size=600), so this run trains little or not at all. Set max_env_step "
        "above 600, or lower policy.random_collect_size."
    ), warnings
