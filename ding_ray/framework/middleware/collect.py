"""Collection stages: step-wise (``inferencer`` + ``rolloutor``) and whole calls of a collector.

DI-engine offers two ways to collect. The step-wise one splits an env step into a policy forward
(``inferencer``) and the env step itself (``rolloutor``), filling a ``TransitionList``; the
``StepCollector`` / ``EpisodeCollector`` stages loop the pair until enough data is there. The
other way hands the whole job to a collector object: ``collector(cfg, collectors)`` calls
``collect`` on ding_ray's ``SampleSerialCollector`` / ``EpisodeSerialCollector`` (or on Ray actor
handles offering the same method), which is how a pipeline scales out. Data is lists of
transition dicts with numpy arrays, never treetensors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ding_ray.data.buffer.pipeline import pipeline_buffer
from ding_ray.data.columnar import to_numpy
from ding_ray.errors import ConfigError
from ding_ray.framework.context import OnlineRLContext
from ding_ray.framework.interfaces import Buffer, Collector, WarmUpCollector
from ding_ray.worker.env_stepper import EnvStepper

logger = logging.getLogger(__name__)


class TransitionList:
    """Transitions kept per env, in the order each env produced them.

    ``append`` takes ``episode_end`` apart from the transition's ``done``: with
    ``policy.learn.bootstrap_on_truncation`` a transition's ``done`` marks real terminations only,
    yet a truncated episode still ends there.
    """

    def __init__(self, env_num: int) -> None:
        self.env_num = env_num
        self._transitions: list[list[Any]] = [[] for _ in range(env_num)]
        self._done_idx: list[list[int]] = [[] for _ in range(env_num)]

    def append(self, env_id: int, transition: Any, episode_end: bool | None = None) -> None:
        """Add one step of env ``env_id``; ``episode_end`` defaults to ``transition['done']``."""
        self._transitions[env_id].append(transition)
        if transition["done"] if episode_end is None else episode_end:
            self._done_idx[env_id].append(len(self._transitions[env_id]))

    def drop_unfinished(self, env_id: int) -> None:
        """Forget env ``env_id``'s steps since its last episode end (its env crashed mid-episode)."""
        ends = self._done_idx[env_id]
        del self._transitions[env_id][ends[-1] if ends else 0 :]

    def to_trajectories(self) -> tuple[list[Any], list[int]]:
        """All transitions, env after env, and the indices where a trajectory ends in that list:
        the end of every episode and the last step of every env (a cut the next call continues)."""
        trajectories: list[Any] = []
        end_idx: list[int] = []
        for transitions, dones in zip(self._transitions, self._done_idx):
            if not transitions:
                continue
            offset = len(trajectories)
            trajectories.extend(transitions)
            ends = [offset + d - 1 for d in dones]
            if not ends or ends[-1] != len(trajectories) - 1:
                ends.append(len(trajectories) - 1)
            end_idx.extend(ends)
        return trajectories, end_idx

    def to_episodes(self) -> list[list[Any]]:
        """The finished episodes of every env (steps after an env's last episode end are left out)."""
        episodes = []
        for transitions, dones in zip(self._transitions, self._done_idx):
            start = 0
            for end in dones:
                episodes.append(transitions[start:end])
                start = end
        return episodes

    def clear(self) -> None:
        for transitions, dones in zip(self._transitions, self._done_idx):
            transitions.clear()
            dones.clear()

    def __len__(self) -> int:
        return sum(len(t) for t in self._transitions)


def policy_mode(policy: Any, mode: str) -> Any:
    """The ``learn``, ``collect`` or ``eval`` mode of a whole ``Policy``; anything else (a mode
    already) as it is."""
    if mode == "learn":
        return policy.learn_mode if hasattr(policy, "learn_mode") else policy
    if mode == "collect":
        return policy.collect_mode if hasattr(policy, "collect_mode") else policy
    if mode == "eval":
        return policy.eval_mode if hasattr(policy, "eval_mode") else policy
    raise ValueError(f"A policy's mode is 'learn', 'collect' or 'eval', got {mode!r}.")


