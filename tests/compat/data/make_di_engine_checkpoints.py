"""Make DI-engine 0.5.3 checkpoints, and what DI-engine's policy does with them, for ding_ray's tests.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_checkpoints.py                # the files shipped here
    python tests/compat/data/make_di_engine_checkpoints.py --out DIR --train-env-steps 2000

For each dizoo config in ``CONFIGS`` (some with model options changed) it builds DI-engine's
policy from the config (seed 0) and saves it the ways DI-engine does:

- ``learner_*.pth.tar``: the learner's ``save_ckpt_after_*`` hooks' (``BaseLearner.save_checkpoint``,
  as the serial pipeline's ``ckpt_best.pth.tar``): the learn mode's state dict plus
  ``last_iter``/``last_step``;
- ``ckpt_saver_iteration_<N>.pth.tar``: the ``CkptSaver`` middleware's: the learn mode's state dict;
- ``eval_state.pth.tar``: ``torch.save(policy.eval_mode.state_dict())``: ``{'model': ...}``;

packed as ``<name>.tar.xz``, the file bytes exactly as DI-engine's ``torch.save`` wrote them.

``<name>.json`` holds fixed observations and what DI-engine computes on them: the eval mode's
actions and logits (or mu and sigma) and the critics' values, so a test can check that ding_ray,
given the same file, acts the same.

Shipped files: seeded random weights on a grid of 1/16, so that the checkpoints compress (xz) to
5-40 KB each; the optimizers have no state yet (a checkpoint written before the first step, as
CkptSaver's ``iteration_0``). With ``--train-env-steps`` the policy first trains that many env
steps with DI-engine's own serial pipeline, whose learner's last checkpoint is the learner form:
trained weights, Adam moments and counters (the test that runs this needs DI-engine installed).
"""

from __future__ import annotations

import argparse
import base64
import copy
import glob
import importlib
import json
import lzma
import math
import os
import re
import tarfile
import tempfile

import numpy as np
import torch

_CARTPOLE = "dizoo.classic_control.cartpole.config."
_PENDULUM = "dizoo.classic_control.pendulum.config."
_PONG = "dizoo.atari.config.serial.pong."
# name -> (dizoo config module, keys set over its policy.model): the dizoo configs as they are, and
# variants with the model options they leave at their defaults (norms, more layers, own encoders)
CONFIGS = {
    "cartpole_dqn": (_CARTPOLE + "cartpole_dqn_config", {}),
    "cartpole_ppo": (_CARTPOLE + "cartpole_ppo_config", {}),
    "pendulum_ppo": (_PENDULUM + "pendulum_ppo_config", {}),
    "pendulum_sac": (_PENDULUM + "pendulum_sac_config", {}),
    "cartpole_dqn_ln": (_CARTPOLE + "cartpole_dqn_config", dict(norm_type="LN", head_layer_num=2)),
    "pendulum_ppo_own_encoders": (
        _PENDULUM + "pendulum_ppo_config",
        dict(share_encoder=False, actor_head_layer_num=1, critic_head_layer_num=2, norm_type="LN"),
    ),
    "pendulum_sac_ln": (_PENDULUM + "pendulum_sac_config", dict(norm_type="LN", actor_head_layer_num=2)),
    # dizoo's pong configs with a ConvEncoder, shrunk to 36x36 frames (8x8/4, 4x4/2, 3x3/1 -> 1x1) and
    # narrow layers so that the files stay small; the layer structure is pong's
    "pong_dqn_conv": (
        _PONG + "pong_dqn_config",
        dict(obs_shape=[4, 36, 36], encoder_hidden_size_list=[8, 8, 16]),
    ),
    "pong_ppo_conv": (
        _PONG + "pong_ppo_config",
        dict(
            obs_shape=[4, 36, 36],
            encoder_hidden_size_list=[8, 8, 16],
            actor_head_hidden_size=16,
            critic_head_hidden_size=16,
        ),
    ),
}
NUM_OBS = 32
NUM_IMAGE_OBS = 8  # uint8 frames, base64 in the json
GRID = 16  # shipped weights are multiples of 1/GRID


