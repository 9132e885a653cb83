"""The end of a run under repeated signals: a second Ctrl-C or SIGTERM that comes while the run
saves its last checkpoint waits until that checkpoint and ``result.json`` are written.

The run is a ``RunBase`` whose only component is a save that takes half a second (a fake: no
env, no learner), so the signals (real ones, sent to this process) land inside it for sure.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from easydict import EasyDict

from ding_ray.entry.cli_commands import interrupted
from ding_ray.framework.run import RunBase
from ding_ray.utils.checkpoint import LEARNER_FILE, CheckpointStore
from ding_ray.utils.runtime import run_end

SAVE_S = 0.5


class SlowSaveRun(RunBase):
    pipeline = "fake"

    def __init__(self, exp_name: str) -> None:
        super().__init__(EasyDict(exp_name=exp_name, seed=0), CheckpointStore(exp_name), None, {}, None)
        self.closed = False
        self.ctx.train_iter = 7

    def best_return(self) -> None:
        return None

    def stopped(self) -> bool:
        return False

    def save_last(self, error):
        time.sleep(SAVE_S)  # the signals of the test come now
        folder = self.store.folder(self.ctx.train_iter)
        files = {LEARNER_FILE: self.store.write(folder, LEARNER_FILE, b"weights")}
        return self.store.commit(folder, files, self.counters())

    def close(self) -> None:
        self.closed = True


def _signals_during_the_save(*signums: int) -> list[threading.Timer]:
    timers = [
        threading.Timer(0.1 + 0.05 * i, os.kill, (os.getpid(), signum)) for i, signum in enumerate(signums)
    ]
    for timer in timers:
        timer.start()
    return timers


def _result(exp: str) -> dict:
    with open(os.path.join(exp, "result.json")) as f:
        return json.load(f)


def test_signals_after_a_ctrl_c_wait_for_the_checkpoint_and_result(tmp_path):
    exp = str(tmp_path / "run")
    run = SlowSaveRun(exp)
    timers = []
    with pytest.raises(KeyboardInterrupt) as caught, run:
        timers = _signals_during_the_save(signal.SIGINT, signal.SIGTERM, signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: the run stops here and begins its save
        time.sleep(5)
        raise AssertionError("the first SIGINT did not stop the run")
    for timer in timers:
        timer.join()
    latest = CheckpointStore(exp).latest()
    assert latest is not None and latest.train_iter == 7  # complete: meta.json written after the file
    assert _result(exp)["error"] == "KeyboardInterrupt: Ctrl-C"
    assert run.closed
    line = interrupted(caught.value)
    assert line.startswith(f"interrupted (Ctrl-C); saved {latest.folder} and {exp}/result.json"), line
    assert run_end() in line


def test_a_signal_during_the_save_of_a_clean_end_is_raised_once_it_is_written(tmp_path):
    exp = str(tmp_path / "run")
    run = SlowSaveRun(exp)
    timers = []
    with pytest.raises(KeyboardInterrupt, match="stopped by signal SIGTERM") as caught, run:
        timers = _signals_during_the_save(signal.SIGTERM, signal.SIGTERM)  # the body ends at once
    for timer in timers:
        timer.join()
    assert CheckpointStore(exp).latest().train_iter == 7
    assert "error" not in _result(exp)  # the run itself ended cleanly
    assert interrupted(caught.value).startswith("interrupted (stopped by signal SIGTERM); saved ")


def test_signals_go_back_to_their_handlers_after_the_run(tmp_path):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with SlowSaveRun(str(tmp_path / "run")):
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) != before
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
