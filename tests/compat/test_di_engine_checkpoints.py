"""Checkpoints saved by DI-engine 0.5.3 load into ding_ray's policies and act the same.

``data/di_engine_checkpoints`` holds what ``data/make_di_engine_checkpoints.py`` made with DI-engine
installed: for each dizoo config (and a few variants of its model options) the checkpoint in
DI-engine's three forms (the learner hook's ``ckpt_best.pth.tar`` with ``last_iter``/``last_step``,
``CkptSaver``'s ``iteration_0.pth.tar``, the eval mode's ``{'model': ...}``) and DI-engine's eval
actions, logits, mu/sigma and critic values on fixed observations (for dizoo's pong configs, with a
ConvEncoder: uint8 frames, which DI-engine saw as frames / 255 and ding_ray's model scales itself).
Each file is loaded the way a user loads it (``load_checkpoint``: ``weights_only=True``; the
learner's ``load_ckpt_before_run`` hook; ``eval_mode.load_state_dict``) into a policy built from the
same config.

``data/di_engine_checkpoints_trained`` holds checkpoints the same script made after DI-engine's serial
pipeline trained each config for 300 env steps (Adam moments and all); they are checked the same way.
"""

from __future__ import annotations

import base64
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from ding_ray.compat.di_engine_names import layout
from ding_ray.config import compile_config
from ding_ray.errors import DataFormatError, ShapeError
from ding_ray.policy import create_policy
from ding_ray.worker import BaseLearner
from ding_ray.worker.learner import load_checkpoint
from tests.compat.dizoo import read_dizoo_config

DATA = Path(__file__).parent / "data"
SHIPPED = DATA / "di_engine_checkpoints"
NAMES = sorted(p.name.removesuffix(".json") for p in SHIPPED.glob("*.json"))
TRAINED = DATA / "di_engine_checkpoints_trained"
TRAINED_NAMES = sorted(p.name.removesuffix(".json") for p in TRAINED.glob("*.json"))
FORMS = ("learner", "ckpt_saver", "eval")
QUIET = dict(save_ckpt_after_run=False, save_ckpt_after_iter=False, log_show_after_iter=False)


def unpack(folder: Path, name: str, dest: Path) -> tuple[dict, dict[str, str]]:
    """The reference outputs of ``name`` and its checkpoint files, extracted under ``dest``."""
    ref = json.loads((folder / f"{name}.json").read_text())
    paths = {}
    with tarfile.open(folder / ref["archive"]) as tar:
        for form, member in ref["files"].items():
            paths[form] = str(dest / f"{name}.{member}")
            Path(paths[form]).write_bytes(tar.extractfile(member).read())
    return ref, paths


def policy_for(ref: dict, dizoo_config: str | None = None, **model_over):
    main, create = read_dizoo_config(dizoo_config or ref["dizoo_config"])
    main.policy.model.update({**ref["model_overrides"], **model_over})
    shape = main.policy.model.get("obs_shape")
    if create.env.type == "atari" and len(shape) == 3:  # the shipped conv checkpoints' smaller frames
        main.env.screen_size = shape[-1]
    cfg = compile_config(main, auto=True, create_cfg=create, save_cfg=False)
    return create_policy(cfg.policy)


def load(policy, form: str, path: str, exp_dir: Path) -> BaseLearner | None:
    """Load ``path`` as a user would: the learner hook form through ``load_ckpt_before_run``,
    CkptSaver's into the learn mode, the eval state into the eval mode."""
    if form == "learner":
        hook = dict(QUIET, load_ckpt_before_run=path)
        learner = BaseLearner(dict(hook=hook), policy.learn_mode, exp_name=str(exp_dir))
        learner.call_hook("before_run")
        return learner
    state = load_checkpoint(path)  # weights_only=True
    (policy.learn_mode if form == "ckpt_saver" else policy.eval_mode).load_state_dict(state)
    return None


def reference_obs(ref: dict) -> torch.Tensor:
    """The reference's observations: vectors, or uint8 frames (DI-engine saw them as frames / 255)."""
    if "obs_uint8" in ref:
        frames = np.frombuffer(base64.b64decode(ref["obs_uint8"]), dtype=np.uint8)
        return torch.from_numpy(frames.reshape(ref["obs_shape"]).copy())
    return torch.tensor(ref["obs"])


