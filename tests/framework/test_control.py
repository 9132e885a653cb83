"""Control stages: epsilon schedule, termination, checkpoints, iteration timer."""

import logging
import os

import pytest
import torch
from easydict import EasyDict

from ding_ray.errors import ConfigError, StageError
from ding_ray.framework import OfflineRLContext, OnlineRLContext, Task, current_task
from ding_ray.framework.middleware import (
    ckpt_saver,
    epoch_timer,
    eps_greedy_handler,
    eps_greedy_masker,
    termination_checker,
)
from ding_ray.policy import create_policy
from ding_ray.worker import BaseLearner
from tests.framework.test_collect_train_eval import compiled


def test_eps_greedy_handler_sets_eps_for_the_iteration_only():
    cfg = EasyDict(policy=dict(other=dict(eps=dict(type="linear", start=1.0, end=0.1, decay=100))))
    seen = []
    with Task(OnlineRLContext(env_step=50)) as task:
        task.use(eps_greedy_handler(cfg))
        task.use(lambda ctx: seen.append(ctx.collect_kwargs["eps"]))
        task.run(max_step=1)
    assert seen == [pytest.approx(1.0 - 0.9 * 0.5)] and "eps" not in task.ctx.collect_kwargs
    with pytest.raises(ConfigError, match="policy.other.eps"):
        eps_greedy_handler(EasyDict(policy=dict(other=dict())))


def test_eps_greedy_masker_turns_exploration_off():
    ctx = OnlineRLContext(collect_kwargs={"eps": 0.7})
    eps_greedy_masker()(ctx)
    assert ctx.collect_kwargs["eps"] == -1


def run_counting(checker, ctx, field):
    def _count(ctx):
        setattr(ctx, field, getattr(ctx, field) + 10)

    with Task(ctx) as task:
        task.use(_count)
        task.use(checker)
        task.run(max_step=100)
    return task.ctx


def test_termination_checker_stops_past_either_budget():
    ctx = run_counting(termination_checker(max_env_step=25), OnlineRLContext(), "env_step")
    assert ctx.env_step == 30 and ctx.total_step == 2  # '>': 20 is not past 25, 30 is
    ctx = run_counting(termination_checker(max_train_iter=20), OnlineRLContext(), "train_iter")
    assert ctx.train_iter == 30
    ctx = run_counting(termination_checker(max_train_iter=20), OfflineRLContext(), "train_iter")
    assert ctx.train_iter == 30  # an offline context has no env_step
    ctx = run_counting(termination_checker(), OnlineRLContext(), "env_step")
    assert ctx.total_step == 99  # no budget: max_step ends it


def ckpt_run(tmp_path, eval_values, finish_at=None, fail_at=None, train_freq=10, policy=None):
    """Iterations: an 'evaluation' writes eval_value, ckpt_saver, then 'training' moves the weights by
    +1 and train_iter by 5. Returns the policy and its first parameter's initial value."""
    cfg = compiled(tmp_path)
    policy = policy or create_policy(cfg.policy)
    learn_mode = policy.learn_mode if hasattr(policy, "learn_mode") else policy.policy  # a BaseLearner's
    param = next(iter(learn_mode.state_dict()["model"].values()))  # shares the model's storage
    start = param.clone()

    def _eval(ctx):
        ctx.eval_value = eval_values[ctx.total_step]
        if ctx.total_step == finish_at:
            current_task().finish = True
        if ctx.total_step == fail_at:
            raise RuntimeError("boom")

    def _train(ctx):
        with torch.no_grad():
            param.add_(1.0)
        ctx.train_iter += 5

    with Task(OnlineRLContext()) as task:
        task.use(_eval)
        task.use(ckpt_saver(cfg, policy, train_freq=train_freq))
        task.use(_train)
        task.run(max_step=len(eval_values))
    return os.path.join(cfg.exp_name, "ckpt"), start


def first_param(path):
    state = torch.load(path, weights_only=True)
    return next(iter(state["model"].values()))


def test_ckpt_saver_saves_every_train_freq_the_best_eval_and_the_final_weights(tmp_path):
    ckpt, start = ckpt_run(tmp_path, [1.0, 3.0, 2.0, 0.0, 1.0])
    assert sorted(os.listdir(ckpt)) == [
        "eval.pth.tar",
        "final.pth.tar",
        "iteration_0.pth.tar",
        "iteration_10.pth.tar",
        "iteration_20.pth.tar",
    ]
    assert torch.allclose(first_param(os.path.join(ckpt, "iteration_10.pth.tar")), start + 2)
    assert torch.allclose(first_param(os.path.join(ckpt, "iteration_20.pth.tar")), start + 4)
    assert torch.allclose(first_param(os.path.join(ckpt, "eval.pth.tar")), start + 1)  # eval 3.0 at step 1
    assert torch.allclose(first_param(os.path.join(ckpt, "final.pth.tar")), start + 5)
    assert "optimizer" in torch.load(os.path.join(ckpt, "final.pth.tar"), weights_only=True)


def test_ckpt_saver_sees_the_iteration_that_finished_the_run(tmp_path):
    # the 'evaluator' finishes the run at step 3 with the best value, before ckpt_saver is reached
    ckpt, start = ckpt_run(tmp_path, [1.0, 3.0, 2.0, 9.0, 0.0], finish_at=3, train_freq=None)
    assert sorted(os.listdir(ckpt)) == ["eval.pth.tar", "final.pth.tar"]
    assert torch.allclose(first_param(os.path.join(ckpt, "eval.pth.tar")), start + 3)
    assert torch.allclose(first_param(os.path.join(ckpt, "final.pth.tar")), start + 3)


def test_ckpt_saver_writes_no_final_weights_after_an_error(tmp_path):
    with pytest.raises(StageError, match="boom"):
        ckpt_run(tmp_path, [1.0, 3.0, 2.0], fail_at=2)
    assert sorted(os.listdir(os.path.join(tmp_path, "exp", "ckpt"))) == [
        "eval.pth.tar",
        "iteration_0.pth.tar",
    ]


def test_ckpt_saver_takes_a_learner_and_refuses_other_objects(tmp_path):
    cfg = compiled(tmp_path)
    policy = create_policy(cfg.policy)
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    ckpt, start = ckpt_run(tmp_path, [1.0], policy=learner)
    assert torch.allclose(first_param(os.path.join(ckpt, "final.pth.tar")), start + 1)
    with pytest.raises(ConfigError, match="BaseLearner"):
        ckpt_saver(cfg, None)


def test_epoch_timer_logs_every_print_per_iterations(caplog):
    with caplog.at_level(logging.INFO, logger="ding_ray.framework.middleware.control"):
        with Task(OnlineRLContext()) as task:
            task.use(epoch_timer(print_per=2))
            task.use(lambda ctx: None)
            task.run(max_step=4)
    assert len([r for r in caplog.records if "epoch timer" in r.getMessage()]) == 2