def build_policy(module: str, model_overrides: dict, exp_name: str, train_env_steps: int):
    from ding.config import compile_config
    from ding.policy import create_policy
    from ding.utils import set_pkg_seed

    config = importlib.import_module(module)
    main, create = copy.deepcopy(config.main_config), copy.deepcopy(config.create_config)
    main.exp_name = exp_name
    main.policy.model.update(model_overrides)
    if train_env_steps:
        # one evaluation episode and no random warm-up: the run is about the weights it leaves
        main.env.update(evaluator_env_num=1, n_evaluator_episode=1)
        if "random_collect_size" in main.policy:
            main.policy.random_collect_size = 0
        if create.policy.type == "ppo":
            from ding.entry import serial_pipeline_onpolicy as pipeline
        else:
            from ding.entry import serial_pipeline as pipeline
        return pipeline((main, create), seed=0, max_env_step=train_env_steps)
    if create.env.type == "atari":
        # Only the policy is built here, and DI-engine's Atari env module imports opencv at import time
        # (compile_config imports it for the env's defaults): CartPole's env class stands in.
        create.env = dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"])
    cfg = compile_config(main, create_cfg=create, auto=True, save_cfg=False, seed=0)
    set_pkg_seed(0)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    state = policy.learn_mode.state_dict()
    state["model"] = grid_weights(state["model"])
    if "target_model" in state:  # a checkpoint written at the start: the target equals the model
        state["target_model"] = state["model"]
    policy.learn_mode.load_state_dict(state)
    return policy


def grid_weights(model_state: dict) -> dict:
    """Seeded random weights on a 1/GRID grid: a matrix (or conv kernel) uniform in +-sqrt(6 / fan_in)
    (the scale survives the ReLU layers, so actions differ between observations), a vector in +-0.05.
    (Rounding DI-engine's own init would zero its tiny output layers, which would then check
    nothing.) Aliases (VAC's ``actor.*``, ``critic.*``) get the values of the tensor they share."""
    gen = torch.Generator().manual_seed(0)
    out, seen = {}, {}
    for key, value in model_state.items():
        ptr = value.data_ptr()
        if ptr not in seen:
            bound = (6 / math.prod(value.shape[1:])) ** 0.5 if value.dim() >= 2 else 0.05  # fan in
            drawn = (torch.rand(value.shape, generator=gen) * 2 - 1) * bound
            seen[ptr] = torch.round(drawn * GRID) / GRID
        out[key] = seen[ptr]
    return out


