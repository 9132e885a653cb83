"""``HeadWatch`` on a fake head and clock: when the head counts as lost, and the one line the process
ends with (the real thing, a killed head host, is tests/hosts/test_chaos.py's)."""

from __future__ import annotations

import os
import sys

from ding_ray.distributed.head_watch import HeadWatch


class FakeHead:
    """Answers as scripted, one look at a time, on a clock the test moves."""

    def __init__(self, looks: list[tuple[float, bool]]) -> None:
        self.looks = looks
        self.now = 0.0

    def answers(self, address: str) -> bool:
        self.now, answered = self.looks.pop(0)
        return answered

    def clock(self) -> float:
        return self.now


def watch_of(
    head: FakeHead, ended: list, on_lost=lambda silent_s: f"lost after {silent_s:.0f} s"
) -> HeadWatch:
    return HeadWatch("10.0.0.1:6379", 10, on_lost, answers=head.answers, clock=head.clock, end=ended.append)


def test_the_head_is_lost_after_timeout_s_without_an_answer_and_the_process_ends_with_one_line(capsys):
    # silent at 0 s, answers at 5 s (the count starts again), silent from 6 s: lost at 16 s
    head = FakeHead([(0, False), (5, True), (6, False), (12, False), (16, False)])
    ended: list = []
    watch = watch_of(head, ended, on_lost=lambda silent_s: f"lost after {silent_s:.0f} s;\n  resume so")

    assert [watch.check() for _ in range(4)] == [False] * 4 and ended == []
    assert watch.check() is True

    assert ended == [1]  # exit status 1
    program = os.path.basename(sys.argv[0])
    assert capsys.readouterr().err == f"{program}: error: lost after 10 s; resume so\n"  # one line


def test_a_stopped_watch_never_ends_the_process():
    head = FakeHead([(0, False), (30, False)])
    ended: list = []
    watch = watch_of(head, ended)
    watch.stop()  # the run ended before the head went

    assert [watch.check(), watch.check()] == [False, False] and ended == []


def test_a_failing_on_lost_still_ends_the_process_with_a_line_that_says_what_happened(capsys):
    def on_lost(silent_s: float) -> str:
        raise OSError("the disk is full")

    ended: list = []
    watch = watch_of(FakeHead([(0, False), (10, False)]), ended, on_lost)

    assert [watch.check(), watch.check()] == [False, True] and ended == [1]
    err = capsys.readouterr().err
    assert "lost the Ray head at 10.0.0.1:6379 (10 s without an answer); the disk is full" in err
