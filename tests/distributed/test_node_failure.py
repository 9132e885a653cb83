"""Node failure: a worker node of a ``ray.cluster_utils.Cluster`` on this machine is removed mid-training
and the run goes on training (``node_failure_run.py``: the five runs one after the other on one
cluster, each with a worker node of its own, in a process of its own with its own ``RAY_TMPDIR``, as
in test_multinode.py).

- collector node: the worker node hosts one of the two collectors (they ask for a ``collector_slot``
  resource, the head has 2, the worker 1, and ``SPREAD`` puts one on each node); when it goes, the
  collector's call is lost and counted, Ray restarts the collector in the head's spare slot, and it
  rejoins (``lost_batches``, ``collector_restarts`` in result.json).
- buffer node: only the worker node has the ``buffer_node`` resource the buffer asks for; once it
  is removed a replacement node with that resource joins, as an autoscaler would add one for the
  pending actor. Ray restarts the buffer there, it reloads the latest run checkpoint's snapshot,
  and result.json's ``recoveries`` says which checkpoint and how many transitions were lost.
- stranded collectors: both collectors on the worker node and no room for them elsewhere: the run
  ends with a ``ClusterError`` saying so after ``ray.actor_start_timeout_s`` (here 20 s) instead of
  waiting forever for a node (before, it waited forever: nothing is in flight but the pings Ray
  holds until the actors are back, and the rate limiter stops the learner).

Nodes go two ways: ``drain`` (the node's processes get SIGTERM, its raylet tells the GCS it is
leaving: a node drained or preempted with notice) and ``crash`` (SIGKILL: the GCS finds out from
failed health checks, here 3 checks 0.5 s apart instead of Ray's 5 checks 3 s apart). The
collector node goes both ways, the buffer's and the learner's nodes crash (the harder way: the
driver's calls fail before the GCS knows; ``node_failure_run.py DIR buffer/drain`` runs the other),
to keep the file
within ~2 minutes on 2 cores.

The worker nodes offer no CPU to Ray, so nothing but the collector / buffer / learner that asks
for the node's custom resource lands on them; the rest stays on the head (removing the driver's
node is not survivable).
The node goes after iteration 150, once a checkpoint is committed (every 100 iterations); the run
ends 300 learner iterations after the removed actor is back (the collector comes back ~4 s after a
drain, ~5 s after a crash, torch import included; the buffer ~3 s, the replacement node's start
included), or at 2,400 iterations if it never is, which fails the test.

An undisturbed run of the same cluster and config, for the wall time to compare with:
``RAY_TMPDIR=$(mktemp -d) PYTHONPATH=. python -m tests.distributed.node_failure_run DIR none-buffer/drain``
(or ``none-collector``; ``crash`` for the budget of the crash tests); the JSON line's ``run_s`` is the
time of ``task.run()``.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.distributed.conftest import REPO, run_python
from tests.distributed.node_failure_run import AFTER_BACK, BUDGET, REMOVE_AT, STRANDED_TIMEOUT_S
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]


SPECS = ("collector/drain", "collector/crash", "buffer/crash", "learner/crash", "stranded/crash")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """``SPECS`` -> the runner's JSON for that run; result.json is checked to say what the runner
    saw at the end."""
    root = str(tmp_path_factory.mktemp("node_failure"))
    code = f"import runpy, sys; sys.argv = ['x', {root!r}, *{SPECS!r}]; " + (
        "runpy.run_module('tests.distributed.node_failure_run', run_name='__main__')"
    )
    proc = run_python(code, timeout=900, env={"RAY_TMPDIR": short_tmp("drnf"), "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr[-3000:]
    outs = json.loads(proc.stdout.strip().splitlines()[-1])
    for spec in SPECS:
        with open(os.path.join(root, spec.replace("/", "_"), "result.json")) as f:
            assert json.load(f) == outs[spec]["result"]  # the file on disk says the same
        outs[spec]["exp_name"] = os.path.join(root, spec.replace("/", "_"))
    return outs


def _went_on_after_the_return(out: dict, how: str) -> dict:
    result = out["result"]
    assert "error" not in out and "error" not in result, out.get("error")
    assert REMOVE_AT <= out["removed_at"] < BUDGET[how]  # removed mid-training ...
    assert out["checkpoint_before"] is not None  # ... after a checkpoint
    assert out["back_at"] < BUDGET[how]  # the actor came back before the end of the budget ...
    assert result["train_iter"] >= out["back_at"] + AFTER_BACK  # ... and the learner went on training
    assert result["env_steps"] > out["env_step_at_removal"]  # collection went on after the removal
    return result


@pytest.mark.parametrize("how", ["drain", "crash"])
def test_removing_the_node_of_a_collector_loses_its_batch_and_the_collector_restarts(runs, how):
    out = runs[f"collector/{how}"]
    head, worker = out["head_node"], out["worker_node"]
    assert sorted(out["collector_nodes"]) == sorted([head, worker])  # one collector on each node
    assert out["learner_node"] == head and out["buffer_node"] == head
    result = _went_on_after_the_return(out, how)
    assert result["lost_batches"] >= 1  # the call in flight on the removed node
    assert result["collector_restarts"] >= 1  # it came back before the end of the run ...
    assert out["collector_nodes_after"] == [head, head]  # ... in the head's spare collector slot
    assert result["recoveries"] == []  # the learner and the buffer were not touched


@pytest.mark.parametrize("how", ["crash"])
def test_removing_the_node_of_the_buffer_restores_it_from_the_latest_snapshot(runs, how):
    out = runs[f"buffer/{how}"]
    exp_name = out["exp_name"]
    head, worker = out["head_node"], out["worker_node"]
    assert out["buffer_node"] == worker and out["learner_node"] == head
    assert out["buffer_node_after"] == out["replacement_node"] != worker
    result = _went_on_after_the_return(out, how)
    (event,) = result["recoveries"]
    assert event["actor"] == "buffer"
    # the latest checkpoint committed before the buffer came back: the one there was at the removal,
    # or the next one if both its files were in before the node went
    restored = event["restored_from"]
    assert os.path.dirname(restored) == os.path.join(exp_name, "checkpoints")
    at_removal = os.path.join(exp_name, "checkpoints", f"iter_{out['removed_at']:08d}")
    assert out["checkpoint_before"] <= restored <= at_removal
    assert out["buffer_instance"]["restored_from"] == restored
    with open(os.path.join(restored, "meta.json")) as f:
        meta = json.load(f)
    assert event["buffer_count"] == meta["buffer_count"] > 0  # exactly the snapshot's transitions
    assert event["lost_transitions"] > 0  # what was pushed between the snapshot and the removal
    assert result["lost_batches"] == 0 and result["collector_restarts"] == 0


def test_removing_the_node_of_the_learner_restores_it_from_the_latest_checkpoint(runs):
    out = runs["learner/crash"]
    head, worker = out["head_node"], out["worker_node"]
    assert out["learner_node"] == worker and out["buffer_node"] == head
    assert out["learner_node_after"] == out["replacement_node"] != worker
    result = _went_on_after_the_return(out, "crash")
    (event,) = result["recoveries"]
    assert event["actor"] == "learner"
    assert out["checkpoint_before"] <= event["restored_from"]
    with open(os.path.join(event["restored_from"], "meta.json")) as f:
        restored_iter = json.load(f)["train_iter"]
    assert event["lost_train_iters"] >= out["removed_at"] - restored_iter > 0  # since the checkpoint


def test_collectors_with_no_node_left_end_the_run_with_an_error_that_says_so(runs):
    out = runs["stranded/crash"]
    assert out["collector_nodes"] == [out["worker_node"]] * 2
    assert out["error"].endswith(out["result"]["error"])  # result.json records it
    assert "ClusterError: Every collector actor died and none was restarted within 20 s" in out["error"]
    assert "collector_resources={'stranded_slot': 1}" in out["error"]  # what a node needs to have
    # after the timeout, not at once, and not much later (the GCS takes a few seconds to see a crash)
    assert STRANDED_TIMEOUT_S < out["error_after_removal_s"] < STRANDED_TIMEOUT_S + 30
    assert out["result"]["lost_batches"] == 2 and out["result"]["train_iter"] < BUDGET["crash"]
    assert out["result"]["last_checkpoint"] is not None  # resume= goes on from there
