"""``PeriodicalModelExchanger`` in one task: a sender hands its weights to the receivers of its event
name every ``period`` iterations, as DI-engine's does between processes."""

import logging

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import PeriodicalModelExchanger


def run_pipeline(
    period, iterations, stale_toleration=1, delay_toleration=np.inf, event_name="model_exchanger"
):
    """A receiver, a 'training' stage that adds 1 to every weight of the sender's model, a sender; the
    receiver's first weight seen at the start of each iteration after it ran."""
    torch.manual_seed(0)
    learner, actor = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        learner.weight.zero_()
        actor.weight.fill_(-1.0)
    seen = []

    def train(ctx):
        with torch.no_grad():
            learner.weight.add_(1.0)

    with Task(OnlineRLContext()) as task:
        receiver = PeriodicalModelExchanger(
            actor, "receive", period=1, stale_toleration=stale_toleration, delay_toleration=delay_toleration
        )
        task.use(receiver)
        task.use(lambda ctx: seen.append(actor.weight[0, 0].item()))
        task.use(train)
        task.use(PeriodicalModelExchanger(learner, "send", period=period, event_name=event_name))
        task.run(max_step=iterations)
    return seen


def test_the_receiver_acts_with_the_weights_sent_at_each_period():
    # iteration i trains the sender to i + 1; it sends after iterations 0, 2, 4 (period 2)
    assert run_pipeline(period=1, iterations=5) == [-1.0, 1.0, 2.0, 3.0, 4.0]
    assert run_pipeline(period=2, iterations=6, stale_toleration=2) == [-1.0, 1.0, 1.0, 3.0, 3.0, 5.0]


def test_other_event_names_and_old_snapshots_are_not_loaded():
    assert run_pipeline(period=1, iterations=3, event_name="other") == [-1.0, -1.0, -1.0]
    assert run_pipeline(period=1, iterations=3, delay_toleration=0.0) == [-1.0, -1.0, -1.0]


def test_a_receiver_staler_than_its_toleration_goes_on_and_says_so(caplog):
    with caplog.at_level(logging.WARNING):
        assert run_pipeline(period=3, iterations=5) == [-1.0, 1.0, 1.0, 1.0, 4.0]
    assert "would wait for the sender" in caplog.text and "stale_toleration=1" in caplog.text


def test_bad_arguments_are_refused():
    model = torch.nn.Linear(1, 1)
    with pytest.raises(ConfigError, match="'send' or 'receive'"):
        PeriodicalModelExchanger(model, "push")
    with pytest.raises(ConfigError, match="period >= 1"):
        PeriodicalModelExchanger(model, "send", period=0)
    with pytest.raises(ConfigError, match="model_loader=None"):
        PeriodicalModelExchanger(model, "send", model_loader=object())
