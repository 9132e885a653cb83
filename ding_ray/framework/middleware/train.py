"""Training stages: one gradient step (``trainer``), several per call (``multistep_trainer``,
``OffPolicyLearner``), and what prepares the batch (``gae_estimator``, ``reward_estimator``).

``trainer`` takes what DI-engine passes (``policy.learn_mode``) or ding_ray's ``BaseLearner``
(whose hooks then log and save checkpoints); both are called through one method, so a learner
actor's handle fits the same stage.
"""

from __future__ import annotations

import logging
from types import GeneratorType
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError, DingRayError
from ding_ray.framework.context import Context, OnlineRLContext
from ding_ray.framework.middleware.collect import policy_mode
from ding_ray.framework.middleware.data import offpolicy_data_fetcher

logger = logging.getLogger(__name__)


def _is_learner(obj: Any) -> bool:
    """A ``BaseLearner`` (``train(data, envstep)``) rather than a policy's learn mode (``forward``)."""
    return callable(getattr(obj, "train", None)) and not hasattr(obj, "forward")


def _log_loss(ctx: Context, output: Any) -> None:
    outputs = output if isinstance(output, list) else [output]
    losses = [o.get("total_loss", o.get("learner/total_loss")) for o in outputs if isinstance(o, dict)]
    losses = [x for x in losses if x is not None]
    loss = f"{float(np.mean(losses)):.3f}" if losses else "n/a"
    env_step = f" env_step {ctx.env_step}" if isinstance(ctx, OnlineRLContext) else ""
    logger.info("train: train_iter %d%s loss %s", ctx.train_iter, env_step, loss)


