"""A Ray run whose disk fills up at its last checkpoint (run by ``test_run_folder.py`` in a mount
namespace of its own, Ray included, on a small tmpfs): once the learner reaches the budget the last
stage writes a filler file that leaves ``argv[2]`` bytes free and ends the run there (no stage writes
to the full disk before the end of the run does), which saves its final checkpoint. Prints
``REPORT <json>``: the error, the files left and ``result.json``."""

from __future__ import annotations

import json
import os
import sys

import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import current_task, pipelines
from tests.distributed.configs import small_config

root, leave, budget = sys.argv[1], int(sys.argv[2]), 40
exp = os.path.join(root, "run")


def fill_disk_and_finish(ctx) -> None:
    if ctx.train_iter >= budget:
        st = os.statvfs(root)
        with open(os.path.join(root, "filler"), "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
        current_task().finish = True


ray.init(num_cpus=2, include_dashboard=False)
main, create = small_config(exp)
main["checkpoint"] = dict(freq=0)
cfg = compile_ray_config((main, create), seed=0)
try:
    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        pipelines.off_policy(task, cfg, rc)
        task.use(fill_disk_and_finish)
        task.run()
    error = None
except Exception as err:  # noqa: BLE001 - the report says what it was
    error = f"{type(err).__name__}: {err}"
files = sorted(os.path.relpath(os.path.join(d, n), exp) for d, _, names in os.walk(exp) for n in names)
result_path = os.path.join(exp, "result.json")
result = json.load(open(result_path)) if os.path.exists(result_path) else None
print("REPORT " + json.dumps(dict(error=error, files=files, result=result)), flush=True)
ray.shutdown()
