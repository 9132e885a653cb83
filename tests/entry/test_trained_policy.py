"""``ding_ray.load_policy`` and ``ding-ray export``: the actions of a loaded or exported policy are
those of the trained policy, run as a user would (config, ``create_policy``, ``load_checkpoint``,
``eval_mode.forward`` and the env's own action mapping), on observations of the real env."""

from __future__ import annotations

import json
import os
import re
import shutil

import gymnasium as gym
import numpy as np
import pytest
import torch

import ding_ray
from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.configs import load_config
from ding_ray.entry import cli, serial_pipeline, serial_pipeline_onpolicy
from ding_ray.entry.export import export_policy, load_exported
from ding_ray.envs import GymnasiumEnv
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError, DataFormatError, DingRayError, ShapeError
from ding_ray.policy import create_policy
from ding_ray.worker.learner import load_checkpoint

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")

# bundled config, its pipeline, env steps, overrides: tiny runs, each a few seconds
RUNS = {
    "dqn": ("cartpole_dqn", serial_pipeline, 400, {}),
    "ppo": ("cartpole_ppo", serial_pipeline_onpolicy, 512, {"policy.obs_norm": True}),
    "ppo_pendulum": ("pendulum_ppo", serial_pipeline_onpolicy, 800, {"policy.obs_norm": True}),
    "sac": (
        "pendulum_sac",
        serial_pipeline,
        200,
        {"policy.random_collect_size": 64, "policy.learn.batch_size": 32},
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run folders of tiny trainings (``cartpole_dqn_seed0`` is the README's)."""
    root = tmp_path_factory.mktemp("trained")
    folders = {}
    for key, (name, pipeline, steps, overrides) in RUNS.items():
        bundled = load_config(name)
        main = bundled.main_config
        main.exp_name = str(root / f"{name}_seed0")
        main.env.update(evaluator_env_num=1, n_evaluator_episode=1)
        for path, value in overrides.items():
            node = main
            *parents, leaf = path.split(".")
            for part in parents:
                node = node[part]
            node[leaf] = value
        pipeline((main, bundled.create_config), seed=0, max_env_step=steps)
        folders[key] = main.exp_name
    return root, folders


def source(runs, key: str) -> str:
    """The run folder (its best checkpoint: iteration 0's in runs this short), or for PPO its final
    checkpoint file, whose observation statistics have seen the collected data."""
    folder = runs[1][key]
    return os.path.join(folder, "ckpt", "ckpt_final.pth.tar") if key.startswith("ppo") else folder


def observations(env_id: str, n: int = 48) -> np.ndarray:
    """Observations of the real env under random actions."""
    env = gym.make(env_id)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return np.asarray(seen, dtype=np.float32)


class ActionRecorder(gym.Wrapper):
    """Keeps each action the gymnasium env is stepped with, and leaves the game where it is (only the
    action is wanted, and a game given a tensor torque warns of its reward's type)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.actions = []

    def reset(self, **kwargs):
        self.obs, info = super().reset(**kwargs)
        return self.obs, info

    def step(self, action):
        self.actions.append(action)
        return self.obs, 0.0, False, False, {}


def original_actions(run_dir: str, state: dict, obs: np.ndarray) -> list:
    """What a user wrote before ``load_policy``: the eval forward per env, then the env's mapping
    (the action ``GymnasiumEnv.step`` hands the gymnasium env)."""
    main, create = split_input_cfg(os.path.join(run_dir, "total_config.json"))
    cfg = compile_config(main, create_cfg=create, auto=True, save_cfg=False)
    recorder = ActionRecorder(gym.make(cfg.env.env_id))
    env = GymnasiumEnv(cfg.env, env=recorder)
    fill_model_shapes(cfg, env.observation_space, env.action_space)
    policy = create_policy(cfg.policy, enable_field=["eval"])
    policy.eval_mode.load_state_dict(state)
    out = policy.eval_mode.forward({i: o for i, o in enumerate(obs)})
    env.reset()
    for i in range(len(obs)):
        env.step(out[i]["action"])
    env.close()
    return recorder.actions


def assert_same_actions(got, want: list) -> None:
    want = np.asarray(want)
    assert np.shape(got) == want.shape
    if want.dtype.kind in "iu":
        assert np.array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("key", list(RUNS))
def test_act_is_the_trained_policy_on_real_observations(runs, key):
    _, folders = runs
    trained = ding_ray.load_policy(source(runs, key))
    assert trained.source.endswith("ckpt_final.pth.tar" if key.startswith("ppo") else "ckpt_best.pth.tar")
    obs = observations(trained.cfg.env.env_id)
    want = original_actions(folders[key], load_checkpoint(trained.source), obs)
    assert_same_actions(trained.act(obs), want)  # batched
    one = trained.act(obs[5])  # unbatched: what env.step takes
    if key in ("dqn", "ppo"):
        assert isinstance(one, int) and one == want[5]
    else:
        assert one.shape == (1,) and np.allclose(one, want[5], atol=1e-5)
    if key.startswith("ppo"):  # the observation statistics came with the weights
        assert trained.cfg.policy.obs_norm and trained.policy.eval_mode.get_attribute("obs_norm").count > 0
    if key == "sac":  # tanh actions mapped onto Pendulum's [-2, 2], as env.act_scale does
        assert trained.module.scaled and np.allclose(trained.module.action_half_width.numpy(), 2.0)
    with pytest.raises(ShapeError, match="one observation of shape"):
        trained.act(np.zeros(7))


@pytest.mark.parametrize("fmt", ["torchscript", "onnx"])
@pytest.mark.parametrize("key", list(RUNS))
def test_export_acts_as_the_trained_policy(runs, tmp_path, key, fmt, capsys):
    _, folders = runs
    out = str(tmp_path / ("policy.onnx" if fmt == "onnx" else "policy.pt"))
    assert cli.main(["export", source(runs, key), out]) == 0
    assert f"to {out}: obs float32" in capsys.readouterr().out
    trained = ding_ray.load_policy(source(runs, key))
    obs = observations(trained.cfg.env.env_id)
    run = load_exported(out, fmt)
    want = original_actions(folders[key], load_checkpoint(trained.source), obs)
    assert_same_actions(run(obs), want)
    assert_same_actions(run(obs[:1]), want[:1])  # the batch axis is free
    if fmt == "torchscript":  # what goes in and out, in the file
        files = {"ding_ray.json": ""}
        torch.jit.load(out, _extra_files=files)
        info = json.loads(files["ding_ray.json"])
        assert info["obs_norm"] == key.startswith("ppo") and info["env_id"] == trained.cfg.env.env_id


def test_a_run_without_ckpt_files_acts_from_its_latest_run_checkpoint(runs, tmp_path):
    _, folders = runs
    run_dir = shutil.copytree(folders["ppo_pendulum"], tmp_path / "run")
    shutil.rmtree(run_dir / "ckpt")
    trained = ding_ray.load_policy(run_dir)
    assert re.search(r"checkpoints/iter_\d+/learner\.pth$", trained.source)
    state = torch.load(trained.source, weights_only=True)["policy"]
    obs = observations("Pendulum-v1")
    assert_same_actions(trained.act(obs), original_actions(str(run_dir), state, obs))
    # the run checkpoint file itself, too
    assert_same_actions(ding_ray.load_policy(trained.source).act(obs), trained.act(obs))
    shutil.rmtree(run_dir / "checkpoints")
    with pytest.raises(ConfigError, match="holds no checkpoint"):
        ding_ray.load_policy(run_dir)


def test_a_checkpoint_file_alone_takes_config(runs, tmp_path):
    _, folders = runs
    ckpt = shutil.copy(os.path.join(folders["dqn"], "ckpt", "ckpt_final.pth.tar"), tmp_path)
    with pytest.raises(ConfigError, match="pass config="):
        ding_ray.load_policy(ckpt)
    obs = observations("CartPole-v1")
    want = ding_ray.load_policy(os.path.join(folders["dqn"], "ckpt", "ckpt_final.pth.tar")).act(obs)
    config = os.path.join(folders["dqn"], "total_config.json")
    assert_same_actions(ding_ray.load_policy(ckpt, config=config).act(obs), want)
    assert_same_actions(ding_ray.load_policy(ckpt, config="cartpole_dqn").act(obs), want)
    with pytest.raises(ConfigError, match="do not fit the config's ppo model"):
        ding_ray.load_policy(ckpt, config="cartpole_ppo")


class _Payload:
    def __reduce__(self):
        return (print, ("this ran while loading",))


def test_checkpoints_load_weights_only(runs, tmp_path, capsys):
    _, folders = runs
    ckpt = tmp_path / "ckpt" / "ckpt_best.pth.tar"
    ckpt.parent.mkdir()
    shutil.copy(os.path.join(folders["dqn"], "total_config.json"), tmp_path)
    state = torch.load(os.path.join(folders["dqn"], "ckpt", "ckpt_final.pth.tar"), weights_only=True)
    torch.save({**state, "extra": _Payload()}, ckpt)
    with pytest.raises(DataFormatError, match="never unpickles code"):
        ding_ray.load_policy(tmp_path)
    assert "this ran" not in capsys.readouterr().out


def test_onnx_export_without_the_extra_names_it(runs, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name)
    )
    with pytest.raises(DingRayError, match=re.escape('needs onnxruntime: pip install "ding_ray[onnx]"')):
        export_policy(runs[1]["dqn"], str(tmp_path / "p.onnx"))
    assert cli.main(["export", runs[1]["dqn"], str(tmp_path / "p.onnx")]) == 1  # one line, exit 1


def test_the_readme_example_runs(runs, monkeypatch):
    """The README's "Using a trained policy" snippet, as written, on a run named as it names."""
    with open(README) as f:
        section = f.read().split("## Using a trained policy", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(runs[0])
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    assert isinstance(namespace["action"], int) and namespace["actions"].shape == (8,)
