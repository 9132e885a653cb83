"""Training stages: one gradient step (``trainer``), several per call (``multistep_trainer``,
``OffPolicyLearner``), and what prepares the batch (``gae_estimator``, ``reward_estimator``).

``trainer`` takes what DI-engine passes (``policy.learn_mode``) or ding_ray's ``BaseLearner``
(whose hooks then log and save checkpoints); both are called through one method, so a learner
actor's handle fits the same stage.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ding_ray.data.buffer.pipeline import pipeline_buffer
from ding_ray.errors import ConfigError, DingRayError
from ding_ray.framework.context import Context, OnlineRLContext
from ding_ray.framework.interfaces import Learner, WeightsSink, WeightsSource
from ding_ray.framework.middleware.collect import policy_mode
from ding_ray.framework.middleware.data import offpolicy_data_fetcher

logger = logging.getLogger(__name__)


def _log_loss(ctx: Context, output: Any) -> None:
    outputs = output if isinstance(output, list) else [output]
    losses = [o.get("total_loss", o.get("learner/total_loss")) for o in outputs if isinstance(o, dict)]
    losses = [x for x in losses if x is not None]
    loss = f"{float(np.mean(losses)):.3f}" if losses else "n/a"
    env_step = f" env_step {ctx.env_step}" if isinstance(ctx, OnlineRLContext) else ""
    logger.info("train: train_iter %d%s loss %s", ctx.train_iter, env_step, loss)


def trainer(cfg: Any, policy: Any, log_freq: int = 100):
    """Train on ``ctx.train_data``, and take the output of the learner's calls that finished.

    ``policy``: a ``Learner`` (``ding_ray.framework.interfaces``): ding_ray's ``BaseLearner``
    (whose hooks then log and save checkpoints) or the learner actor's ``LearnerClient``, whose
    calls finish in a later iteration; or, as DI-engine passes it, a learn mode or a ``Policy``
    (one learn forward per call). ``ctx.train_iter`` advances by the iterations the learner made
    (DI-engine's count: a learn forward's gradient steps), and the priorities it sets aside
    (``priority_info``) go into the output, where ``offpolicy_data_fetcher`` looks.

    Reads ctx: train_data, train_iter, env_step.
    Writes ctx: train_output (the step's log dict; a list of them for a learn forward of several
    gradient steps), train_iter (+ the gradient steps taken).
    """
    learner = policy if isinstance(policy, Learner) else PolicyLearner(policy)
    last_log_iter = -log_freq

    def _train(ctx: Context) -> None:
        nonlocal last_log_iter
        before = learner.train_iter
        if ctx.train_data is not None:
            learner.submit(ctx.train_data, getattr(ctx, "env_step", -1))
        output = learner.poll()
        # also back: a learner actor restarted from a checkpoint lost the iterations since
        ctx.train_iter += learner.train_iter - before
        if output is None:  # nothing to train on, or a learner actor's calls are still running
            return
        output = _one_or_list(output)
        if learner.priority_info is not None:
            (output[-1] if isinstance(output, list) else output)["priority_info"] = learner.priority_info
        if ctx.train_iter - last_log_iter >= log_freq:
            _log_loss(ctx, output)
            last_log_iter = ctx.train_iter
        ctx.train_output = output

    return _train


class PolicyLearner:
    """A policy's learn mode as a ``Learner``: one learn forward per ``submit``, as DI-engine's
    ``trainer`` calls it (no hooks, no checkpoints: ``BaseLearner`` adds those)."""

    priority_info = None  # the priorities stay in the output ('priority'), as the learn mode returns them

    def __init__(self, policy: Any) -> None:
        self._learn_mode = policy_mode(policy, "learn")
        if not callable(getattr(self._learn_mode, "forward", None)):
            raise ConfigError(
                "trainer() takes policy.learn_mode, a BaseLearner or a learner actor, got "
                f"{type(policy).__name__}."
            )
        self.train_iter = 0
        self._output: Any = None

    def submit(self, data: Any, envstep: int = -1) -> None:
        self._output = self._learn_mode.forward(data)
        self.train_iter += len(self._output) if isinstance(self._output, list) else 1

    def poll(self) -> Any:
        out, self._output = self._output, None
        return out

    @property
    def pending(self) -> bool:
        return self._output is not None


def _one_or_list(output: Any) -> Any:
    """A copy of a learn call's log: the dict of its one gradient step (a ``BaseLearner`` reports a
    list, as DI-engine's does), or the list of several steps' dicts (PPO's epochs x minibatches)."""
    if isinstance(output, list):
        return dict(output[0]) if len(output) == 1 else [dict(o) for o in output]
    return dict(output)


def multistep_trainer(policy: Any, log_freq: int = 100):
    """Several gradient steps in one call of a policy whose learn ``forward`` returns one log dict
    per step (a list); ``ctx.train_iter`` advances by their number.

    Reads ctx: train_data, train_iter.
    Writes ctx: train_output (list of dicts), train_iter (+ steps taken).
    """
    learn_mode = policy_mode(policy, "learn")
    last_log_iter = -1

    def _train(ctx: Context) -> None:
        nonlocal last_log_iter
        if ctx.train_data is None:
            return
        output = learn_mode.forward(ctx.train_data)
        if not isinstance(output, list):
            raise DingRayError(
                "multistep_trainer needs a learn forward that returns a list (one log dict per gradient "
                f"step), got {type(output).__name__}. For one step per call use trainer(cfg, policy)."
            )
        if ctx.train_iter - last_log_iter >= log_freq:
            _log_loss(ctx, output)
            last_log_iter = ctx.train_iter
        ctx.train_iter += len(output)
        ctx.train_output = output

    return _train


class OffPolicyLearner:
    """Rounds of fetch-from-buffer + train, ``policy.learn.update_per_collect`` of them, stopping
    early when the buffer cannot serve a batch (DI-engine's ``OffPolicyLearner``).

    ``policy``: what ``trainer`` takes (a learn mode, a ``Policy``, a ``Learner``); ``buffer_``:
    what ``offpolicy_data_fetcher`` takes. With ``reward_model``, ``reward_estimator`` runs on each
    batch. ``rounds``: per call, in place of ``update_per_collect`` (the Ray pipeline: 1, as the
    rate limiter decides how often the learner trains). Every round also takes what the learner's
    earlier calls finished (a learner actor's), so their priorities go back to the buffer.

    Reads ctx: train_iter, env_step.
    Writes ctx: train_data, train_output (list of the rounds' log dicts), train_iter.
    """

    def __init__(
        self,
        cfg: Any,
        policy: Any,
        buffer_: Any,
        reward_model: Any = None,
        log_freq: int = 100,
        rounds: int | None = None,
    ) -> None:
        self.rounds = int(cfg.policy.learn.update_per_collect if rounds is None else rounds)
        self._fetcher = offpolicy_data_fetcher(cfg, buffer_)
        self._trainer = trainer(cfg, policy, log_freq=log_freq)
        self._reward_estimator = None if reward_model is None else reward_estimator(cfg, reward_model)

    def __call__(self, ctx: OnlineRLContext) -> None:
        outputs = []
        for _ in range(self.rounds):
            # the fetcher's code after its yield (priority update) needs this round's train_output
            fetch = self._fetcher(ctx)
            next(fetch)
            if ctx.train_data is not None and self._reward_estimator is not None:
                self._reward_estimator(ctx)
            ctx.train_output = None
            self._trainer(ctx)
            if ctx.train_output is not None:
                outputs.append(ctx.train_output)
            for _ in fetch:
                pass
            if ctx.train_data is None:
                break
        ctx.train_output = outputs


def reward_estimator(cfg: Any, reward_model: Any):
    """Let ``reward_model.estimate`` rewrite the rewards of ``ctx.train_data`` (in place, as
    DI-engine's reward models do; a returned batch replaces it).

    Reads ctx: train_data.
    Writes ctx: train_data (its rewards).
    """
    if not callable(getattr(reward_model, "estimate", None)):
        raise ConfigError(
            f"reward_estimator() takes a reward model with an estimate(data) method, got "
            f"{type(reward_model).__name__}."
        )

    def _enhance(ctx: Context) -> None:
        if ctx.train_data is None:
            return
        estimated = reward_model.estimate(ctx.train_data)
        if estimated is not None:
            ctx.train_data = estimated

    return _enhance


def gae_estimator(cfg: Any, policy: Any, buffer_: Any = None):
    """Advantages of ``ctx.trajectories`` by GAE, with values from the policy's critic.

    ``policy`` is a collect mode or a ``Policy``. One that offers ``compute_advantages`` through
    ``get_attribute`` (PPO) computes them with the function its collectors' ``get_train_sample``
    uses, so both paths agree in units: the critic sees the policy's normalised observations and
    its values are scaled by value_norm's running std. Any other policy is read as DI-engine reads
    it: ``get_attribute('model')`` called as ``model(obs, mode='compute_critic')['value']``, with
    ``cfg.policy.collect.discount_factor`` / ``gae_lambda``.
    Each transition gets ``value``, ``adv``, ``return`` (the critic's target: value + adv in the
    critic's units) and ``traj_flag`` (True where a trajectory ends: an episode end, a cut at
    ``ctx.trajectory_end_idx``, or ``done``).
    Without ``buffer_`` the transitions become ``ctx.train_data``; with it they are pushed there.

    ``policy=None``: the collector computed the advantages already (ding_ray's collectors call
    the policy's ``get_train_sample``, which runs GAE where the data is, in a collector actor on
    Ray), and the trajectories become ``ctx.train_data`` as they are.

    Reads ctx: trajectories, trajectory_end_idx, env_step.
    Writes ctx: train_data (without buffer_), trajectories (None).
    """
    if policy is None:
        return _collected_as_train_data
    buffer_ = None if buffer_ is None else pipeline_buffer(buffer_)
    import torch  # here, not at the top: a driver of actors needs no torch to build its stages

    from ding_ray.policy.common import stack_obs

    collect = policy_mode(policy, "collect")
    try:
        compute_advantages = collect.get_attribute("compute_advantages")
    except (AttributeError, NotImplementedError):
        compute_advantages = _critic_advantages(cfg, collect.get_attribute("model"))

    def _gae(ctx: OnlineRLContext) -> None:
        transitions = ctx.trajectories
        if not transitions:
            return
        done = torch.as_tensor(np.array([bool(t["done"]) for t in transitions]))
        traj_flag = done.clone()
        traj_flag[list(ctx.trajectory_end_idx)] = True
        traj_flag[-1] = True  # nothing after the last transition continues its trajectory
        columns = {
            # uint8 frames stay uint8: the model scales them (float32, else)
            "obs": torch.from_numpy(stack_obs([t["obs"] for t in transitions])),
            "next_obs": torch.from_numpy(stack_obs([t["next_obs"] for t in transitions])),
            "reward": torch.as_tensor(np.array([t["reward"] for t in transitions], dtype=np.float32)),
            "done": done,
            "traj_flag": traj_flag,
        }
        value, adv, return_ = (x.reshape(-1).cpu().numpy() for x in compute_advantages(columns))
        for t, v, a, r, f in zip(transitions, value, adv, return_, traj_flag.numpy()):
            t["value"], t["adv"], t["return"], t["traj_flag"] = v, a, r, bool(f)
        if buffer_ is None:
            ctx.train_data = transitions
        else:
            buffer_.push(transitions, cur_collector_envstep=ctx.env_step)
        ctx.trajectories = None

    return _gae


def _critic_advantages(cfg: Any, model: Any):
    """DI-engine's ``gae_estimator`` arithmetic for a policy without ``compute_advantages``: the
    model's critic on the raw observations, its values taken as returns."""
    collect_cfg = cfg.policy.collect
    missing = [k for k in ("discount_factor", "gae_lambda") if collect_cfg.get(k) is None]
    if missing:
        raise ConfigError(
            f"gae_estimator needs cfg.policy.collect.{missing[0]} (GAE's "
            f"{'gamma' if missing[0] == 'discount_factor' else 'lambda'}); set it in the policy config."
        )
    import torch

    from ding_ray.rl_utils import gae, gae_data

    gamma, lambda_ = float(collect_cfg.discount_factor), float(collect_cfg.gae_lambda)

    @torch.no_grad()
    def compute(data: dict[str, Any]) -> tuple[Any, Any, Any]:
        device = next(model.parameters()).device
        value, next_value = (
            model(data[key].to(device), mode="compute_critic")["value"].reshape(-1).cpu()
            for key in ("obs", "next_obs")
        )
        adv = gae(
            gae_data(value, next_value, data["reward"], data["done"], data["traj_flag"]), gamma, lambda_
        )
        return value, adv, value + adv

    return compute


def _collected_as_train_data(ctx: OnlineRLContext) -> None:
    ctx.train_data, ctx.trajectories = ctx.trajectories, None


def weights_publisher(learner: Any, *subscribers: Any):
    """Hand the learner's newest weights to the workers that act with a copy of the policy of
    their own: collector and evaluator actors (``CollectorsClient``, ``EvaluatorClient``), or local
    ``RolloutWorker``/``EvalWorker`` s. Collectors that share the learner's policy object need none.

    ``learner.weights()`` gives ``(version, weights)`` (or None before the first publication);
    each iteration, each subscriber's ``load_weights(version, weights)`` gets them and decides
    whether they are new to it (a worker by their version, an actors' client by whether it sends
    them already): the stage passes them on and compares nothing.

    Reads ctx: nothing; calls the subscribers.
    """
    if not isinstance(learner, WeightsSource):
        raise ConfigError(
            f"weights_publisher() takes a learner with weights() (LearnWorker, LearnerClient), got "
            f"{type(learner).__name__}."
        )
    for sub in subscribers:
        if not isinstance(sub, WeightsSink):
            raise ConfigError(
                f"weights_publisher() hands weights to objects with load_weights(version, weights), got "
                f"{type(sub).__name__}."
            )

    def _publish(ctx: Context) -> None:
        published = learner.weights()
        if published is None:
            return
        for sub in subscribers:
            sub.load_weights(*published)

    return _publish
