"""Evaluation stages: run the greedy policy for some episodes when due, end the run at the stop value.

The episodes are run by ding_ray's ``InteractionSerialEvaluator`` (episodes spread evenly over
the envs, returns from ``info['eval_episode_return']``), built here from DI-engine's arguments
(``cfg, policy, env``) or given ready-made, so the evaluation logic lives in one place. Because
the stage calls only the ``Evaluator`` protocol (``submit``, ``poll``), the evaluator actor fits
it as well
(``ding_ray.distributed.EvaluatorClient``: its ``submit`` launches the episodes on the actor,
or queues them behind the evaluation in flight, and its ``poll`` hands over the outcome in a
later iteration).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ding_ray.errors import ConfigError
from ding_ray.framework.context import Context
from ding_ray.framework.interfaces import Evaluator
from ding_ray.framework.middleware.collect import policy_mode
from ding_ray.framework.task_runner import current_task


def take_evaluation(
    ctx: Context, result: tuple[bool, dict], policy_kwargs: dict[str, Any] | None = None
) -> bool:
    """Write an evaluator's ``(stop, info)`` into ``ctx`` (eval_value, last_eval_value, eval_output;
    with ``policy_kwargs``, the returns into info_for_logging under a prefix naming them); whether
    it reached the stop value."""
    stop, info = result
    episode_return = float(info["eval_episode_return_mean"])
    ctx.eval_value = episode_return
    ctx.last_eval_value = episode_return
    ctx.eval_output = {"episode_return": episode_return, "episode_info": info, "stop": bool(stop)}
    if "replay_path" in info:
        ctx.eval_output["replay_path"] = info["replay_path"]
    if policy_kwargs:
        kwargs_str = "/".join(f"{k}({v})" for k, v in policy_kwargs.items())
        for stat in ("", "_min", "_max", "_std"):
            key = "eval_episode_return" + (stat or "_mean")
            ctx.info_for_logging[f"{kwargs_str}/eval_episode_return{stat}"] = info[key]
    return bool(stop)


def _evaluate_stage(evaluator: Evaluator, eval_freq: int, render: bool, policy_kwargs: dict[str, Any]):
    def _evaluate(ctx: Context) -> None:
        # an evaluator actor answers in a later iteration: first take what it finished
        result = evaluator.poll()
        if ctx.last_eval_iter == -1 or ctx.train_iter - ctx.last_eval_iter >= eval_freq:
            # due at the first call (train_iter 0 included) and then every eval_freq iterations
            evaluator.submit(
                ctx.train_iter,
                getattr(ctx, "env_step", -1),
                force_render=render,
                policy_kwargs=policy_kwargs or None,
            )
            ctx.last_eval_iter = ctx.train_iter
            if result is None:  # a local evaluator answers now, an actor later
                result = evaluator.poll()
        if result is not None and take_evaluation(ctx, result, policy_kwargs):
            current_task().finish = True

    return _evaluate


def interaction_evaluator(cfg: Any, policy: Any, env: Any = None, render: bool = False, **kwargs: Any):
    """Evaluate ``cfg.env.n_evaluator_episode`` episodes at the first call and then every
    ``cfg.policy.eval.evaluator.eval_freq`` learner iterations; end the run once the mean return
    reaches ``cfg.env.stop_value`` after training began.

    ``policy`` is an eval mode (or a ``Policy``) and ``env`` the evaluator's env manager, seeded
    here with ``cfg.seed`` the same at every evaluation; or ``policy`` is a ready
    ``InteractionSerialEvaluator`` (the ``env`` argument then left out). ``render=True`` saves
    videos of every evaluation (``ctx.eval_output['replay_path']``; DI-engine keeps frames in
    memory instead). ``kwargs`` go to the policy's forward, and the returns are also written to
    ``ctx.info_for_logging`` under a prefix naming them.

    Reads ctx: train_iter, env_step, last_eval_iter.
    Writes ctx: eval_value, eval_output ({'episode_return', 'episode_info', 'stop'}), last_eval_iter,
    last_eval_value, info_for_logging (with kwargs); ends the task at the stop value.
    """
    eval_freq = cfg.policy.eval.evaluator.eval_freq
    if isinstance(policy, Evaluator):
        if env is not None:
            raise ConfigError(
                "interaction_evaluator(cfg, evaluator) takes no env: the evaluator has its own. Pass "
                "either an evaluator or a policy's eval mode and an env manager."
            )
        evaluator = policy
    else:
        if env is None:
            raise ConfigError(
                "interaction_evaluator(cfg, policy, env) needs the evaluator's env manager (or pass an "
                "InteractionSerialEvaluator in place of the policy)."
            )
        from ding_ray.worker.evaluator import InteractionSerialEvaluator  # torch: only for a local one

        env.seed(cfg.seed, dynamic_seed=False)
        evaluator = InteractionSerialEvaluator(
            cfg.policy.eval.evaluator,
            env,
            policy_mode(policy, "eval"),
            exp_name=cfg.get("exp_name", "default"),
        )
    return _evaluate_stage(evaluator, eval_freq, render, kwargs)


def interaction_evaluator_ttorch(
    seed: int,
    policy: Any,
    env: Any,
    n_evaluator_episode: int | None = None,
    stop_value: float = np.inf,
    eval_freq: int = 1000,
    render: bool = False,
):
    """``interaction_evaluator`` with its settings as arguments in place of a config.

    DI-engine's version runs its policy on treetensor batches; ding_ray's data are numpy arrays,
    so this one runs ``policy`` (an eval mode or a ``Policy``) on ``{env_id: obs}`` numpy batches.
    ``n_evaluator_episode`` defaults to one episode per env.

    Reads ctx: train_iter, env_step, last_eval_iter.
    Writes ctx: eval_value, eval_output, last_eval_iter, last_eval_value; ends the task at
    ``stop_value``.
    """
    from ding_ray.worker.evaluator import InteractionSerialEvaluator

    env.seed(seed, dynamic_seed=False)
    evaluator_cfg = dict(
        eval_freq=eval_freq,
        n_episode=n_evaluator_episode or env.env_num,
        stop_value=None if stop_value == np.inf else stop_value,
    )
    evaluator = InteractionSerialEvaluator(evaluator_cfg, env, policy_mode(policy, "eval"))
    return _evaluate_stage(evaluator, eval_freq, render, {})
