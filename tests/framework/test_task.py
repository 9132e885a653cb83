"""Task and contexts: stage order, generators, renewal with kept fields, finish, errors, closing."""

import threading

import numpy as np
import pytest

from ding_ray.errors import StageError
from ding_ray.framework import OfflineRLContext, OnlineRLContext, Task, current_task


def test_onion_order_and_max_step():
    calls = []

    def outer(ctx):
        calls.append(("outer-in", ctx.total_step))
        yield
        calls.append(("outer-out", ctx.total_step))

    def middle(ctx):
        calls.append(("middle", ctx.total_step))

    def inner(ctx):
        calls.append(("inner-in", ctx.total_step))
        yield
        calls.append(("inner-out", ctx.total_step))

    with Task() as task:
        task.use(outer).use(middle).use(inner)
        task.run(max_step=2)
    one = ["outer-in", "middle", "inner-in", "inner-out", "outer-out"]
    assert calls == [(c, 0) for c in one] + [(c, 1) for c in one]


def test_renew_keeps_counters_and_resets_the_rest():
    ctx = OnlineRLContext()
    ctx.env_step, ctx.train_iter, ctx.train_data, ctx.eval_value = 100, 7, [1], 3.0
    ctx.collect_kwargs["eps"] = 0.5
    new = ctx.renew()
    assert (new.env_step, new.train_iter, new.total_step) == (100, 7, 1)
    assert new.train_data is None and new.eval_value == -np.inf and new.collect_kwargs == {}
    new.keep("eval_value")
    new.eval_value = 2.0
    assert new.renew().eval_value == 2.0 and OnlineRLContext().renew().eval_value == -np.inf
    with pytest.raises(AttributeError, match="no field 'nope'"):
        new.keep("nope")
    offline = OfflineRLContext(train_epoch=3).renew()
    assert offline.train_epoch == 3 and offline.total_step == 1


def test_a_stage_finishes_the_run_through_current_task():
    seen = []

    def count(ctx):
        seen.append(ctx.total_step)
        if ctx.total_step == 3:
            current_task().finish = True

    def never_after_finish(ctx):
        seen.append("after")

    with Task(OnlineRLContext()) as task:
        task.use(count).use(never_after_finish)
        task.run()
    assert seen == [0, "after", 1, "after", 2, "after", 3]
    with pytest.raises(RuntimeError, match="No task is running"):
        current_task()


def test_a_failing_stage_names_itself_and_closers_still_run():
    closed = []

    def make_broken():
        def _broken(ctx):
            raise ValueError("bad batch")

        return _broken

    def opens_something(ctx):
        current_task().on_close(lambda: closed.append("file"))
        yield
        closed.append("never reached")

    with pytest.raises(StageError, match=r"Stage 'make_broken' failed: ValueError: bad batch") as err:
        with Task() as task:
            task.use(opens_something).use(make_broken())
            task.run(max_step=5)
    assert isinstance(err.value.__cause__, ValueError)
    assert closed == ["file"]


def test_serial_and_parallel_compose_stages():
    order = []
    both_running = threading.Barrier(2, timeout=30)  # passes only while the two stages run at once

    def tag(name, meet=False):
        def _tag(ctx):
            if meet:
                both_running.wait()
            order.append((name, threading.current_thread().name.startswith("stage")))
            yield
            order.append(name + "-out")

        _tag.__qualname__ = name
        return _tag

    with Task() as task:
        task.use(task.serial(tag("a"), tag("b")))
        task.use(task.parallel(tag("p", meet=True), tag("q", meet=True)))  # one after the other: a timeout
        task.run(max_step=1)
    assert order[:2] == [("a", False), ("b", False)]
    assert {order[2], order[3]} == {("p", True), ("q", True)}
    assert order[4:] == ["q-out", "p-out", "b-out", "a-out"]


def test_a_stage_that_yields_twice_is_an_error():
    def greedy(ctx):
        yield
        yield

    with pytest.raises(StageError, match="yielded more than once"), Task() as task:
        task.use(greedy)
        task.run(max_step=1)
