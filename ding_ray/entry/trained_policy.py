"""``load_policy``: a trained run, or one checkpoint file, as an object that acts.

    policy = ding_ray.load_policy("cartpole_dqn_seed0")
    action = policy.act(obs)        # one observation -> one action
    actions = policy.act(batch)     # (B, *obs_shape) -> (B,) action indices or (B, action_dim)

``act`` is the policy's eval forward (greedy: DQN's argmax, PPO's mean or argmax, SAC's tanh of
the mean) with what the run put around it: PPO's observation normalisation (``policy.obs_norm``,
statistics from the checkpoint) and the env's action scaling (``env.act_scale``: [-1, 1] mapped
onto the action space's bounds). Raw observations of the gymnasium env go in; its actions come
out: ``env.step(policy.act(obs))``. The one exception is ``env.continuous=False`` (a Box env
split into evenly spaced actions): ``act`` returns the index, which ding_ray's env maps.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

from ding_ray.errors import ConfigError, ShapeError

CONFIG_FILE = "total_config.json"
BEST = ("ckpt_best.pth.tar", "eval.pth.tar")  # the evaluator's, the CkptSaver middleware's
FINAL = ("ckpt_final.pth.tar", "final.pth.tar")


class ActingModule(torch.nn.Module):
    """Observations ``(batch, *obs_shape)`` float32 (or uint8 frames) -> the env's actions: the policy's
    ``_eval_tensors`` and the env's action scaling. ``act`` runs it and ``ding-ray export``
    traces it, so the exported file computes what ``act`` does."""

    def __init__(self, policy: Any, action_scale: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        super().__init__()
        self.model = policy._eval_model  # a submodule, so that tracing keeps its weights as parameters
        self._policy = policy
        self.scaled = action_scale is not None
        center, half_width = action_scale if self.scaled else (np.zeros(1), np.ones(1))
        self.register_buffer("action_center", torch.as_tensor(center, dtype=torch.float32))
        self.register_buffer("action_half_width", torch.as_tensor(half_width, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        action = self._policy._eval_tensors(obs)["action"]
        if self.scaled:  # as env.act_scale maps a policy's action in [-1, 1] onto the env's bounds
            action = self.action_center + self.action_half_width * action.clamp(-1.0, 1.0)
        return action


class TrainedPolicy:
    """A trained policy as a function of observations (see the module docstring). ``policy`` is
    the ding_ray ``Policy`` (eval mode), ``cfg`` its compiled config, ``source`` the checkpoint."""

    def __init__(self, policy: Any, cfg: EasyDict, source: str, action_scale: Any = None) -> None:
        self.policy, self.cfg, self.source = policy, cfg, source
        self.module = ActingModule(policy, action_scale).eval()
        shape = cfg.policy.model.obs_shape
        self.obs_shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)

    def act(self, obs: Any) -> Any:
        """One observation -> one action (an int, or an array of ``action_dim``); a batch
        ``(B, *obs_shape)`` -> an array of B actions."""
        x = np.asarray(obs)
        if x.dtype != np.uint8:  # uint8 frames stay bytes: the model scales them by 1/255
            x = x.astype(np.float32, copy=False)
        single = x.shape == self.obs_shape
        if not single and x.shape[1:] != self.obs_shape:
            raise ShapeError(
                f"act takes one observation of shape {self.obs_shape} or a batch (B, *{self.obs_shape}), "
                f"got shape {x.shape}."
            )
        with torch.inference_mode():
            action = self.module(torch.from_numpy(x[None] if single else x)).numpy()
        if not single:
            return action
        return int(action[0]) if action.ndim == 1 else action[0]

    def __repr__(self) -> str:
        return f"TrainedPolicy({self.cfg.policy.type} on {self.cfg.env.get('env_id')}, {self.source})"


def load_policy(path: str | os.PathLike, config: Any = None) -> TrainedPolicy:
    """The policy of a run folder, or of one checkpoint file, ready to ``act`` (on the CPU).

    A run folder gives its ``total_config.json`` and its best checkpoint (``ckpt/ckpt_best.pth.tar``),
    else its final one, else its latest run checkpoint (``checkpoints/iter_N/learner.pth``). A
    checkpoint file finds ``total_config.json`` beside it or in the run folder above it; otherwise
    pass ``config``: a config file, a bundled config's name or ``(main_config, create_config)``.
    Checkpoints load with ``weights_only=True``: loading never runs code.
    """
    from ding_ray.policy import create_policy

    path = os.fspath(path)
    cfg, env = run_config(path, config)
    state, source = find_weights(path, cfg)
    policy = create_policy(cfg.policy, enable_field=["eval"])
    scale = None
    if env is not None:
        from ding_ray.envs import GymnasiumEnv, space_info

        policy.check_spaces(env.observation_space.shape, *space_info(env.action_space))
        if cfg.env.get("act_scale") and space_info(env.action_space)[0] == "continuous":
            scale = GymnasiumEnv._scale_of(env.action_space)  # the env's own (center, half width)
        env.close()
    load_weights_of(policy.eval_mode, state, source, cfg.policy.type)
    return TrainedPolicy(policy, cfg, source, scale)


def run_config(path: str, config: Any = None) -> tuple[EasyDict, Any]:
    """The compiled config of the run at ``path`` (``config`` as ``load_policy`` takes it), for the
    CPU, with the model's shapes read from one env where the config leaves them to the env; that env
    is returned too (None where none was needed), for the caller to use and close."""
    from ding_ray.config import compile_config

    if not os.path.exists(path):
        raise ConfigError(f"'{path}' does not exist: pass a run folder or a checkpoint file.")
    main_cfg, create_cfg = _read_config(path, config)
    cfg = compile_config(main_cfg, create_cfg=create_cfg, auto=True, save_cfg=False)
    cfg.policy.cuda = False
    env = _make_env(cfg) if _needs_env(cfg) else None
    if env is not None:
        from ding_ray.envs.model_shapes import fill_model_shapes

        fill_model_shapes(cfg, env.observation_space, env.action_space)
    return cfg, env


def load_weights_of(mode: Any, state: Any, source: str, policy_type: str) -> None:
    """Load a checkpoint's ``state`` (a policy's state dict, or a run checkpoint's ``learner.pth``)
    into a policy mode, or raise ConfigError saying the weights belong to another model."""
    if _is_learner_file(state):
        state = state["policy"]
    try:
        mode.load_state_dict(state)
    except (RuntimeError, KeyError, TypeError) as err:  # torch's size mismatch, a missing 'model'
        raise ConfigError(
            f"The weights in {source} do not fit the config's {policy_type} model ({err}). Pass the "
            "config of the run that wrote them."
        ) from err


def run_dir_of(path: str) -> str | None:
    """The run folder (the one holding ``total_config.json``) of a checkpoint file: its own folder,
    the one above its ``ckpt/``, or the one above ``checkpoints/iter_N/``."""
    folder = os.path.dirname(os.path.abspath(path))
    candidates = [folder, os.path.dirname(folder)]
    if os.path.basename(os.path.dirname(folder)) == "checkpoints":
        candidates.append(os.path.dirname(os.path.dirname(folder)))
    return next((c for c in candidates if os.path.isfile(os.path.join(c, CONFIG_FILE))), None)


def find_weights(path: str, cfg: Mapping) -> tuple[dict, str]:
    """``(the policy's state dict, the file it came from)`` of a run folder or a checkpoint file."""
    from ding_ray.utils.checkpoint import LEARNER_FILE, CheckpointStore, load_learner_bytes, storage_root
    from ding_ray.worker.learner import load_checkpoint

    if os.path.isfile(path):
        state = load_checkpoint(path)
        return (state["policy"] if _is_learner_file(state) else state), path
    for name in BEST + FINAL:
        candidate = os.path.join(path, "ckpt", name)
        if os.path.isfile(candidate):
            return load_checkpoint(candidate), candidate
    roots = [os.path.abspath(path)]
    if (cfg.get("checkpoint") or {}).get("storage_path"):  # a run that kept its checkpoints elsewhere
        roots.append(storage_root({**cfg, "exp_name": path}))
    for root in roots:
        store = CheckpointStore(root)
        ckpt = store.latest()
        if ckpt is not None and LEARNER_FILE in ckpt.meta["files"]:
            where = f"{ckpt.folder}/{LEARNER_FILE}"
            return load_learner_bytes(store.read(ckpt, LEARNER_FILE), where)["policy"], where
    raise ConfigError(
        f"The run folder '{path}' holds no checkpoint: none of ckpt/{', ckpt/'.join(BEST + FINAL)}, and no "
        "complete checkpoints/iter_N/. Pass a checkpoint file, or a run that got as far as one."
    )


def _is_learner_file(state: Any) -> bool:
    return isinstance(state, dict) and {"policy", "train_iter", "envstep", "rng"} <= set(state)


def _read_config(path: str, config: Any) -> tuple[EasyDict, EasyDict]:
    from ding_ray.config.compile import split_input_cfg
    from ding_ray.entry.cli_commands import resolve_config

    if config is None:
        run_dir = path if os.path.isdir(path) else run_dir_of(path)
        if run_dir is None or not os.path.isfile(os.path.join(run_dir, CONFIG_FILE)):
            raise ConfigError(
                f"'{path}' has no {CONFIG_FILE} beside it or in a run folder above it: pass config= (a "
                "config file, a bundled config's name or (main_config, create_config); ding-ray: --config)."
            )
        config = os.path.join(run_dir, CONFIG_FILE)
    if isinstance(config, (str, os.PathLike)):
        main_cfg, create_cfg, _ = resolve_config(os.fspath(config))
        return main_cfg, create_cfg
    return split_input_cfg(config)


def _needs_env(cfg: EasyDict) -> bool:
    """Shapes left to the env, or actions scaled onto its bounds: one env is made to ask it."""
    model = cfg.policy.model
    return (
        model.get("obs_shape") is None or model.get("action_shape") is None or bool(cfg.env.get("act_scale"))
    )


def _make_env(cfg: EasyDict) -> Any:
    from ding_ray.envs import get_vec_env_setting

    env_fn, _, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    return env_fn(cfg=evaluator_env_cfg[0])
