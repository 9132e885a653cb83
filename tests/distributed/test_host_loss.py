"""A learner whose host is lost when the survivor cannot hold every actor (``host_loss_run.py``: a
driver-only head, two workers of 1 CPU, the learner's worker killed): the learner comes back on the
other worker first, the run goes on with the collectors that fit there and reaches CartPole's stop
value. Without room made for it, the learner waited for a node until ``ray.actor_start_timeout_s``
and the run ended."""

from __future__ import annotations

import json

import pytest

from tests.distributed.conftest import REPO, run_python
from tests.distributed.host_loss_run import KILL_AT, SHARES
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_the_learner_comes_back_first_and_the_run_reaches_475_with_fewer_collectors(tmp_path):
    ray_tmp = short_tmp("drhl")
    code = f"import runpy, sys; sys.argv = ['x', {str(tmp_path / 'run')!r}, 'kill']; " + (
        "runpy.run_module('tests.distributed.host_loss_run', run_name='__main__')"
    )
    proc = run_python(code, timeout=400, env={"RAY_TMPDIR": ray_tmp, "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    result = out["result"]
    assert "error" not in out, out["error"]
    assert out["killed_at"] >= KILL_AT and result["stop"] and result["best_eval_return"] >= 475
    assert out["learner_node_after"] != out["learner_node"]  # on the surviving worker
    (event,) = result["recoveries"]
    assert event["actor"] == "learner" and event["restored_from"] is not None
    assert out["collectors_running_before"] == SHARES["num_collectors"] == 4
    # the survivor holds the learner, buffer and evaluator (0.6 CPU) and two collectors of 0.2
    assert out["collectors_after"] == 2
