"""A serial run whose disk fills up at its last checkpoint (run by ``test_run_folder.py`` on a small
tmpfs of its own): a learner hook after the run writes a filler file that leaves ``argv[2]`` bytes
free, then the run saves its final checkpoint. Prints ``REPORT <json>``: the error, the files left,
``result.json`` and the sha256 of the earlier checkpoint's files before and after."""

from __future__ import annotations

import hashlib
import json
import os
import sys

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry.serial_entry import SerialRun, train
from ding_ray.utils.checkpoint import CheckpointStore
from ding_ray.worker.learner.hooks import LearnerHook
from tests.bad_input.configs import CREATE, small_main


def hashes(folder: str) -> dict:
    return {
        n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest() for n in os.listdir(folder)
    }


class FillDisk(LearnerHook):
    def __init__(self, root: str, leave: int) -> None:
        super().__init__("fill_disk", priority=1000, position="after_run")
        self.root, self.leave, self.before = root, leave, None

    def __call__(self, engine) -> None:
        self.before = hashes(CheckpointStore(exp).latest().folder)
        st = os.statvfs(self.root)
        with open(os.path.join(self.root, "filler"), "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - self.leave))


root, leave = sys.argv[1], int(sys.argv[2])
exp = os.path.join(root, "run")
run = SerialRun(small_main(exp, checkpoint=dict(freq=15)), CREATE, 0, None, None, True, False)
fill = FillDisk(root, leave)
run.learner.register_hook(fill)
try:
    train(run, max_env_step=None, max_train_iter=20)
    error = None
except Exception as err:  # noqa: BLE001 - the report says what it was
    error = f"{type(err).__module__}.{type(err).__name__}: {err}"
files = sorted(os.path.relpath(os.path.join(d, n), exp) for d, _, names in os.walk(exp) for n in names)
result_path = os.path.join(exp, "result.json")
result = json.load(open(result_path)) if os.path.exists(result_path) else None
latest = CheckpointStore(exp).latest()
report = dict(
    error=error,
    files=files,
    result=result,
    latest=latest.folder if latest else None,
    unchanged=fill.before == hashes(latest.folder) if latest else False,
)
print("REPORT " + json.dumps(report), flush=True)
