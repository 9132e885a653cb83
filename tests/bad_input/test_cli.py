"""User mistakes on the ``ding-ray`` command line end with one ``ding-ray: error:`` line and exit
code 1, never a traceback, and leave nothing behind: a value that is None, out of range or of the
wrong kind, a bad budget or seed, an unusable exp_name, and ``ding-ray eval`` of weights that belong
to another model (a failed evaluation leaves no folder)."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.entry.cli import main as cli
from ding_ray.policy import DQNPolicy
from tests.bad_input.configs import CREATE, small_main
from tests.bad_input.test_run_folder import _snapshot


def user_error(capsys, argv: list[str]) -> str:
    """The one error line of ``ding-ray argv``, which must exit with 1 and no traceback."""
    assert cli(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("ding-ray:")]
    assert len(lines) == 1 and lines[0] == err.strip().splitlines()[-1], err
    assert lines[0].startswith("ding-ray: error: ")
    return lines[0].removeprefix("ding-ray: error: ")


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--set", "policy.learn=5"],
            "Config key 'policy.learn' is a section (dict), got int 5: give a dict",
        ),
        (["--set", "policy.learn=None"], "Config key 'policy.learn' is a section (dict), got NoneType None"),
        (["--set", "checkpoint=None"], "Config key 'checkpoint' is a section (dict), got NoneType None"),
        (["--set", "policy.learn.batch_size=None"], "Config key 'policy.learn.batch_size' cannot be None"),
        (
            ["--set", "policy.learn.learning_rate=None"],
            "Config key 'policy.learn.learning_rate' cannot be None",
        ),
        (["--seed", "-1"], "Config key 'seed' must be in [0, 4.29497e+09], got -1."),
        (["--set", "env.stop_value=abc"], "Config key 'env.stop_value' must be a number, got str 'abc'."),
        (["--set", "policy.discount_factor=1.5"], "Config key 'policy.discount_factor' must be in [0, 1]"),
        (
            ["--set", "policy.learn.learning_rate=-1e-3"],
            "Config key 'policy.learn.learning_rate' must be > 0, got -0.001.",
        ),
        (
            ["--set", "env.collector_env_num=1e6"],
            "Config key 'env.collector_env_num' must be in [1, 1024], got 1000000",
        ),
        (
            ["--set", "policy.other.replay_buffer.replay_buffer_size=1e12"],
            "Config key 'policy.other.replay_buffer.replay_buffer_size' must be in [1, 1e+08], got 1",
        ),
        (
            ["--set", "policy.collect.n_sample=1e12"],
            "Config key 'policy.collect.n_sample' must be in [1, 1e+07], got 1000000000000",
        ),
        (["--max-env-step", "-5"], "--max-env-step must be >= 1, got -5; leave it out for no budget."),
        (["--max-train-iter", "0"], "--max-train-iter must be >= 1, got 0"),
        (["--set", "exp_name="], "Config key 'exp_name' is empty"),
        (["--set", "exp_name=" + "x" * 300], "Config key 'exp_name' has a folder name of 300 bytes"),
        (
            ["--set", "policy.batch_size=32"],
            "Unknown config key 'policy.batch_size'. Did you mean 'policy.learn",
        ),
        (["--set", "create_config.policy.type=DQN"], "Unknown policy type 'DQN'. Did you mean 'dqn'"),
    ],
)
def test_a_train_mistake_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert user_error(capsys, ["train", "cartpole_dqn", *args]).startswith(message)
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A short serial run of the suite's small DQN, with its checkpoints."""
    exp = str(tmp_path_factory.mktemp("runs") / "r1")
    serial_pipeline((small_main(exp, checkpoint=dict(freq=0)), CREATE), seed=0, max_train_iter=20)
    return exp


@pytest.fixture
def run(finished_run, tmp_path):
    exp = str(tmp_path / "r1")
    shutil.copytree(finished_run, exp)
    return exp


def test_eval_of_another_models_weights_is_one_line_and_leaves_no_folder(run, capsys):
    wider = DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[32])))
    other = os.path.join(run, "ckpt", "other_model.pth.tar")
    torch.save(wider.learn_mode.state_dict(), other)
    before = _snapshot(run)
    for _ in range(3):
        message = user_error(capsys, ["eval", other])
        assert message.startswith(f"The weights in {other} do not fit the config's dqn model (")
        assert "size mismatch for encoder.mlp.layers.0.weight" in message
        assert message.endswith("Pass the config of the run that wrote them.")
    assert _snapshot(run) == before  # no eval folder left behind by the three failures


def test_eval_of_a_run_checkpoints_learner_file_evaluates_its_policy(run, capsys):
    learner = os.path.join(run, "checkpoints", "iter_00000020", "learner.pth")
    assert cli(["eval", learner]) == 0
    assert "mean evaluation return over 1 episodes: 10" in capsys.readouterr().out
