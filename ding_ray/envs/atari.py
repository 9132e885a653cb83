"""Pixel envs: Atari games of ale-py (DI-engine's ``type='atari'``) and MinAtar games, by id.

``AtariEnv`` stacks the preprocessing of DI-engine's ``dizoo.atari`` env (DeepMind's): no-op resets
(1 to ``noop_max`` NOOPs), ``frame_skip`` repeats of each action with the max of the last two
frames, an 84x84 grayscale warp, FIRE after a reset where the game has it, a life lost ending an
episode and rewards clipped to their sign in training only (collector envs; evaluator envs play
whole games and keep the score), and the last ``frame_stack`` frames stacked channel first:
observations are uint8 ``(frame_stack, 84, 84)``.

Built from gymnasium's ``AtariPreprocessing`` (no-ops, skip, max-pool, warp: with
``terminal_on_life_loss=False``) and ``FrameStackObservation`` (frames stacked on axis 0, the
first frame repeated after a reset, as DI-engine pads); episodic life and fire reset are small
wrappers in ``atari_wrappers``, as DI-engine's (gymnasium has none that continues the game after a
lost life).
Where ding_ray differs from DI-engine:

- Observations stay uint8 (0-255); DI-engine scales them to float32 in [0, 1] in the env. The
  model scales them (a float32 copy of a 4x84x84 stack would be 4x the bytes in every replay).
- The grayscale frame is ALE's own (``getScreenGrayscale``), not OpenCV's conversion of RGB.
- Every id is made with ``frameskip=1`` so that the skip happens once, here: ``ALE/Pong-v5``
  (4 frames per step in gymnasium) gets DI-engine's skip and max-pool too, and keeps its own
  sticky actions (``repeat_action_probability`` 0.25; None in the config keeps the id's value).
- The no-op count comes from the env's seeded generator, so a seed replays an episode.

MinAtar (``MinAtar/Breakout-v1``, ...) is not DI-engine's: its games come out of the ordinary
``type='gymnasium'`` env, made channel first for a conv model, ``(C, 10, 10)`` float32 of 0/1 (the
package gives ``(10, 10, C)`` bool). Float, not uint8: each channel is a 0/1 map, which a model
that divides uint8 pixels by 255 would squash to nothing.

Both packages register their ids with gymnasium only when asked; ``game_ids.ensure_registered``
does it the first time such an id is made. Without them the error names the ``atari`` extra.
``env.manager.type='atari_vector'`` steps these envs in ale-py's C++ vector env instead
(``atari_vector_manager``).
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.envs.atari_wrappers import EpisodicLife, FireReset
from ding_ray.envs.game_ids import EXTRA_HINT, check_extra, ensure_registered, is_atari_id, is_minatar_id
from ding_ray.envs.gym_holder import GymEnvHolder
from ding_ray.envs.gymnasium_env import BaseEnvTimestep, make_gymnasium
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_REGISTRY


@ENV_REGISTRY.register("atari")
class AtariEnv(GymEnvHolder):
    """An ale-py game with DI-engine's Atari preprocessing behind ``reset / step / seed / close``."""

    config = dict(
        type="atari",
        env_id=None,  # an ale-py id: 'PongNoFrameskip-v4' (dizoo's), 'ALE/Pong-v5', ...
        collector_env_num=8,  # envs stepped together by each collector
        evaluator_env_num=5,  # envs stepped together by the evaluator
        n_evaluator_episode=5,  # episodes per evaluation
        stop_value=None,  # evaluation mean return that ends training; None: never stop early
        frame_stack=4,  # frames per observation: (frame_stack, 84, 84); must equal model.obs_shape[0]
        # True in collector envs, False in evaluator envs (DI-engine sets it per env list, see
        # create_collector_env_cfg); it switches episode_life and clip_rewards when they are None
        is_train=None,
        episode_life=None,  # a lost life ends the episode (the game goes on); None: is_train
        clip_rewards=None,  # rewards become their sign (-1, 0, 1); None: is_train
        noop_max=30,  # a reset steps 1..noop_max NOOPs (0: none)
        frame_skip=4,  # emulator frames per step, the observation the max of the last two
        screen_size=84,  # frames are warped to screen_size x screen_size grayscale
        fire_reset=True,  # press FIRE after a reset in games that have it
        repeat_action_probability=None,  # ALE's sticky actions; None: the id's own (v5: 0.25, v4: 0)
        max_episode_frames=None,  # ALE's frame limit of an episode; None: the id's own (108000)
        replay_path=None,  # folder for videos of evaluation episodes (needs moviepy)
        obs_plus_prev_action_reward=False,  # only False (DI-engine's wrapper is not supported yet)
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    @classmethod
    def check_config(cls, cfg: Mapping) -> None:
        """Refuse values the env cannot act on, before any env is built."""
        env_id = cfg.get("env_id")
        if is_minatar_id(env_id):
            raise ConfigError(
                f"env.env_id={env_id!r} is a MinAtar game, which env type 'atari' (ale-py games with "
                "DeepMind's preprocessing) does not make: leave the env type 'gymnasium' (the default; "
                "create_config env=dict(type='gymnasium')), which gives MinAtar's (C, 10, 10) maps."
            )
        check_extra(env_id, "atari")
        frame_stack = cfg.get("frame_stack", 4)
        if not isinstance(frame_stack, int) or frame_stack < 1:
            raise ConfigError(
                f"env.frame_stack must be an int >= 1 (frames per observation), got {frame_stack!r}; "
                "1 gives single frames of shape (1, 84, 84)."
            )
        if cfg.get("obs_plus_prev_action_reward", False):
            raise ConfigError(
                "env.obs_plus_prev_action_reward=True is not supported yet by ding_ray's atari env; "
                "leave it False."
            )

    @classmethod
    def check_obs_shape(cls, cfg: Mapping, obs_shape: Any) -> None:
        """Raise ``ConfigError`` naming the fix if the model's ``obs_shape`` does not fit the
        observations this config gives, ``(frame_stack, screen_size, screen_size)``."""
        if obs_shape is None:
            return
        size = int(cfg.get("screen_size", 84))
        want = (int(cfg.get("frame_stack", 4)), size, size)
        got = (int(obs_shape),) if isinstance(obs_shape, int) else tuple(int(s) for s in obs_shape)
        if got == want:
            return
        if len(got) == 3 and got == (want[1], want[2], want[0]):
            raise ConfigError(
                f"policy.model.obs_shape={list(got)} is channel last, but the atari env gives channel-first "
                f"observations {list(want)} (frames first, as DI-engine's). Set policy.model.obs_shape="
                f"{list(want)}."
            )
        if len(got) == 3 and got[1:] == want[1:]:
            raise ConfigError(
                f"env.frame_stack={want[0]} does not match policy.model.obs_shape[0]={got[0]}: the env "
                f"stacks {want[0]} frames per observation. Set env.frame_stack={got[0]} or "
                f"policy.model.obs_shape={list(want)}."
            )
        raise ConfigError(
            f"policy.model.obs_shape={obs_shape!r} does not fit the atari env's observations {list(want)} "
            f"(frame_stack, screen_size, screen_size). Set policy.model.obs_shape={list(want)}."
        )

    @staticmethod
    def create_collector_env_cfg(cfg: Mapping) -> list[EasyDict]:
        """DI-engine's per-env configs of the collector: training envs (episodic life, clipped rewards)."""
        one = EasyDict(copy.deepcopy(dict(cfg)), is_train=True)
        return [copy.deepcopy(one) for _ in range(cfg["collector_env_num"])]

    @staticmethod
    def create_evaluator_env_cfg(cfg: Mapping) -> list[EasyDict]:
        """The evaluator's: whole games, true scores."""
        one = EasyDict(copy.deepcopy(dict(cfg)), is_train=False)
        return [copy.deepcopy(one) for _ in range(cfg["evaluator_env_num"])]

    def __init__(self, cfg: Mapping | None = None) -> None:
        cfg = checked_config(type(self), {k: v for k, v in (cfg or {}).items() if k != "manager"}, "env")
        self.check_config(cfg)
        self._cfg = cfg
        train = bool(cfg.is_train)
        self.episode_life = train if cfg.episode_life is None else bool(cfg.episode_life)
        self.clip_rewards = train if cfg.clip_rewards is None else bool(cfg.clip_rewards)
        self._env = self._make()
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space
        self._episode_return = 0.0

    @property
    def game(self) -> str:
        """ale-py's ROM name of this env ('pong')."""
        return gym.spec(self._cfg.env_id).kwargs["game"]

    def make_kwargs(self) -> dict[str, Any]:
        """``gymnasium.make`` arguments of the bare ALE env (one frame per step)."""
        kwargs: dict[str, Any] = {"frameskip": 1}
        if self._cfg.repeat_action_probability is not None:
            kwargs["repeat_action_probability"] = float(self._cfg.repeat_action_probability)
        if self._cfg.max_episode_frames is not None:
            kwargs["max_num_frames_per_episode"] = int(self._cfg.max_episode_frames)
        return kwargs

    def vector_kwargs(self) -> dict[str, Any]:
        """The same preprocessing as arguments of ale-py's ``AtariVectorEnv`` (less ``num_envs``)."""
        spec = gym.spec(self._cfg.env_id).kwargs
        sticky = self._cfg.repeat_action_probability
        sticky = spec.get("repeat_action_probability", 0.0) if sticky is None else sticky
        frames = self._cfg.max_episode_frames
        frames = spec.get("max_num_frames_per_episode", 108000) if frames is None else frames
        return dict(
            game=self.game,
            stack_num=self._cfg.frame_stack,
            frameskip=self._cfg.frame_skip,
            img_height=self._cfg.screen_size,
            img_width=self._cfg.screen_size,
            noop_max=self._cfg.noop_max,
            use_fire_reset=self._cfg.fire_reset,
            episodic_life=False,  # ale-py's would restart the game at a lost life
            life_loss_info=self.episode_life,  # the episode ends, the game goes on (DI-engine's)
            reward_clipping=self.clip_rewards,
            repeat_action_probability=float(sticky),
            max_num_frames_per_episode=int(frames),
            full_action_space=bool(spec.get("full_action_space", False)),
        )

    def _make(self, render_mode: str | None = None) -> gym.Env:
        from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

        env_id = self._cfg.env_id
        if env_id is None:
            raise EnvError("env.env_id is not set; give an ale-py id such as 'PongNoFrameskip-v4'.")
        if not ensure_registered(env_id):
            make_gymnasium(env_id)  # raises, naming the registered ids closest to it
        if not is_atari_id(env_id):
            raise ConfigError(
                f"env.env_id={env_id!r} is not an Atari game of ale-py; env type 'atari' makes those only. "
                "Use env type 'gymnasium' (the default) for other gymnasium ids."
            )
        _check_rom(env_id)
        kwargs = self.make_kwargs()
        if render_mode is not None:
            kwargs["render_mode"] = render_mode
        env = make_gymnasium(env_id, **kwargs)
        if importlib.util.find_spec("cv2") is None:
            raise EnvError(f"The 84x84 warp of Atari frames needs OpenCV. {EXTRA_HINT}.")
        env = AtariPreprocessing(
            env,
            noop_max=self._cfg.noop_max,
            frame_skip=self._cfg.frame_skip,
            screen_size=self._cfg.screen_size,
            terminal_on_life_loss=False,
            grayscale_obs=True,
        )
        if self.episode_life:
            env = EpisodicLife(env)
        meanings = env.unwrapped.get_action_meanings()
        if self._cfg.fire_reset and len(meanings) >= 3 and meanings[1] == "FIRE":
            env = FireReset(env)
        return FrameStackObservation(env, self._cfg.frame_stack)

    def reset(self) -> np.ndarray:
        obs, _ = self._env.reset(seed=self._reset_seed())
        self._episode_return = 0.0
        return obs

    def step(self, action: Any) -> BaseEnvTimestep:
        obs, reward, terminated, truncated, info = self._env.step(int(np.asarray(action).item()))
        reward = float(reward)
        if self.clip_rewards:
            reward = float(np.sign(reward))
        # DI-engine's return: of the rewards the policy saw (clipped, one life, in training)
        self._episode_return += reward
        info["truncated"] = bool(truncated and not terminated)
        done = bool(terminated or truncated)
        if done:
            info["eval_episode_return"] = self._episode_return
        return BaseEnvTimestep(obs, reward, done, info)

    def random_action(self) -> int:
        return int(self.action_space.sample())

    def enable_save_replay(self, replay_path: str) -> None:
        """Record every episode of this env (the emulator's RGB screen) as a video under ``replay_path``."""
        self._env.close()
        self._record(self._make("rgb_array"), replay_path)

    def __repr__(self) -> str:
        return f"AtariEnv({self._cfg.env_id})"


def _check_rom(env_id: str) -> None:
    """A clear error for a registered id whose ROM ale-py cannot find (ale-py < 0.9 shipped none)."""
    from ale_py import roms

    game = gym.spec(env_id).kwargs.get("game")
    if game is not None and roms.get_rom_path(game) is None:
        raise EnvError(
            f"ale-py has no ROM for '{game}' (env id {env_id!r}). ale-py >= 0.9 ships the ROMs: "
            'pip install -U "ding_ray[atari]" (or pip install -U ale-py).'
        )