def outputs(policy, ref: dict) -> dict[str, torch.Tensor]:
    """What ding_ray computes for the reference's keys: eval actions and the model's raw outputs."""
    obs = reference_obs(ref)
    n = len(obs)
    out = policy.eval_mode.forward({i: obs[i] for i in range(n)})
    got = {"action": torch.stack([torch.as_tensor(out[i]["action"]).float().reshape(-1) for i in range(n)])}
    model = policy.eval_mode.get_attribute("model")
    with torch.no_grad():
        if "q_value" in ref:  # ContinuousQAC
            got["mu"], got["sigma"] = model(obs, "compute_actor")["logit"]
            action = torch.tensor(ref["action"]).reshape(n, -1)
            q = model({"obs": obs, "action": action}, "compute_critic")["q_value"]
            got["q_value"] = torch.stack(q) if isinstance(q, list) else q
        elif "value" in ref:  # VAC
            both = model(obs, "compute_actor_critic")
            logit = both["logit"]
            if isinstance(logit, dict):
                got["mu"], got["sigma"] = logit["mu"], logit["sigma"]
            else:
                got["logit"] = logit
            got["value"] = both["value"]
        else:  # DQN
            got["logit"] = model(obs)["logit"]
    return got


def max_differences(policy, ref: dict) -> dict[str, float]:
    got = outputs(policy, ref)
    diffs = {}
    for key, value in got.items():
        expected = torch.tensor(ref[key], dtype=torch.float32).reshape(value.shape)
        diffs[key] = float((value.float() - expected).abs().max())
    return diffs


def check_acts_the_same(policy, ref: dict) -> dict[str, float]:
    diffs = max_differences(policy, ref)
    discrete = "logit" in ref
    if discrete:
        assert diffs["action"] == 0.0, diffs  # the same greedy action on every observation
    assert all(d <= 1e-5 for d in diffs.values()), diffs
    return diffs


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_di_engine_checkpoint_loads_and_acts_the_same(name, form, tmp_path):
    ref, paths = unpack(SHIPPED, name, tmp_path)
    policy = policy_for(ref)
    before = max_differences(policy, ref)
    assert max(before.values()) > 1e-3  # a fresh policy acts otherwise: the load is what matters
    learner = load(policy, form, paths[form], tmp_path / "exp")
    check_acts_the_same(policy, ref)
    if learner is not None:  # the learner hook's counters come back too
        assert (learner.last_iter.val, learner.collector_envstep) == (ref["last_iter"], ref["last_step"])


@pytest.mark.parametrize("name", NAMES)
def test_a_di_engine_learner_checkpoint_loads_into_eval_and_collect_modes(name, tmp_path):
    """The eval entry's ``policy.load_path`` (usually ``ckpt_best.pth.tar``) reads the learn state's
    model into the eval mode; a collector's policy reads it the same way."""
    ref, paths = unpack(SHIPPED, name, tmp_path)
    policy = policy_for(ref)
    policy.eval_mode.load_state_dict(load_checkpoint(paths["learner"]))
    check_acts_the_same(policy, ref)
    collector_side = policy_for(ref)
    collector_side.collect_mode.load_state_dict(load_checkpoint(paths["ckpt_saver"]))
    check_acts_the_same(collector_side, ref)  # the modes share one model


def test_a_di_engine_checkpoint_of_another_model_is_refused_by_name(tmp_path):
    ref, paths = unpack(SHIPPED, "cartpole_dqn", tmp_path)
    other = policy_for(ref, encoder_hidden_size_list=[128, 64])  # one encoder layer fewer
    unplaced = (
        r"has 2 tensors this model has no place for, such as \['encoder.main.2.bias', 'encoder.main.2.weight'"
    )
    with pytest.raises(ShapeError, match=unplaced):
        other.eval_mode.load_state_dict(load_checkpoint(paths["eval"]))
    wider = policy_for(ref, encoder_hidden_size_list=[128, 128, 32])
    with pytest.raises(ShapeError, match=r"'encoder.main.2.weight' \(64, 128\) where .* has \(32, 128\)"):
        wider.eval_mode.load_state_dict(load_checkpoint(paths["eval"]))
    ppo_ref, ppo_paths = unpack(SHIPPED, "cartpole_ppo", tmp_path)
    dqn = policy_for(ref)
    held = {k: v.clone() for k, v in dqn.learn_mode.state_dict()["model"].items()}
    with pytest.raises(DataFormatError, match="this model has no place for.*DI-engine's DQN built from"):
        load(dqn, "learner", ppo_paths["learner"], tmp_path / "exp")  # the hook: whole or nothing
    after = dqn.learn_mode.state_dict()["model"]
    assert all(torch.equal(held[k], after[k]) for k in held)
    with pytest.raises(DataFormatError, match="head_hidden_size"):
        policy_for(ref, head_hidden_size=32).eval_mode.load_state_dict(load_checkpoint(paths["eval"]))


