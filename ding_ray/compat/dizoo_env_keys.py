"""The env keys of DI-engine's dizoo env classes that ding_ray's ``GymnasiumEnv`` accepts only at
values that change nothing, and the check that refuses the others.

dizoo has one env class per family (``PendulumEnv``, ``BipedalWalkerEnv``, ``MujocoEnv``, ...), each
with keys of its own; ding_ray has one env for every gymnasium id. Its config names those keys; the
ones it acts on it acts on itself (``ding_ray.envs.make_options``, ``rew_clip``, ``act_scale``), and
any other value of the rest is refused here with a "not supported yet" error that says what to do
instead. Importing ``ding_ray.envs`` installs the check on ``GymnasiumEnv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_ray.envs.gymnasium_env import GymnasiumEnv
from ding_ray.errors import ConfigError

# DingEnvWrapper's named wrapper sets that add only the final ``eval_episode_return`` (which every
# ding_ray env reports).
PLAIN_WRAPPERS = ("default", "mujoco_default")

# key -> (the value that leaves the env as it is, what to do instead of another value)
NOT_YET: dict[str, tuple[Any, str]] = {
    "obs_plus_prev_action_reward": (
        False,
        "append the previous action and reward to the observation with a gymnasium.ObservationWrapper "
        "and pass the env through serial_pipeline(env_setting=...)",
    ),
    "action_bins_per_branch": (None, "ding_ray has no branching (BDQ) policy; leave it None"),
    "delay_reward_step": (0, "leave it 0 (no delay)"),
    "save_replay_gif": (False, "record mp4 videos with env.replay_path and the eval entry instead"),
    "replay_path_gif": (None, "record mp4 videos with env.replay_path and the eval entry instead"),
}


def check_dizoo_keys(cfg: Mapping) -> None:
    """Raise ``ConfigError`` for a dizoo key set to something ``GymnasiumEnv`` cannot do yet."""
    for key, (idle, instead) in NOT_YET.items():
        value = cfg.get(key, idle)
        if value != idle and not (key == "delay_reward_step" and value == 1):
            raise ConfigError(f"env.{key}={value!r} is not supported yet by ding_ray's env: {instead}.")
    wrapper = cfg.get("env_wrapper", "default")
    if wrapper not in PLAIN_WRAPPERS:
        raise ConfigError(
            f"env.env_wrapper={wrapper!r} is not supported yet: ding_ray's env has DI-engine's "
            f"{' and '.join(repr(w) for w in PLAIN_WRAPPERS)} sets only. Wrap the gymnasium env yourself "
            "(e.g. gymnasium.wrappers.AtariPreprocessing) and pass it through "
            "serial_pipeline(env_setting=...) or DingEnvWrapper(env)."
        )
    for key, what in (("norm_obs", "observation"), ("norm_reward", "reward")):
        norm = cfg.get(key)
        if norm is None:
            continue
        if not isinstance(norm, Mapping):
            raise ConfigError(f"env.{key} is dizoo's dict(use_norm=...), got {norm!r}.")
        if norm.get("use_norm", False):
            in_policy = "PPO's policy.obs_norm=True normalises them in the policy, " * (key == "norm_obs")
            raise ConfigError(
                f"env.{key}.use_norm=True (dizoo's running {what} normalisation in the env) is not "
                f"supported yet: {in_policy}or wrap the env with gymnasium.wrappers."
                f"Normalize{what.capitalize()} and pass it through serial_pipeline(env_setting=...). "
                "use_norm=False is accepted."
            )


GymnasiumEnv.add_key_check(check_dizoo_keys)
