"""A multi-node run on ``ray.cluster_utils.Cluster`` (2 nodes on this machine), in its own process.

``RAY_TMPDIR`` keeps the test cluster's files (and its ``ray_current_cluster`` address) away from
every other Ray on the machine, so nobody's plain ``ray.init()`` joins it by accident.
"""

from __future__ import annotations

import json

import pytest

from tests.distributed.conftest import REPO, run_python
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_collectors_spread_over_two_nodes_and_the_run_finishes(tmp_path):
    ray_tmp = short_tmp("drmn")
    code = f"import runpy, sys; sys.argv = ['x', {str(tmp_path / 'multinode')!r}]; " + (
        "runpy.run_module('tests.distributed.multinode_run', run_name='__main__')"
    )
    proc = run_python(code, timeout=300, env={"RAY_TMPDIR": ray_tmp, "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["cluster_nodes"]) == 2
    assert set(result["collector_nodes"]) == set(result["cluster_nodes"])  # one collector per node
    assert result["env_steps"] >= 2000 and result["train_iter"] > 0