def trainer(cfg: Any, policy: Any, log_freq: int = 100):
    """Train on ``ctx.train_data``; nothing when it is None (not enough data yet).

    ``policy``: a learn mode or a ``Policy`` (one gradient step per call), or a learner: ding_ray's
    ``BaseLearner``, or the learner actor (``ding_ray.distributed.RemoteLearner``, whose calls
    train several minibatches and finish in a later iteration: the stage then sets the output of
    the calls that finished, and asks again while some are ``pending``). With a learner,
    ``ctx.train_iter`` advances by the iterations the learner made, and the priorities it sets
    aside (``priority_info``) are put into the output, where ``offpolicy_data_fetcher`` looks.

    Reads ctx: train_data, train_iter, env_step.
    Writes ctx: train_output (the step's log dict; a list of them for a learn forward of several
    gradient steps), train_iter (+ the gradient steps taken).
    """
    learner = policy if _is_learner(policy) else None
    learn_mode = None if learner is not None else policy_mode(policy, "learn")
    if learner is None and not callable(getattr(learn_mode, "forward", None)):
        raise ConfigError(f"trainer() takes policy.learn_mode or a BaseLearner, got {type(policy).__name__}.")
    last_log_iter = -log_freq

    def _train(ctx: Context) -> None:
        nonlocal last_log_iter
        if ctx.train_data is None and not getattr(learner, "pending", False):
            return
        if learner is not None:
            before = learner.train_iter
            output = learner.train(ctx.train_data, getattr(ctx, "env_step", -1))
            # also back: a learner actor restarted from a checkpoint lost the iterations since
            ctx.train_iter += learner.train_iter - before
            if output is None:  # a learner actor's calls are still running
                return
            output = _one_or_list(output)
            if learner.priority_info is not None:
                (output[-1] if isinstance(output, list) else output)["priority_info"] = learner.priority_info
        else:
            output = _one_or_list(learn_mode.forward(ctx.train_data))
            ctx.train_iter += len(output) if isinstance(output, list) else 1
        if ctx.train_iter - last_log_iter >= log_freq:
            _log_loss(ctx, output)
            last_log_iter = ctx.train_iter
        ctx.train_output = output

    return _train


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
    """``policy.learn.update_per_collect`` rounds of fetch-from-buffer + one gradient step, stopping
    early when the buffer cannot serve a batch (DI-engine's ``OffPolicyLearner``).

    ``policy``: a learn mode, a ``Policy`` or a ``BaseLearner``; ``buffer_``: what
    ``offpolicy_data_fetcher`` takes. With ``reward_model``, ``reward_estimator`` runs on each batch.

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
    ) -> None:
        self.cfg = cfg
        self._fetcher = offpolicy_data_fetcher(cfg, buffer_)
        self._trainer = trainer(cfg, policy, log_freq=log_freq)
        self._reward_estimator = None if reward_model is None else reward_estimator(cfg, reward_model)

    def __call__(self, ctx: OnlineRLContext) -> None:
        outputs = []
        for _ in range(self.cfg.policy.learn.update_per_collect):
            # the fetcher's code after its yield (priority update) needs this round's train_output
            fetch = self._fetcher(ctx)
            if isinstance(fetch, GeneratorType):
                try:
                    next(fetch)
                except StopIteration:  # it ended before its yield: no batch this round
                    fetch = None
            if ctx.train_data is None:
                break
            if self._reward_estimator is not None:
                self._reward_estimator(ctx)
            self._trainer(ctx)
            outputs.append(ctx.train_output)
            if isinstance(fetch, GeneratorType):
                for _ in fetch:
                    pass
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

    As in DI-engine, the critic is ``policy.get_attribute('model')`` called as
    ``model(obs, mode='compute_critic')['value']``; ``policy`` is a collect mode or a ``Policy``.
    Each transition gets ``value``, ``adv``, ``return`` (= value + adv) and ``traj_flag`` (True
    where a trajectory ends: an episode end, a cut at ``ctx.trajectory_end_idx``, or ``done``).
    Discount and lambda come from ``cfg.policy.collect.discount_factor`` / ``gae_lambda``.
    Without ``buffer_`` the transitions become ``ctx.train_data``; with it they are pushed there.

    ``policy=None``: the collector computed the advantages already (ding_ray's collectors call
    the policy's ``get_train_sample``, which runs GAE where the data is, in a collector actor on
    Ray), and the trajectories become ``ctx.train_data`` as they are.

    Reads ctx: trajectories, trajectory_end_idx, env_step.
    Writes ctx: train_data (without buffer_), trajectories (None).
    """
    if policy is None:
        return _collected_as_train_data
    collect_cfg = cfg.policy.collect
    missing = [k for k in ("discount_factor", "gae_lambda") if collect_cfg.get(k) is None]
    if missing:
        raise ConfigError(
            f"gae_estimator needs cfg.policy.collect.{missing[0]} (GAE's "
            f"{'gamma' if missing[0] == 'discount_factor' else 'lambda'}); set it in the policy config."
        )
    import torch  # here, not at the top: a driver of actors needs no torch to build its stages

    from ding_ray.rl_utils import gae, gae_data

    gamma, lambda_ = float(collect_cfg.discount_factor), float(collect_cfg.gae_lambda)
    model = policy_mode(policy, "collect").get_attribute("model")

    def _gae(ctx: OnlineRLContext) -> None:
        transitions = ctx.trajectories
        if not transitions:
            return
        device = next(model.parameters()).device
        obs = torch.as_tensor(np.stack([t["obs"] for t in transitions]), dtype=torch.float32, device=device)
        next_obs = torch.as_tensor(
            np.stack([t["next_obs"] for t in transitions]), dtype=torch.float32, device=device
        )
        reward = torch.as_tensor(np.array([t["reward"] for t in transitions], dtype=np.float32))
        done = torch.as_tensor(np.array([bool(t["done"]) for t in transitions]))
        traj_flag = done.clone()
        traj_flag[list(ctx.trajectory_end_idx)] = True
        traj_flag[-1] = True  # nothing after the last transition continues its trajectory
        with torch.no_grad():
            value = model(obs, mode="compute_critic")["value"].reshape(-1).cpu()
            next_value = model(next_obs, mode="compute_critic")["value"].reshape(-1).cpu()
        adv = gae(gae_data(value, next_value, reward, done, traj_flag), gamma, lambda_)
        for t, v, a, f in zip(transitions, value.numpy(), adv.numpy(), traj_flag.numpy()):
            t["value"], t["adv"], t["return"], t["traj_flag"] = v, a, np.float32(v + a), bool(f)
        if buffer_ is None:
            ctx.train_data = transitions
        else:
            buffer_.push(transitions, cur_collector_envstep=ctx.env_step)
        ctx.trajectories = None

    return _gae


def _collected_as_train_data(ctx: OnlineRLContext) -> None:
    ctx.train_data, ctx.trajectories = ctx.trajectories, None


def weights_publisher(learner: Any, *subscribers: Any):
    """Hand the learner's newest weights to the workers that act with a copy of the policy of
    their own: collector and evaluator actors (``RemoteCollectors``, ``RemoteEvaluator``), or local
    ``RolloutWorker``/``EvalWorker`` s. Collectors that share the learner's policy object need none.

    ``learner.weights()`` gives ``(version, weights)`` (or None before the first publication);
    each subscriber's ``load_weights(version, weights)`` is called once per new version.

    Reads ctx: nothing; calls the subscribers.
    """
    if not callable(getattr(learner, "weights", None)):
        raise ConfigError(
            f"weights_publisher() takes a learner with weights() (LearnWorker, RemoteLearner), got "
            f"{type(learner).__name__}."
        )
    for sub in subscribers:
        if not callable(getattr(sub, "load_weights", None)):
            raise ConfigError(
                f"weights_publisher() hands weights to objects with load_weights(version, weights), got "
                f"{type(sub).__name__}."
            )
    last_version = None

    def _publish(ctx: Context) -> None:
        nonlocal last_version
        published = learner.weights()
        if published is None or published[0] == last_version:
            return
        last_version = published[0]
        for sub in subscribers:
            sub.load_weights(*published)

    return _publish
