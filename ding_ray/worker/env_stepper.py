"""``EnvStepper``: one step of every ready env of an env manager, the core of every collecting and
evaluating loop (the serial collectors, the battle collectors, the task-style ``rolloutor`` and
both evaluators).

The calling loop::

    stepper = EnvStepper(env_manager, [policy_mode])
    forward = numpy_forward(policy_mode)
    while more_wanted:
        batch = stepper.act(forward, stepper.ready_obs(), eps=0.1)
        for k, env_id in enumerate(batch.env_ids.tolist()):
            if batch.abnormal[k]:
                continue  # the env failed and was reset: nothing to keep of this step
            keep(batch.obs[k], batch.outputs[k], batch.timesteps[k])  # the caller's own part

The stepper owns what every loop did alike: matching each answer with the observation and output
it came from (an async manager answers some envs in a later call), telling failed steps
(``info['abnormal']``) and episode ends apart, counting each env's episode steps, and resetting
the policies' state of an env whose episode ended. A reward given as an array of one element (as
DI-engine's envs and ``DingEnvWrapper`` give it) reaches the loops as a float.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

Forward = Callable[..., dict[int, dict[str, Any]]]


class StepBatch(NamedTuple):
    """The answers of one env-manager step, one row per env that answered."""

    env_ids: np.ndarray  # int64 [n]: the envs that answered, in the manager's order
    timesteps: list[Any]  # their timesteps
    obs: list[Any]  # the observation each env acted on
    outputs: list[Any]  # the policy output each env acted with
    done: np.ndarray  # bool [n]: the episode ended with this step (a failed step is not done)
    abnormal: np.ndarray  # bool [n]: the step failed; the manager reset the env, the step is no data
    length: np.ndarray  # int64 [n]: steps of the episode so far, this one included (0 where abnormal)

    @property
    def steps(self) -> int:
        """Env steps taken (failed steps do not count)."""
        return len(self.env_ids) - int(self.abnormal.sum())


class EnvStepper:
    """Steps ``env`` (an env manager) with the actions of ``policies`` (policy modes, whose
    ``reset([env_id])`` is called when that env's episode ends; several for a battle env)."""

    def __init__(self, env: Any, policies: Sequence[Any] = ()) -> None:
        self.env = env
        self.policies = list(policies)
        self.episode_length = np.zeros(env.env_num, dtype=np.int64)  # steps of each env's episode
        # What each env acted on: an async env manager answers some steps in a later call.
        self._obs: dict[int, Any] = {}
        self._outputs: dict[int, Any] = {}

    def ready_obs(self) -> dict[int, Any]:
        """The observations of the envs ready to act (a copy: the manager refills it while stepping)."""
        return dict(self.env.ready_obs)

    def act(self, forward: Forward, obs: dict[int, Any], **kwargs: Any) -> StepBatch:
        """Run ``forward(obs, **kwargs)`` (``{env_id: output}``, each with an ``action``) and step
        the envs with its actions."""
        outputs = forward(obs, **kwargs)
        return self.step(obs, outputs, {env_id: out["action"] for env_id, out in outputs.items()})

    def step(self, obs: dict[int, Any], outputs: dict[int, Any], actions: dict[int, Any]) -> StepBatch:
        """Step the envs with ``actions``, chosen from ``obs`` with ``outputs``."""
        self._obs.update(obs)
        self._outputs.update(outputs)
        answers = self.env.step(actions)
        env_ids = np.fromiter(answers, dtype=np.int64, count=len(answers))
        timesteps = [_scalar_reward(t) for t in answers.values()]
        abnormal = np.fromiter((_failed(t) for t in timesteps), dtype=bool, count=len(timesteps))
        done = np.fromiter((bool(t.done) for t in timesteps), dtype=bool, count=len(timesteps)) & ~abnormal
        lengths = self.episode_length
        lengths[env_ids] += 1
        lengths[env_ids[abnormal]] = 0
        length = lengths[env_ids]
        ended = env_ids[done | abnormal]
        lengths[ended] = 0
        self._reset_policies(ended.tolist())
        env_list = env_ids.tolist()
        return StepBatch(
            env_ids,
            timesteps,
            [self._obs[i] for i in env_list],
            [self._outputs[i] for i in env_list],
            done,
            abnormal,
            length,
        )

    def end_episode(self, env_id: int) -> None:
        """End env ``env_id``'s episode where the caller cut it (a non-finite step, a step cap)."""
        self.episode_length[env_id] = 0
        self._reset_policies([env_id])

    def _reset_policies(self, env_ids: list[int]) -> None:
        if env_ids:
            for policy in self.policies:
                policy.reset(env_ids)


def _scalar_reward(timestep: Any) -> Any:
    """``timestep`` with a reward of shape ``(1,)`` as a float: the loops add rewards up per episode
    and keep one number per transition."""
    reward = timestep.reward
    if isinstance(reward, np.ndarray) and reward.shape == (1,):
        return timestep._replace(reward=float(reward[0]))
    return timestep


def _failed(timestep: Any) -> bool:
    """Whether the manager reports the step as failed (a battle env's ``info`` is a list per player)."""
    info = timestep.info
    return isinstance(info, dict) and bool(info.get("abnormal", False))


def random_forward(env: Any) -> Forward:
    """A forward of uniform random actions from ``env`` (an env manager's ``random_action``)."""
    return lambda obs, **kwargs: {env_id: {"action": env.random_action(env_id)} for env_id in obs}


def battle_forward(forwards: Sequence[Forward]) -> Forward:
    """One forward of a battle env's players: ``forwards[p]`` acts on player p's observation. Each
    env's output holds ``action`` (the players' actions, as a battle env takes them) and
    ``players`` (each player's own output)."""

    def _forward(obs: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        outputs = [
            forward({env_id: o[player] for env_id, o in obs.items()}, **kwargs)
            for player, forward in enumerate(forwards)
        ]
        return {
            env_id: {
                "action": [out[env_id]["action"] for out in outputs],
                "players": [out[env_id] for out in outputs],
            }
            for env_id in obs
        }

    return _forward
