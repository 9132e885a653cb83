"""DI-engine 0.5.3 loads what ``save_for_di_engine`` writes from ding_ray's DQN, PPO and SAC runs.

Each dizoo config (env type and id changed only) trains a few hundred env steps with ding_ray's
serial entry; the run's learner checkpoint is converted with ``save_for_di_engine`` and handed to
DI-engine's own Python (``data/di_engine_load_check.py``), which builds its policy from the unchanged
dizoo config and loads the file into its learn and eval modes. Its model must compute what ding_ray's
computes on the same observations (to 1e-6), and its optimizers must hold ding_ray's Adam moments,
each at the parameter it belongs to. The test needs a Python with DI-engine 0.5.3
(``DING_RAY_DI_ENGINE_PYTHON``, by default ``/tmp/dienv/bin/python``) and is skipped without one.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from ding_ray.compat.di_engine_names import layout
from ding_ray.compat.to_di_engine import save_for_di_engine, to_di_engine
from ding_ray.config import compile_config
from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy
from ding_ray.entry.trained_policy import run_config
from ding_ray.errors import DataFormatError
from ding_ray.policy import create_policy
from ding_ray.worker.learner import load_checkpoint
from tests.compat.dizoo import read_dizoo_config, wheel_root

DI_ENGINE_PYTHON = os.environ.get("DING_RAY_DI_ENGINE_PYTHON", "/tmp/dienv/bin/python")
CHECK = Path(__file__).parent / "data" / "di_engine_load_check.py"
CASES = {  # name: (dizoo config, entry, env steps, model kind)
    "dqn": ("classic_control/cartpole/config/cartpole_dqn_config.py", serial_pipeline, 200, "dqn"),
    "ppo": ("classic_control/cartpole/config/cartpole_ppo_config.py", serial_pipeline_onpolicy, 300, "vac"),
    "sac": ("classic_control/pendulum/config/pendulum_sac_config.py", serial_pipeline, 200, "qac"),
}


def train(name: str, folder: Path) -> tuple[str, dict]:
    """A short ding_ray run of the case's dizoo config; its learner checkpoint and what to check."""
    relpath, entry, env_steps, kind = CASES[name]
    main, create = read_dizoo_config(relpath)
    main.exp_name = str(folder / name)
    if "random_collect_size" in main.policy:  # SAC: a few learn steps are all the test needs
        main.policy.random_collect_size = 64
    entry((copy.deepcopy(main), create), seed=0, max_env_step=env_steps)
    checkpoint = sorted(glob.glob(str(folder / name / "ckpt" / "iteration_*.pth.tar")))[-1]
    cfg, _ = run_config(checkpoint)
    policy = create_policy(cfg.policy, enable_field=["learn", "eval"])
    state = load_checkpoint(checkpoint)
    policy.learn_mode.load_state_dict(state)
    model = policy.learn_mode.get_attribute("model")
    torch.manual_seed(0)
    obs = torch.randn(4, *([cfg.policy.model.obs_shape] if kind != "qac" else [3]))
    case = dict(kind=kind, config_file=str(wheel_root() / "dizoo" / relpath), obs=obs.tolist())
    with torch.no_grad():
        if kind == "qac":
            action = torch.rand(4, 1) * 2 - 1
            mu, sigma = model(obs, "compute_actor")["logit"]
            q = model({"obs": obs, "action": action}, "compute_critic")["q_value"]
            case["action"] = action.tolist()
            expected = {"mu": mu, "sigma": sigma, "q_value": torch.stack(q) if isinstance(q, list) else q}
        elif kind == "vac":
            both = model(obs, "compute_actor_critic")
            expected = {"logit": both["logit"], "value": both["value"]}
        else:
            expected = {"logit": model(obs)["logit"]}
    return checkpoint, dict(
        case, expected={k: v.flatten().tolist() for k, v in expected.items()}, state=state
    )


def adam_moments_by_di_engine_name(model, optimizer_state: dict, optimizer) -> dict[str, list]:
    """ding_ray's first moments renamed to DI-engine's parameter names (through ``to_di_engine``,
    whose renaming the outputs check on their own)."""
    index = {id(p): i for i, p in enumerate(p for g in optimizer.param_groups for p in g["params"])}
    full = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    for name, p in model.named_parameters():
        if id(p) in index and index[id(p)] in optimizer_state["state"]:
            full[name] = optimizer_state["state"][index[id(p)]]["exp_avg"]
    return {k: v.flatten().tolist() for k, v in to_di_engine(model, full).items()}


@pytest.mark.skipif(not os.path.exists(DI_ENGINE_PYTHON), reason="needs a Python with DI-engine 0.5.3")
def test_di_engine_loads_converted_dqn_ppo_and_sac_checkpoints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec, expected_moments = {"cases": {}}, {}
    for name in CASES:
        checkpoint, case = train(name, tmp_path)
        state = case.pop("state")
        out = save_for_di_engine(checkpoint, tmp_path / f"{name}_for_di_engine.pth.tar")
        spec["cases"][name] = dict(case, checkpoint=out)
        cfg, _ = run_config(checkpoint)
        policy = create_policy(cfg.policy, enable_field=["learn"])
        policy.learn_mode.load_state_dict(state)
        model = policy.learn_mode.get_attribute("model")
        expected_moments[name] = {  # SAC's alpha has no parameter of the model
            key: adam_moments_by_di_engine_name(model, state[key], policy.learn_mode.get_attribute(key))
            for key in state
            if key.startswith("optimizer") and key != "optimizer_alpha"
        }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    result = subprocess.run(
        [DI_ENGINE_PYTHON, str(CHECK), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for name, case in spec["cases"].items():
        got = report[name]
        for key, values in case["expected"].items():
            diff = (torch.tensor(got["outputs"][key]) - torch.tensor(values)).abs().max()
            assert diff <= 1e-6, (name, key, float(diff))
        assert got["moments"].keys() == expected_moments[name].keys(), name
        for key, by_name in got["moments"].items():
            assert by_name, (name, key)  # the optimizer has state: training went on from here
            for param, values in by_name.items():
                assert torch.allclose(
                    torch.tensor(values), torch.tensor(expected_moments[name][key][param])
                ), (
                    name,
                    key,
                    param,
                )
        assert got["last_iter"] is not None


def test_a_checkpoint_without_optimizer_state_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main, create = read_dizoo_config(CASES["dqn"][0])
    cfg_pair = (copy.deepcopy(main), create)
    cfg = compile_config(copy.deepcopy(main), create_cfg=create, auto=True, save_cfg=False)
    policy = create_policy(cfg.policy, enable_field=["eval"])
    torch.save(policy.eval_mode.state_dict(), tmp_path / "eval.pth.tar")
    with pytest.raises(DataFormatError, match="not a learn checkpoint"):
        save_for_di_engine(tmp_path / "eval.pth.tar", tmp_path / "out.pth.tar", config=cfg_pair)
    assert layout(policy.eval_mode.get_attribute("model")) is not None
