"""Ctrl-C on a Ray run (issue 27 items 1, 3, 4, 8): one line and exit status 130, a checkpoint and
result.json also when the output is piped into ``tee`` (which the Ctrl-C ends too); checkpoints
every ``checkpoint.every_s`` seconds on Ray; a resumed run's monitor rates count only its own steps.

The example (and tee) run in a process group of their own (as a terminal's foreground job) with its own Ray,
and SIGINT goes to the whole group, as Ctrl-C in a terminal sends it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ding_ray.distributed.monitor import RunMonitor
from ding_ray.utils.checkpoint import CheckpointStore
from ding_ray.worker import metrics
from tests.distributed.conftest import REPO, with_ctrl_c
from tests.short_tmp import short_tmp

pytestmark = pytest.mark.ray

EXAMPLE = os.path.join(REPO, "examples", "apex_dqn.py")
# a long run (no stop value), checkpoints by seconds only: freq is far beyond what it reaches
ARGS = [
    "--set",
    "env.stop_value=100000",
    "checkpoint.freq=1000000",
    "checkpoint.every_s=1",
    "ray.progress_bar=True",
]


def _interrupt_example(tmp_path, piped: bool) -> tuple[int, str, str]:
    """Start the example (piped: ``2>&1 | tee out``), wait for a checkpoint written by every_s,
    SIGINT the group; ``(example's exit status, its output, the run folder)``."""
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_TMPDIR": short_tmp("drint")}
    out_path = str(tmp_path / "out.txt")
    out = open(out_path, "w")
    cmd = with_ctrl_c([sys.executable, EXAMPLE, *ARGS])
    if piped:
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
        tee = subprocess.Popen(
            ["tee", out_path + ".tee"], stdin=proc.stdout, stdout=out, process_group=proc.pid
        )
        proc.stdout.close()  # tee holds the pipe's reading end alone, as in a shell
    else:
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=out,
            process_group=0,
        )
        tee = None
    exp = str(tmp_path / "apex_dqn_seed0")
    store = CheckpointStore(exp)
    deadline = time.monotonic() + 240
    try:
        while store.latest() is None and time.monotonic() < deadline:
            assert proc.poll() is None, open(out_path).read()[-3000:]
            time.sleep(0.2)
        assert store.latest() is not None, "no checkpoint by checkpoint.every_s within 240 s"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the example, and tee with it
        code = proc.wait(timeout=180)
        if tee is not None:
            tee.wait(timeout=30)
    finally:
        for p in (proc, tee):
            if p is not None and p.poll() is None:
                p.kill()
        out.close()
    text = open(out_path).read() + (open(out_path + ".tee").read() if piped else "")
    return code, text, exp


@pytest.mark.slow
@pytest.mark.parametrize("piped", [False, True], ids=["terminal", "piped_into_tee"])
def test_ctrl_c_on_a_ray_example_ends_in_one_line_with_130_a_checkpoint_and_result(tmp_path, piped):
    code, output, exp = _interrupt_example(tmp_path, piped)
    assert code == 130, output[-3000:]
    if not piped:  # piped, tee ended with the Ctrl-C: nothing more reached the file
        assert "Traceback" not in output, output[-3000:]
        assert output.strip().splitlines()[-1].startswith("apex_dqn.py: interrupted"), output[-3000:]
    with open(os.path.join(exp, "result.json")) as f:
        result = json.load(f)
    assert result["error"].startswith("KeyboardInterrupt"), result
    latest = CheckpointStore(exp).latest()
    assert result["last_checkpoint"] == latest.folder  # written on the way out, resume= goes on from it
    assert latest.meta["env_steps"] == result["env_steps"]
    # every_s wrote checkpoints long before checkpoint.freq's 1,000,000 iterations
    assert result["checkpoints_saved"] >= 2 and result["train_iter"] < 1_000_000


def test_a_resumed_runs_monitor_counts_only_its_own_steps(ray_session, tmp_path):
    created = time.monotonic()
    monitor = RunMonitor(str(tmp_path), progress_bar=False, interval_s=0.0, start_env_steps=46_296)
    monitor.report(46_296, 2_000, None, force=True)
    time.sleep(0.2)
    monitor.report(47_296, 2_100, None, force=True)
    total = time.monotonic() - created  # from before the monitor's start to after its last report
    monitor.close()
    # 1,000 steps in this process over between 0.2 s and `total`, not the 47,296 of the whole run
    assert 1_000 / total <= monitor.rate <= 1_000 / 0.2
    assert monitor.scalars[metrics.COLLECTOR_ENV_STEPS_PER_S] <= 1_000 / 0.2
    assert monitor.scalars[metrics.COLLECTOR_ENV_STEPS] == 47_296


def test_sigterm_while_the_driver_waits_in_ray_get_is_named_sigterm(ray_session):
    """Ray hands an interrupt raised inside ``ray.get`` back as a bare ``KeyboardInterrupt``: the
    one line must still say SIGTERM stopped the run, not Ctrl-C (a race the Ray example hit)."""
    import threading

    import ray

    from ding_ray.entry.cli_commands import interrupted
    from ding_ray.utils.runtime import RunInterrupts, error_text

    @ray.remote(num_cpus=0)
    def slow() -> None:
        time.sleep(30)

    ref = slow.remote()
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    with pytest.raises(KeyboardInterrupt) as caught, RunInterrupts():
        timer.start()
        ray.get(ref, timeout=20)
    ray.cancel(ref, force=True)
    assert interrupted(caught.value).startswith("interrupted (stopped by signal SIGTERM)")
    assert error_text(caught.value) == "KeyboardInterrupt: stopped by signal SIGTERM"  # result.json's
    with RunInterrupts():  # a new run forgets the signal: a bare interrupt there is a Ctrl-C
        pass
    assert interrupted(KeyboardInterrupt()).startswith("interrupted (Ctrl-C)")
    assert error_text(KeyboardInterrupt()) == "KeyboardInterrupt: Ctrl-C"
