"""Any gymnasium environment, by id, behind DI-engine's env interface."""

from __future__ import annotations

import copy
from collections import namedtuple
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.envs.game_ids import (
    EXTRA_HINT,
    check_extra,
    ensure_registered,
    is_atari_id,
    is_minatar_id,
    minatar_obs,
    minatar_space,
    missing_packages,
)
from ding_ray.envs.gym_holder import GymEnvHolder
from ding_ray.envs.make_options import discretised_space, make_kwargs, unit_of_index
from ding_ray.envs.step_errors import step_result_error
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_REGISTRY, close_matches

BaseEnvTimestep = namedtuple("BaseEnvTimestep", ["obs", "reward", "done", "info"])
BaseEnvTimestep.__doc__ = """One env step. ``done`` means the episode is over (terminated or truncated);
``info['truncated']`` tells a time limit from a real termination, and at the end of an episode
``info['eval_episode_return']`` holds its return."""


def make_gymnasium(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` with an error that names the nearest registered ids when ``env_id`` is unknown."""
    if env_id is None:
        raise EnvError("env.env_id is not set; give a gymnasium id such as 'CartPole-v1'.")
    if not ensure_registered(env_id):  # ale-py's and MinAtar's ids are registered when first asked for
        hint = close_matches(env_id, gym.envs.registry.keys(), n=5)
        missing = missing_packages()
        raise EnvError(
            f"Unknown gymnasium env id '{env_id}'."
            + (f" Close registered ids: {hint}." if hint else " See gymnasium.envs.registry for the ids.")
            + " Fix the id, or register it with gymnasium.register before training starts (in the training "
            "script, or in a module the config's import_names lists)."
            + (f" {EXTRA_HINT} (not installed: {', '.join(missing)})." if missing else "")
        )
    try:
        return gym.make(env_id, disable_env_checker=True, **kwargs)
    except gym.error.DependencyNotInstalled as e:
        extra = _extra_of(env_id)
        if extra is not None:
            raise EnvError(
                f"Env '{env_id}' needs the {extra} extra: pip install \"ding_ray[{extra}]\" ({e})"
            ) from e
        raise EnvError(f"Env '{env_id}' needs an extra package: {e}") from e


def _extra_of(env_id: str) -> str | None:
    """The ding_ray extra that installs what a registered gymnasium env needs, if there is one."""
    entry_point = str(gym.envs.registry[env_id].entry_point)
    for extra in ("mujoco", "box2d"):
        if entry_point.startswith(f"gymnasium.envs.{extra}"):
            return extra
    return None


def space_info(space: gym.Space) -> tuple[str, int]:
    """('discrete', n) or ('continuous', dim) for an action space."""
    if isinstance(space, gym.spaces.Discrete):
        return "discrete", int(space.n)
    if isinstance(space, gym.spaces.Box):
        return "continuous", int(np.prod(space.shape))
    raise EnvError(f"Action space {space} is not supported; use Discrete or Box.")


def one_hot_space(space: gym.Space) -> gym.Space:
    """The observation space a policy sees: a ``Discrete(n)`` space becomes a one-hot ``Box(n)``
    (as dizoo encodes FrozenLake or Taxi), so no network is ever fed a raw state index."""
    if isinstance(space, gym.spaces.Discrete):
        return gym.spaces.Box(0.0, 1.0, shape=(int(space.n),), dtype=np.float32)
    if isinstance(space, gym.spaces.Box):
        return space
    raise EnvError(
        f"Observation space {space} is not supported: ding_ray's models take Box (vector or image) or "
        "Discrete observations. Wrap the env with a gymnasium.ObservationWrapper that returns an array "
        "(e.g. gymnasium.wrappers.FlattenObservation for Dict or Tuple spaces)."
    )


@ENV_REGISTRY.register("gymnasium")
class GymnasiumEnv(GymEnvHolder):
    """A gymnasium env with DI-engine's ``reset / step -> BaseEnvTimestep / seed / close``.

    Discrete observations come out one-hot encoded (float32), Box observations as they are.
    """

    config = dict(
        type="gymnasium",
        env_id=None,  # gymnasium id, e.g. 'CartPole-v1'
        collector_env_num=8,  # envs stepped together by each collector
        evaluator_env_num=5,  # envs stepped together by the evaluator
        n_evaluator_episode=5,  # episodes per evaluation
        stop_value=None,  # evaluation mean return that ends training; None: never stop early
        max_episode_steps=None,  # override the env's time limit
        replay_path=None,  # folder for videos of evaluation episodes (needs moviepy)
        # Box actions: the policy acts in [-1, 1] (SAC's tanh) and the env clips them to [-1, 1] and
        # maps that affinely onto [low, high] (DI-engine's dizoo option); random actions stay [low, high]
        act_scale=False,
        kwargs=dict(),  # extra keyword arguments of gymnasium.make
        # Keys of dizoo's env classes; a value ding_ray cannot act on is refused as not supported yet
        # (the make arguments by ding_ray.envs.make_options, the rest by the checks in key_checks).
        # None: the env's own actions. True/False: gymnasium's `continuous` argument where the env
        # has one (LunarLander, CarRacing); on a 1-D Box env (Pendulum) False gives 11 actions evenly
        # over [-1, 1], mapped onto the env's bounds by act_scale (dizoo's PendulumEnv)
        continuous=None,
        rew_clip=False,  # rewards below -10 count as -10 for training; the episode return stays unclipped
        action_clip=False,  # clip Box actions to [-1, 1] before they reach the env
        env_wrapper="default",  # 'default' or 'mujoco_default' (DingEnvWrapper's sets: add nothing here)
        norm_obs=None,  # dizoo's dict(use_norm=False); use_norm=True is not supported yet
        norm_reward=None,  # dizoo's dict(use_norm=False); use_norm=True is not supported yet
        desc=None,  # FrozenLake's map as a list of strings (a gymnasium.make argument)
        map_name=None,  # FrozenLake's '4x4' or '8x8'
        is_slippery=None,  # FrozenLake's slippery ice
        obs_plus_prev_action_reward=False,  # only False (True is not supported yet)
        action_bins_per_branch=None,  # only None (dizoo's branching MuJoCo actions; not supported yet)
        delay_reward_step=0,  # only 0 or 1 (dizoo's delayed MuJoCo rewards; not supported yet)
        save_replay_gif=False,  # only False: env.replay_path records mp4 videos instead
        replay_path_gif=None,  # only None, as save_replay_gif
    )

    # Checks that refuse values of the keys above this env cannot act on yet; importing ding_ray.envs
    # adds dizoo's (ding_ray.compat.dizoo_env_keys)
    key_checks: ClassVar[list[Callable[[Mapping], None]]] = []

    @classmethod
    def add_key_check(cls, check: Callable[[Mapping], None]) -> None:
        """Run ``check(env_cfg)`` (it raises ``ConfigError``) on every config this env is built from."""
        if check not in cls.key_checks:
            cls.key_checks.append(check)

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    @classmethod
    def check_config(cls, cfg: dict) -> None:
        """Refuse (``ConfigError``) key values this env cannot act on yet (``key_checks``), and
        Atari ids, whose raw RGB frames no model takes without DI-engine's preprocessing."""
        for check in cls.key_checks:
            check(cfg)
        env_id = cfg.get("env_id")
        check_extra(env_id)
        if isinstance(env_id, str) and ensure_registered(env_id) and is_atari_id(env_id):
            raise ConfigError(
                f"env.env_id={env_id!r} is an Atari game: use DI-engine's env type 'atari' (create_config "
                "env=dict(type='atari'); on the command line --set create_config.env.type=atari), which "
                "gives DeepMind's preprocessed frames (84x84 grayscale, frame_stack=4: obs_shape "
                "[4, 84, 84]). Env type 'gymnasium' would give raw 210x160 RGB screens."
            )

    def __init__(self, cfg: dict | None = None, env: gym.Env | None = None) -> None:
        """``env``: an env instance to wrap instead of making one from ``cfg.env_id``."""
        cfg = checked_config(type(self), {k: v for k, v in (cfg or {}).items() if k != "manager"}, "env")
        for check in self.key_checks:
            check(cfg)
        self._cfg = cfg
        self._given_env = env is not None
        self._env = env if env is not None else self._make()
        raw_space = self._env.observation_space
        self._obs_n = int(raw_space.n) if isinstance(raw_space, gym.spaces.Discrete) else None
        self._minatar = is_minatar_id(getattr(self._env.spec, "id", None))
        self.observation_space = minatar_space(raw_space) if self._minatar else one_hot_space(raw_space)
        env_actions = self._env.action_space
        self._discretised = discretised_space(env_actions, cfg.continuous)
        self.action_space = self._discretised or env_actions
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self._act_scale = self._scale_of(env_actions) if cfg.act_scale else None
        self._episode_return = 0.0

    @staticmethod
    def _scale_of(space: gym.Space) -> tuple[np.ndarray, np.ndarray]:
        """``(center, half width)`` of a bounded Box, for ``env.act_scale``."""
        if not isinstance(space, gym.spaces.Box) or not space.is_bounded():
            raise EnvError(
                f"env.act_scale=True needs a bounded Box action space, but the env's is {space}. "
                "Set act_scale=False."
            )
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        return (high + low) / 2, (high - low) / 2

    def _observe(self, obs: Any) -> np.ndarray:
        if self._minatar:  # (10, 10, C) bool -> (C, 10, 10) float32, for a conv model
            return minatar_obs(obs)
        if self._obs_n is None:
            return obs
        one_hot = np.zeros(self._obs_n, dtype=np.float32)
        one_hot[int(obs)] = 1.0
        return one_hot

    def _make(self, render_mode: str | None = None) -> gym.Env:
        kwargs = {**make_kwargs(self._cfg, self._cfg.env_id), **copy.deepcopy(dict(self._cfg.kwargs))}
        if self._cfg.max_episode_steps is not None:
            kwargs["max_episode_steps"] = self._cfg.max_episode_steps
        if render_mode is not None:
            kwargs["render_mode"] = render_mode
        return make_gymnasium(self._cfg.env_id, **kwargs)

    def reset(self) -> np.ndarray:
        obs, _ = self._env.reset(seed=self._reset_seed())
        self._episode_return = 0.0
        return self._observe(obs)

    def step(self, action: Any) -> BaseEnvTimestep:
        result = self._env.step(self._env_action(action))
        try:
            obs, reward, terminated, truncated, info = result
            episode_return = self._episode_return + reward
            info["truncated"] = bool(truncated and not terminated)
            reward = float(reward)
        except Exception as e:
            error = step_result_error(result)  # a step of another API: say which part is wrong
            if error is None:
                raise
            raise error from e
        self._episode_return = episode_return
        if self._cfg.rew_clip:  # dizoo's BipedalWalker: a fall costs -10 in training, not -100
            reward = max(-10.0, reward)
        done = terminated or truncated
        if done:
            info["eval_episode_return"] = self._episode_return
        return BaseEnvTimestep(self._observe(obs), reward, bool(done), info)

    def _env_action(self, action: Any) -> Any:
        """The policy's action as the gymnasium env takes it."""
        if self._discrete:  # an int, or an array or tensor of one element (DI-engine's [a])
            index = int(np.asarray(action).item())
            if self._discretised is None:
                return index
            # an index of the evenly spaced actions in [-1, 1]
            action = np.full(self._env.action_space.shape, unit_of_index(index))
        if self._cfg.action_clip:
            action = np.clip(action, -1.0, 1.0)
        if self._act_scale is not None:
            center, half = self._act_scale
            unit = np.clip(np.asarray(action, dtype=np.float64).reshape(center.shape), -1.0, 1.0)
            action = center + half * unit
        if isinstance(action, np.ndarray):
            # A float action goes at full precision: under numpy 2 a float32 one would make the env
            # compute in float32 (NEP 50: Pendulum's torque, for one), where gym under numpy 1, as
            # DI-engine runs it, computes in float64.
            dtype = self._env.action_space.dtype
            action = action.astype(np.float64 if np.issubdtype(dtype, np.floating) else dtype)
        return action

    def random_action(self) -> Any:
        # Uniform over the env's own space, with act_scale too, as DI-engine's random warm-up samples
        # its env's action space (dizoo's PendulumEnv: [-2, 2]); _env_action clips such an action to
        # [-1, 1] before scaling it, as dizoo's affine_transform does.
        return self.action_space.sample()

    def enable_save_replay(self, replay_path: str) -> None:
        """Record every episode of this env as a video under ``replay_path``."""
        if self._given_env:
            if self._env.render_mode != "rgb_array":
                raise EnvError(
                    "Recording videos of a wrapped env needs it made with render_mode='rgb_array' "
                    f"(gymnasium.make(..., render_mode='rgb_array')); it has {self._env.render_mode!r}."
                )
            env = self._env
        else:
            self._env.close()
            env = self._make("rgb_array")
        self._record(env, replay_path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._cfg.env_id or self._env})"


class DingEnvWrapper(GymnasiumEnv):
    """DI-engine's wrapper of a gym(nasium) env, as dizoo's ``*_main.py`` scripts build it::

        DingEnvWrapper(gymnasium.make("CartPole-v1"), EasyDict(env_wrapper="default"))
        DingEnvWrapper(cfg=EasyDict(env_id="CartPole-v1"))

    ``env_wrapper='default'`` (or ``'mujoco_default'``) adds nothing: DI-engine's sets of those names
    only add what ``GymnasiumEnv`` already does, the episode return in the final ``info``. Its Atari
    wrapper set is not here: wrap the env with gymnasium's wrappers before passing it in.
    ``rew_clip`` and the other dizoo keys act as in ``GymnasiumEnv``.

    As DI-engine's, its step answers the reward as a float32 array of shape ``(1,)`` (so
    ``timestep.reward.item()`` works) and it has a ``reward_space``: a ``(1,)`` Box over the env's
    ``reward_range``, unbounded for an env that states none (gymnasium 1.x envs).
    """

    def __init__(
        self,
        env: gym.Env | None = None,
        cfg: dict | None = None,
        seed_api: bool = True,
        caller: str = "collector",
        is_gymnasium: bool = True,
    ) -> None:
        cfg = EasyDict(cfg or {})
        if env is None and not cfg.get("env_id"):
            raise EnvError("DingEnvWrapper needs an env instance or cfg.env_id.")
        if env is not None and not isinstance(env, gym.Env):
            raise EnvError(
                f"DingEnvWrapper wraps gymnasium envs; got {type(env).__name__}. Make the env with "
                "gymnasium.make (the successor of gym) instead of gym.make."
            )
        self._seed_api, self._caller = seed_api, caller
        super().__init__(cfg, env=env)
        low, high = getattr(self._env, "reward_range", (-np.inf, np.inf))
        self.reward_space = gym.spaces.Box(low=low, high=high, shape=(1,), dtype=np.float32)

    def step(self, action: Any) -> BaseEnvTimestep:
        timestep = super().step(action)
        return timestep._replace(reward=np.array([timestep.reward], dtype=np.float32))


def get_vec_env_setting(
    cfg: dict, collect: bool = True, eval_: bool = True
) -> tuple[type, list[EasyDict] | None, list[EasyDict] | None]:
    """``(env class, per-env collector configs, per-env evaluator configs)`` from an env section;
    ``collect=False`` / ``eval_=False`` give None in place of that list, as DI-engine's."""
    cfg = EasyDict(cfg)
    env_cls = ENV_REGISTRY.get(cfg.get("type", "gymnasium"))
    env_cfg = EasyDict({k: v for k, v in cfg.items() if k != "manager"})
    # DI-engine's hooks where the env class has them: the atari env's collector envs train
    # (episodic life, clipped rewards), its evaluator envs play whole games
    make_collector = getattr(env_cls, "create_collector_env_cfg", None)
    make_evaluator = getattr(env_cls, "create_evaluator_env_cfg", None)
    hooks = make_collector is not None and make_evaluator is not None

    def env_cfgs(make: Callable, env_num_key: str) -> list[EasyDict]:
        if hooks:
            return list(make(env_cfg))
        return [copy.deepcopy(env_cfg) for _ in range(cfg[env_num_key])]

    collector = env_cfgs(make_collector, "collector_env_num") if collect else None
    evaluator = env_cfgs(make_evaluator, "evaluator_env_num") if eval_ else None
    return env_cls, collector, evaluator