def test_ding_ray_state_dicts_still_load_as_they_are(tmp_path):
    """The renaming acts only on DI-engine's names: ding_ray's own checkpoints are untouched."""
    ref, paths = unpack(SHIPPED, "pendulum_sac", tmp_path)
    source = policy_for(ref)
    load(source, "ckpt_saver", paths["ckpt_saver"], tmp_path)
    target = policy_for(ref)
    target.learn_mode.load_state_dict(source.learn_mode.state_dict())
    check_acts_the_same(target, ref)


def test_trained_di_engine_checkpoints_load_with_their_adam_moments(tmp_path):
    """DI-engine trained each config a little (``make_di_engine_checkpoints.py --train-env-steps 300
    --out data/di_engine_checkpoints_trained``), then saved: weights and Adam moments, which must
    land on the same parameters here (VAC's heads come in another order, DuelingHead's first layers
    are stacked)."""
    for name in TRAINED_NAMES:
        ref, paths = unpack(TRAINED, name, tmp_path)
        assert ref["optimizer_moments"] and all(ref["optimizer_moments"].values()), name  # it trained
        for form in ("learner", "ckpt_saver"):
            policy = policy_for(ref)
            learner = load(policy, form, paths[form], tmp_path / "exp")
            check_acts_the_same(policy, ref)
            check_adam_moments(policy, ref)
            if learner is not None:
                assert learner.last_iter.val == ref["last_iter"] > 0, name


def check_adam_moments(policy, ref: dict) -> None:
    """Each ding_ray parameter's Adam moments, split where it stacks DI-engine's parameters, sum to
    what DI-engine's optimizer held for those parameters (read there by parameter object)."""
    model = policy.learn_mode.get_attribute("model")
    sources = layout(model).sources
    checked = 0
    for key, moments in ref["optimizer_moments"].items():
        optimizer = policy.learn_mode.get_attribute(key)
        for name, param in model.named_parameters():
            state = optimizer.state.get(param)
            if state is None or not moments:
                continue
            stacked = len(sources[name])  # DI-engine's parameters, stacked along dim 0 in equal parts
            splits = [torch.tensor_split(state[k], stacked) for k in ("exp_avg", "exp_avg_sq")]
            for i, source in enumerate(sources[name]):
                expected = moments[source]
                got = [
                    float(splits[0][i].double().sum()),
                    float(splits[1][i].double().sum()),
                    float(state["step"]),
                ]
                np.testing.assert_allclose(
                    got, expected, rtol=1e-5, atol=1e-9, err_msg=f"{key} {name} {source}"
                )
                checked += 1
    assert checked == sum(len(m) for m in ref["optimizer_moments"].values())


# VAC without norm layers (ding_ray's MLP registers its norm layers after its linear layers)
@pytest.mark.parametrize("name", ["cartpole_ppo", "pendulum_ppo"])
def test_parameters_come_in_di_engine_s_order(name, tmp_path):
    """The model's parameters, named as DI-engine names them, in the order of DI-engine's state dict:
    the optimizer steps them in that order and the gradient clip sums their norms in it, so a seeded
    run rounds as DI-engine's does (VAC: the critic head before the actor head)."""
    ref, paths = unpack(SHIPPED, name, tmp_path)
    di_order = list(load_checkpoint(paths["ckpt_saver"])["model"])
    model = policy_for(ref).learn_mode.get_attribute("model")
    sources = layout(model).sources
    ours = [source for n, _ in model.named_parameters() for source in sources[n]]
    assert ours == [k for k in di_order if k in set(ours)], (ours, di_order)
