"""The wheel a user installs: the package, its bundled configs and the licence are in it; the tests,
benchmarks and docs are not, and its metadata names the licence and the version of ding_ray."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import zipfile

import ding_ray

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_wheel_holds_the_package_configs_and_licence_and_nothing_else(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            REPO,
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("ding_ray-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = f"ding_ray-{ding_ray.__version__}.dist-info"
    assert tops == {"ding_ray", dist_info}, tops  # no tests/, benchmarks/, docs/, examples/
    assert "ding_ray/__init__.py" in names and "ding_ray/distributed/actors.py" in names
    assert "ding_ray/configs/cartpole_dqn.py" in names
    assert f"{dist_info}/licenses/LICENSE" in names
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA"))
    assert metadata["Version"] == ding_ray.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    with open(os.path.join(REPO, "LICENSE")) as f:
        assert "Apache License" in f.readline()
