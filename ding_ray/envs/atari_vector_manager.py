"""``AtariVectorEnvManager`` (``env.manager.type='atari_vector'``): the envs of ``type='atari'`` in
ale-py's native vector env, which steps the emulators, warps and stacks the frames in C++ threads.

One call steps every env, with no process per env and no pickling: on 2 shared cores it stepped
8 Pong envs about twice as fast as the subprocess manager, within 2 % of the bare AtariVectorEnv
(``benchmarks/bench_atari_envs.py``).

The same preprocessing as ``AtariEnv``, with ale-py's own differences:

- Before an episode's first frames the stack holds zeros (``AtariEnv`` repeats the first frame,
  as DI-engine does).
- FIRE after a reset is one emulator frame (``AtariEnv``: one step of ``frame_skip`` frames), and
  after a lost life in training the game goes on without a NOOP or a FIRE.
- The emulator's seed comes from the env's seed by ale-py's rule, not gymnasium's, so the same seed
  gives another game than ``AtariEnv`` where the game draws random numbers (no-ops, Breakout's
  ball); in a game that draws none (Pong without no-ops or sticky actions) the frames are the same.
- All envs step together. An env left out of a step's actions (the evaluator's envs that have
  their episodes) is stepped with NOOP and leaves ``ready_obs`` until the next ``reset``, its
  episode abandoned.
- No per-env error isolation, timeouts or videos: an error of the emulator ends the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ding_ray.envs.env_manager import SpacesOnlyEnvManager
from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_MANAGER_REGISTRY


@ENV_MANAGER_REGISTRY.register("atari_vector")
class AtariVectorEnvManager(SpacesOnlyEnvManager):
    """DI-engine's env-manager interface (``{env_id: ...}`` dicts, auto reset, episode returns in the
    final ``info``) over one ``ale_py.vector_env.AtariVectorEnv``."""

    config = dict(
        type="atari_vector",
        num_threads=0,  # C++ threads stepping the emulators; 0: ale-py's choice
        thread_affinity_offset=-1,  # first CPU core the threads are pinned to; -1: not pinned
    )
    _envs_where = "steps its envs inside ale-py's vector env"

    def _setup(self) -> None:
        for key in ("step_timeout", "reset_timeout"):
            if self._cfg[key] is not None:
                raise ConfigError(
                    f"env.manager.{key} is not supported by the atari_vector manager: its envs step in "
                    "ale-py's C++ threads, which cannot be interrupted. Leave it None, or use "
                    "env.manager.type='subprocess'."
                )
        ref = self._env_fn[0]()
        vector_kwargs = getattr(ref, "vector_kwargs", None)
        if not callable(vector_kwargs):
            ref.close()
            raise ConfigError(
                f"env.manager.type='atari_vector' runs ale-py games in ale-py's vector env; the env here is "
                f"{type(ref).__name__}. Use it with env type 'atari' (create_config env=dict(type='atari')), "
                "or another manager ('base', 'subprocess')."
            )
        # Every env of one manager shares the first one's preprocessing (the pipelines give all of
        # them one config).
        self._vector_kwargs = vector_kwargs()
        self._read_spaces(ref)
        self._returns = np.zeros(self.env_num)
        self._pending_seed: dict[int, int] = {}
        self._vec = None
        self._closed = True

    # ----- properties ---------------------------------------------------------------------------
    def random_action(self, env_id: int) -> Any:
        return int(super().random_action(env_id))  # a Python int, as AtariEnv.random_action gives

    # ----- lifecycle ------------------------------------------------------------------------------
    def seed(self, seed: int | Sequence[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i``, applied at its next reset; with ``dynamic_seed=False`` at every
        reset, the automatic ones included (evaluators replay the same games)."""
        seeds = [seed + i for i in range(self.env_num)] if isinstance(seed, int) else list(seed)
        self._seeds, self._dynamic_seed = [int(s) for s in seeds], dynamic_seed
        for i, s in enumerate(self._seeds):
            self._pending_seed[i] = s
            self._action_spaces[i].seed(s)

    def _start_envs(self) -> None:
        from ale_py.vector_env import AtariVectorEnv

        self._vec = AtariVectorEnv(
            num_envs=self.env_num,
            autoreset_mode="SameStep",  # the final obs in info, the next episode's first in obs
            num_threads=self._cfg.num_threads,
            thread_affinity_offset=self._cfg.thread_affinity_offset,
            **self._vector_kwargs,
        )

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env (or those named in ``reset_param``) and make them ready."""
        if not self._launched:
            return self.launch(reset_param)
        ids = sorted(range(self.env_num) if reset_param is None else reset_param.keys())
        if self._seeds is not None and not self._dynamic_seed:
            self._pending_seed.update({i: self._seeds[i] for i in ids})
        self._episode_count = [0] * self.env_num
        obs = self._reset_envs(ids)
        for i in ids:
            self._ready_obs[i] = obs[i]

    def _reset_envs(self, ids: Sequence[int]) -> np.ndarray:
        """Reset envs ``ids`` (their pending seeds applied, -1: ale-py's unseeded reset); the
        observations of all envs, those not reset as they were."""
        seeds = np.array([self._pending_seed.pop(i, -1) for i in ids], dtype=np.int64)
        self._returns[list(ids)] = 0.0
        if len(ids) == self.env_num:
            obs, _ = self._vec.reset(seed=seeds)
        else:
            mask = np.zeros(self.env_num, dtype=bool)
            mask[list(ids)] = True
            obs, _ = self._vec.reset(seed=seeds, options={"reset_mask": mask})
        return obs

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        if not self._launched:
            raise EnvError("Call launch() on the env manager before step().")
        ready = self._ready_obs
        batch = np.zeros(self.env_num, dtype=np.int64)  # NOOP for envs given no action
        for env_id, action in actions.items():
            if env_id not in ready:
                raise EnvError(
                    f"env {env_id} has no ready observation (its episodes are done, or it was left out of "
                    "an earlier step); step only the env ids of ready_obs, or reset it first."
                )
            batch[env_id] = int(np.asarray(action).item())
        for env_id in [i for i in ready if i not in actions]:
            del ready[env_id]  # stepped with NOOP below: its observation is no longer current
        obs, reward, terminated, truncated, info = self._vec.step(batch)
        self._returns += reward
        final = info.get("final_obs")
        lives = info["lives"]
        timesteps, reseed = {}, []
        for env_id in actions:
            done = bool(terminated[env_id] or truncated[env_id])
            truncated_only = bool(truncated[env_id] and not terminated[env_id])
            env_info = {"truncated": truncated_only, "lives": int(lives[env_id])}
            if not done:
                ready[env_id] = obs[env_id]
                timesteps[env_id] = BaseEnvTimestep(obs[env_id], float(reward[env_id]), False, env_info)
                continue
            env_info["eval_episode_return"] = float(self._returns[env_id])
            self._returns[env_id] = 0.0
            timesteps[env_id] = BaseEnvTimestep(final[env_id], float(reward[env_id]), True, env_info)
            self._episode_count[env_id] += 1
            if self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num:
                ready[env_id] = obs[env_id]  # ale-py reset it in the same step
                if self._seeds is not None and not self._dynamic_seed:
                    reseed.append(env_id)
            else:
                del ready[env_id]
        if reseed:  # each episode of an evaluator's env starts from its own seed
            self._pending_seed.update({i: self._seeds[i] for i in reseed})
            fresh = self._reset_envs(reseed)
            for i in reseed:
                ready[i] = fresh[i]
        return timesteps

    def reward_shaping(self, env_id: int, transitions: list) -> list:
        raise EnvError(
            "collector reward_shaping=True needs env objects, which the atari_vector manager does not have; "
            "set policy.collect.collector.reward_shaping=False or use env.manager.type='subprocess'."
        )

    def enable_save_replay(self, replay_path: str) -> None:
        raise EnvError(
            "The atari_vector manager cannot record videos (its frames are the preprocessed 84x84 ones); "
            "record with env.manager.type='base' or 'subprocess' (e.g. ding-ray eval ... --set "
            "env.manager.type=base)."
        )

    def disable_save_replay(self) -> None:
        self._replay_path = None

    def close(self) -> None:
        if self._closed:
            return
        self._vec.close()
        self._vec = None
        self._closed = True
        self._launched = False
        self._ready_obs = {}

    def _env_name(self, env_id: int) -> str:
        return f"env {env_id} ({self._env_repr}, in ale-py's vector env)"