def save_forms(policy, exp_name: str, name: str, out: str) -> tuple[dict[str, str], dict[str, int]]:
    """Save ``policy`` in DI-engine's three forms, packed into ``out/<name>.tar.xz`` (one archive:
    the three files share most of their bytes); the archive member of each form, and the learner
    counters the learner form holds. After a training run the learner form is the checkpoint the
    serial pipeline's learner wrote at its end (``save_ckpt_after_run``: ``iteration_<N>``)."""
    from ding.framework import OnlineRLContext
    from ding.framework.middleware import CkptSaver
    from ding.worker import BaseLearner

    ckpt_dir = os.path.join(exp_name, "ckpt")
    trained = sorted(glob.glob(os.path.join(ckpt_dir, "iteration_*.pth.tar")), key=_iteration)
    if trained:
        learner_path = trained[-1]
    else:
        learner_cfg = copy.deepcopy(policy.cfg.learn.learner)
        BaseLearner(learner_cfg, policy.learn_mode, exp_name=exp_name).save_checkpoint("ckpt_best.pth.tar")
        learner_path = os.path.join(ckpt_dir, "ckpt_best.pth.tar")
    saved = torch.load(learner_path, map_location="cpu", weights_only=True)
    counters = {"last_iter": int(saved["last_iter"]), "last_step": int(saved["last_step"])}
    ctx = OnlineRLContext()
    ctx.train_iter = counters["last_iter"]
    saver_dir = os.path.join(exp_name, "middleware")
    CkptSaver(policy, saver_dir, train_freq=1)(ctx)  # saves iteration_<train_iter>.pth.tar
    eval_path = os.path.join(exp_name, "state.pth.tar")
    torch.save(policy.eval_mode.state_dict(), eval_path)
    written = {
        "learner": learner_path,
        "ckpt_saver": os.path.join(saver_dir, "ckpt", f"iteration_{ctx.train_iter}.pth.tar"),
        "eval": eval_path,
    }
    with tarfile.open(os.path.join(out, f"{name}.tar.xz"), "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
        for form, path in written.items():
            info = tar.gettarinfo(path, f"{form}_{os.path.basename(path)}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""  # same bytes every run
            with open(path, "rb") as f:
                tar.addfile(info, f)
    return {form: f"{form}_{os.path.basename(path)}" for form, path in written.items()}, counters


def _iteration(path: str) -> int:
    return int(re.search(r"iteration_(\d+)", path).group(1))


def reference_outputs(policy, model_cfg) -> dict:
    """Fixed observations and DI-engine's eval actions and raw model outputs on them. Image
    observations are uint8 frames (``obs_uint8``: base64 of the bytes, ``obs_shape``), which
    DI-engine's models see as DI-engine's Atari env hands them over: float32 frames / 255."""
    if isinstance(model_cfg.obs_shape, int):
        num = NUM_OBS
        obs = np.random.RandomState(0).uniform(-4.0, 4.0, size=(num, model_cfg.obs_shape)).astype(np.float32)
        ref = {"obs": obs.tolist()}
    else:
        num = NUM_IMAGE_OBS
        frames = np.random.RandomState(0).randint(0, 256, size=(num, *model_cfg.obs_shape)).astype(np.uint8)
        ref = {"obs_uint8": base64.b64encode(frames.tobytes()).decode(), "obs_shape": list(frames.shape)}
        obs = frames.astype(np.float32) / 255.0
    obs_t = torch.from_numpy(obs)
    with torch.no_grad():
        out = policy.eval_mode.forward({i: obs_t[i] for i in range(num)})
        actions = torch.stack([torch.as_tensor(out[i]["action"]) for i in range(num)])
        model = policy.eval_mode.get_attribute("model")
        model.eval()
        ref["action"] = actions.tolist()
        if type(model).__name__ == "DQN":
            ref["logit"] = model(obs_t)["logit"].tolist()
        elif type(model).__name__ == "VAC":
            both = model(obs_t, mode="compute_actor_critic")
            logit = both["logit"]
            if isinstance(logit, dict):
                ref["mu"], ref["sigma"] = logit["mu"].tolist(), logit["sigma"].tolist()
            else:
                ref["logit"] = logit.tolist()
            ref["value"] = both["value"].tolist()
        else:  # ContinuousQAC
            mu, sigma = model(obs_t, mode="compute_actor")["logit"]
            ref["mu"], ref["sigma"] = mu.tolist(), sigma.tolist()
            q = model({"obs": obs_t, "action": actions.reshape(num, -1)}, mode="compute_critic")["q_value"]
            ref["q_value"] = [v.tolist() for v in q] if isinstance(q, list) else q.tolist()
    ref["optimizer_moments"] = optimizer_moments(policy)
    return ref


def optimizer_moments(policy) -> dict:
    """Per optimizer (by learn-state key) and DI-engine parameter name: sum of Adam's exp_avg and
    exp_avg_sq, and the step count, read from the live optimizer by parameter object, so a test can
    check where ding_ray put each parameter's moments."""
    out = {}
    for key in policy.learn_mode.state_dict():
        try:
            optimizer = policy.learn_mode.get_attribute(key)
        except NotImplementedError:  # a state entry the policy keeps under another name
            continue
        if not isinstance(optimizer, torch.optim.Optimizer):
            continue
        out[key] = {
            name: [float(st[k].double().sum()) for k in ("exp_avg", "exp_avg_sq")] + [float(st["step"])]
            for name, param in policy.learn_mode.get_attribute("model").named_parameters()
            if (st := optimizer.state.get(param))
        }
    return out


def make(name: str, out: str, train_env_steps: int = 0) -> None:
    import ding

    workdir = tempfile.mkdtemp(prefix="di_engine_ckpt_")
    here = os.getcwd()
    os.chdir(workdir)  # DI-engine writes its logs and checkpoints under exp_name, relative to the cwd
    try:
        policy = build_policy(*CONFIGS[name], f"{name}_seed0", train_env_steps)
        files, counters = save_forms(policy, f"{name}_seed0", name, os.path.join(here, out))
        ref = reference_outputs(policy, policy.cfg.model)
    finally:
        os.chdir(here)
    meta = {
        "dizoo_config": CONFIGS[name][0].replace(".", "/").removeprefix("dizoo/") + ".py",
        "model_overrides": CONFIGS[name][1],
        "di_engine_version": ding.__version__,
        "torch_version": torch.__version__,
        "seed": 0,
        "train_env_steps": train_env_steps,
        "archive": f"{name}.tar.xz",
        "files": files,
        **counters,
    }
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({**meta, **ref}, f, indent=None, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "di_engine_checkpoints"))
    parser.add_argument("--train-env-steps", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=list(CONFIGS))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.only:
        make(name, args.out, args.train_env_steps)


if __name__ == "__main__":
    main()
