"""The Metrics-tab recipe up to the Prometheus binary: with the dashboard on, Ray writes the
Prometheus config that ``ray metrics launch-prometheus`` starts Prometheus with; following it (its
service-discovery file, then each target) as Prometheus would finds every ding_ray figure.

A real Prometheus (Debian's) scraping a live run is ``test_dashboard_metrics.py``.
"""

from __future__ import annotations

import json

import pytest

from tests.distributed.conftest import REPO, run_python
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]

RUN = """
import json, os, sys, time, urllib.error, urllib.request
import ray, yaml
from ding_ray.framework import pipelines
from ding_ray import distributed
from ding_ray.framework import Task
from tests.distributed.configs import small_config

main, create = small_config(sys.argv[1], include_dashboard=True)
cfg, plan, started = distributed.start_run((main, create), 0)
with distributed.RayRun(cfg, plan) as rc, rc.task() as task:
    pipelines.off_policy(task, cfg, rc, max_train_iter=200)
    task.run()
    session = os.path.join(os.environ["RAY_TMPDIR"], "ray", "session_latest")  # Ray's own layout
    with open(f"{session}/metrics/prometheus/prometheus.yml") as f:
        prometheus = yaml.safe_load(f)
    sd = [c for job in prometheus["scrape_configs"] for c in job.get("file_sd_configs", [])]
    sd_files = [p for c in sd for p in c["files"]]
    # each actor pushes its metrics to Ray's agent every second or so: scrape until every wanted
    # series is served (one first recorded late in a short run may show up seconds after it); a
    # target that refuses, as a process's agent may while it starts under load, is down for this
    # pass, as Prometheus counts it, and asked again on the next
    found, deadline = {}, time.monotonic() + 40
    while time.monotonic() < deadline and any(s not in found.get(a, ()) for a, s in WANTED):
        targets = [t for p in sd_files for entry in json.load(open(p)) for t in entry["targets"]]
        for target in targets:
            try:
                text = urllib.request.urlopen(f"http://{target}/metrics", timeout=5).read().decode()
            except (urllib.error.URLError, OSError):
                continue
            for line in text.splitlines():
                if line.startswith("ray_ding_ray_") and 'experiment="' in line:
                    actor = line.split('actor="', 1)[1].split('"', 1)[0]
                    found.setdefault(actor.split("-")[0], set()).add(line.split("{", 1)[0])
        time.sleep(1)
    found = {k: sorted(v) for k, v in found.items()}
    print(json.dumps({"sd_files": sd_files, "targets": targets, "found": found}))
"""


# (actor, series): one figure each owner exports, the driver only what it alone knows
WANTED = [
    ("collector", "ray_ding_ray_collector_env_steps_total"),
    ("learner", "ray_ding_ray_learner_train_iter_total"),
    ("buffer", "ray_ding_ray_buffer_size"),
    ("driver", "ray_ding_ray_buffer_samples_per_insert"),
]


def test_the_scrape_targets_ray_writes_for_prometheus_serve_every_ding_ray_figure(tmp_path):
    env = {"RAY_TMPDIR": short_tmp("drmr"), "PYTHONPATH": REPO}
    code = RUN.replace("sys.argv[1]", repr(str(tmp_path / "recipe"))).replace("WANTED", repr(WANTED))
    proc = run_python(code, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["sd_files"] and out["targets"]
    assert all(t.startswith("127.0.0.1:") for t in out["targets"])  # a local Ray serves loopback only
    found = out["found"]
    for actor, series in WANTED:
        assert series in found.get(actor, []), (actor, series, found)