def inferencer(seed: int, policy: Any, env: Any):
    """One batched policy forward on every ready env (the first half of a step-wise collection).

    Seeds ``env`` with ``seed`` (changing per episode) and launches it on the first call.
    ``policy`` is a collect mode (or a ``Policy``, whose collect mode is used).

    Reads ctx: collect_kwargs (e.g. ``eps``).
    Writes ctx: obs ({env_id: obs}), action ({env_id: numpy action}), inference_output ({env_id:
    output}: the policy's own, tensors as DI-engine's).
    """
    policy = policy_mode(policy, "collect")
    env.seed(seed)

    def _inference(ctx: OnlineRLContext) -> None:
        if not env.ready_obs:
            env.launch()
        obs = dict(env.ready_obs)  # the manager refills ready_obs during step
        output = policy.forward(obs, **ctx.collect_kwargs)
        ctx.obs = obs
        ctx.action = {env_id: to_numpy(out["action"]) for env_id, out in output.items()}
        ctx.inference_output = output

    return _inference


def rolloutor(policy: Any, env: Any, transitions: TransitionList, collect_print_freq: int = 100):
    """Step the envs with ``ctx.action`` and append each env's transition to ``transitions``.

    A step an env crashed in (``info['abnormal']``) is not counted and the unfinished episode of
    that env is dropped, as ding_ray's serial collectors drop it. Every ``collect_print_freq``
    learner iterations the finished episodes' returns are logged.

    Reads ctx: obs, action, inference_output, train_iter.
    Writes ctx: env_step (+ steps taken), env_episode (+ episodes finished).
    """
    policy = policy_mode(policy, "collect")
    stepper = EnvStepper(env, [policy])
    next_episode_id = env.env_num
    episode_id = list(range(env.env_num))  # each transition names its episode (DI-engine's env_data_id)
    finished_returns: list[float] = []
    last_log_iter = 0

    def _rollout(ctx: OnlineRLContext) -> None:
        nonlocal next_episode_id, last_log_iter
        batch = stepper.step(ctx.obs, ctx.inference_output, ctx.action)
        abnormal, done = batch.abnormal.tolist(), batch.done.tolist()
        for k, env_id in enumerate(batch.env_ids.tolist()):
            timestep = batch.timesteps[k]
            if abnormal[k]:  # the manager reset that env: a new episode
                transitions.drop_unfinished(env_id)
            else:
                transition = policy.process_transition(batch.obs[k], batch.outputs[k], timestep)
                transition["collect_train_iter"] = ctx.train_iter
                transition["env_data_id"] = episode_id[env_id]
                transitions.append(env_id, transition, episode_end=done[k])
                if done[k]:
                    finished_returns.append(float(timestep.info.get("eval_episode_return", np.nan)))
            if abnormal[k] or done[k]:
                episode_id[env_id] = next_episode_id
                next_episode_id += 1
        ctx.env_step += batch.steps
        ctx.env_episode += int(batch.done.sum())
        if ctx.train_iter - last_log_iter >= collect_print_freq and finished_returns:
            logger.info(
                "collect: train_iter %d env_step %d episodes %d return_mean %.2f",
                ctx.train_iter,
                ctx.env_step,
                len(finished_returns),
                float(np.mean(finished_returns)),
            )
            finished_returns.clear()
            last_log_iter = ctx.train_iter

    return _rollout


class _RandomPolicy:
    """Uniform actions from the env manager, the real policy's transitions (DI-engine's random
    policy for ``random_collect_size``)."""

    def __init__(self, policy: Any, env: Any) -> None:
        self._policy, self._env = policy, env
        self.process_transition = policy.process_transition
        self.reset = policy.reset

    def forward(self, obs: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        return {env_id: {"action": self._env.random_action(env_id)} for env_id in obs}


class StepCollector:
    """Step-wise collection of ``policy.collect.n_sample * unroll_len`` env steps per call.

    The first ``random_collect_size`` env steps use uniform random actions, or the policy itself
    where ``policy.transition_with_policy_data`` is set (SAC, PPO: DI-engine's ``get_random_policy``).

    Reads ctx: collect_kwargs, train_iter, env_step.
    Writes ctx: env_step, env_episode, trajectories, trajectory_end_idx.
    """

    def __init__(self, cfg: Any, policy: Any, env: Any, random_collect_size: int = 0) -> None:
        self.cfg = cfg
        self.env = env
        self.policy = policy_mode(policy, "collect")
        self.random_collect_size = random_collect_size
        self._transitions = TransitionList(env.env_num)
        self._inferencer = inferencer(cfg.seed, self.policy, env)
        if cfg.policy.get("transition_with_policy_data", False):
            self._random_inferencer = self._inferencer
        else:
            self._random_inferencer = inferencer(cfg.seed, _RandomPolicy(self.policy, env), env)
        self._rolloutor = rolloutor(self.policy, env, self._transitions)

    def __call__(self, ctx: OnlineRLContext) -> None:
        start = ctx.env_step
        if start < self.random_collect_size:
            target, infer = self.random_collect_size - start, self._random_inferencer
        else:
            collect_cfg = self.cfg.policy.collect
            target, infer = collect_cfg.n_sample * collect_cfg.get("unroll_len", 1), self._inferencer
        while ctx.env_step - start < target:
            infer(ctx)
            self._rolloutor(ctx)
        ctx.trajectories, ctx.trajectory_end_idx = self._transitions.to_trajectories()
        self._transitions.clear()


class EpisodeCollector(StepCollector):
    """Step-wise collection of ``policy.collect.n_episode`` whole episodes per call.

    Reads ctx: collect_kwargs, train_iter, env_episode.
    Writes ctx: env_step, env_episode, episodes.
    """

    def __call__(self, ctx: OnlineRLContext) -> None:
        start = ctx.env_episode
        if start < self.random_collect_size:
            target, infer = self.random_collect_size - start, self._random_inferencer
        else:
            target, infer = self.cfg.policy.collect.n_episode, self._inferencer
        while ctx.env_episode - start < target:
            infer(ctx)
            self._rolloutor(ctx)
        ctx.episodes = self._transitions.to_episodes()
        # steps of episodes still running stay out of this call's data, as in DI-engine
        self._transitions.clear()


def random_collector(cfg: Any, collector: WarmUpCollector, buffer_: Buffer):
    """Once, on a fresh run: ``cfg.policy.random_collect_size`` transitions of uniform random actions
    (of the untrained policy where ``transition_with_policy_data`` is set) into the buffer
    (DI-engine's serial entry does this before its loop), by the collector's ``warm_up``. Collector
    actors roll them out with their next calls (the driver starts while they start).

    Reads ctx: env_step (a resumed run has some: its buffer is filled already).
    Writes ctx: env_step, env_episode (+ the random transitions' steps and episodes).
    """
    size = int(cfg.policy.get("random_collect_size", 0) or 0)
    buffer_ = pipeline_buffer(buffer_)
    done = size <= 0
    if not done and not isinstance(collector, WarmUpCollector):
        raise ConfigError(
            f"policy.random_collect_size={size} needs a collector with warm_up(n_sample) "
            f"(SampleSerialCollector, the Ray collectors), got {type(collector).__name__}. Use "
            "policy.collect.collector.type='sample', or set policy.random_collect_size=0."
        )

    def _random_collect(ctx: OnlineRLContext) -> None:
        nonlocal done
        if done:
            return
        done = True
        if ctx.env_step > 0:
            return
        before, episodes_before = collector.envstep, collector.envepisode
        data = collector.warm_up(size)
        ctx.env_step += collector.envstep - before
        ctx.env_episode += collector.envepisode - episodes_before
        if data:
            buffer_.push(data, ctx.env_step)

    return _random_collect


def collector(cfg: Any, collector: Any | Sequence[Any]):
    """One ``collect`` call on each collector (ding_ray's serial collectors, or handles offering
    the same ``collect`` and ``envstep``); a list of collectors is collected one after the other.

    A sample collector's output goes to ``ctx.trajectories``; an episode collector's (a list of
    episodes) to ``ctx.episodes``. ``cfg`` is the compiled config (kept for DI-engine's signature).

    Reads ctx: train_iter, collect_kwargs.
    Writes ctx: trajectories or episodes, env_step (+ the collectors' new env steps),
    env_episode (+ the episodes their envs finished).
    """
    collectors = list(collector) if isinstance(collector, (list, tuple)) else [collector]
    if not collectors:
        raise ConfigError("collector() needs at least one collector, got an empty list.")
    for c in collectors:
        if not isinstance(c, Collector):
            raise ConfigError(
                f"collector() takes collectors with a collect() method (SampleSerialCollector, "
                f"EpisodeSerialCollector), got {type(c).__name__}. For a policy and an env manager, "
                "use StepCollector(cfg, policy.collect_mode, env) instead."
            )

    def _collect(ctx: OnlineRLContext) -> None:
        samples: list[Any] = []
        episodes: list[Any] = []
        for c in collectors:
            before, episodes_before = c.envstep, c.envepisode
            data = c.collect(train_iter=ctx.train_iter, policy_kwargs=dict(ctx.collect_kwargs))
            ctx.env_step += c.envstep - before
            ctx.env_episode += c.envepisode - episodes_before
            if data and isinstance(data[0], list):  # an episode collector's episodes
                episodes.extend(data)
            else:
                samples.extend(data)
        if episodes:
            ctx.episodes = episodes
        if samples or not episodes:
            ctx.trajectories = samples

    return _collect
