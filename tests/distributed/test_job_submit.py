"""docs/ray.md's local cluster path with token authentication, for real and as written: on a fresh
``HOME`` (no ``~/.ray``), the page's command lines from ``export RAY_AUTH_MODE=token`` to ``ray job
logs``, with ``ray job submit --working-dir .`` of ``examples/apex_dqn.py`` on a small budget.

Each line runs as it is written (through ``bash``), except where the shared test machine needs
otherwise: ``ray start --head --block`` gets free ports and runs in its own process group and
``RAY_TMPDIR`` (other Rays hold the default ports), the job commands find it through
``RAY_ADDRESS``, and the example gets a small budget. The head is stopped as the page says, with
Ctrl-C; the page never says ``ray stop`` (which stops every Ray of the user on the machine).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.distributed.conftest import REPO, free_port, stop_ray_head, with_ctrl_c
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SMALL_BUDGET = ["--max-env-step", "6000", "--num-collectors", "1", "--set", "ray.publish_freq=16"]


RECIPE_PAGE = "docs/ray.md"


def readme_recipe() -> list[str]:
    """The page's token recipe: the lines of its bash blocks from ``export RAY_AUTH_MODE=token`` to
    ``ray job logs``."""
    with open(os.path.join(REPO, RECIPE_PAGE)) as f:
        page = f.read()
    lines, in_block = [], True  # the first line is inside a block
    for line in page[page.index("export RAY_AUTH_MODE=token") :].splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        command = line.split("  #")[0].strip()  # the comments, two spaces off the command
        if in_block and command:
            lines.append(command)
            if command.startswith("ray job logs"):
                return lines
    raise AssertionError(f"{RECIPE_PAGE}'s token recipe has no `ray job logs`")


def run_line(line: str, env: dict, cwd: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def wait_for_job_server(
    ray_bin: str, port: int, head: subprocess.Popen, env: dict, timeout_s: float = 120
) -> None:
    """Until ``ray job list`` answers: the dashboard's job server starts after the head is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert head.poll() is None, "ray start --head exited early"
        listed = subprocess.run(
            [ray_bin, "job", "list", f"--address=http://127.0.0.1:{port}"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if listed.returncode == 0:
            return
        time.sleep(2)
    raise TimeoutError(f"the head's job server did not come up: {listed.stderr[-1500:]}")


def test_the_readme_recipe_has_the_lines_this_module_runs():
    recipe = readme_recipe()
    assert recipe[0] == "export RAY_AUTH_MODE=token"  # once, for every command after it
    assert any(line.startswith("ray get-auth-token --generate") for line in recipe)  # a fresh HOME
    assert [line for line in recipe if line.startswith("ray start")] == [
        "ray start --head --dashboard-host=127.0.0.1 --block"  # Ctrl-C stops this head only
    ]
    assert not any(line.startswith("ray stop") for line in recipe)  # it stops every Ray of the user
    submits = [line for line in recipe if line.startswith("ray job submit --working-dir .")]
    assert any("examples/apex_dqn.py" in line for line in submits)
    assert any(line.startswith("ray job status") for line in recipe)
    assert any(line.startswith("ray job logs") for line in recipe)


@pytest.fixture(scope="module")
def head():
    """The recipe up to ``ray start --head``, on a fresh HOME: yields (ray binary, env, dashboard
    port, Ray Client port, working folder, the recipe's lines after the start)."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    home = short_tmp("drjs_home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env.update(
        HOME=home,
        RAY_TMPDIR=short_tmp("drjs"),
        PATH=os.pathsep.join((os.path.dirname(sys.executable), env.get("PATH", ""))),  # ray, python
    )
    # The job runs in an upload of the submitting folder (--working-dir .): examples/ is there, and
    # its run folders are not written into the repository.
    workdir = short_tmp("drjs_cwd")
    os.symlink(os.path.join(REPO, "examples"), os.path.join(workdir, "examples"))
    recipe = readme_recipe()
    start = next(i for i, line in enumerate(recipe) if line.startswith("ray start"))
    for line in recipe[:start]:
        if line.startswith("export "):
            key, value = line.removeprefix("export ").split("=", 1)
            env[key] = value
        else:
            done = run_line(line, env, workdir)
            assert done.returncode == 0, f"{line}: {done.stderr[-2000:]}"
    token = open(os.path.join(home, ".ray", "auth_token")).read()
    assert re.fullmatch("[0-9a-f]{64}", token), "no token was made in the fresh HOME"
    dashboard, client = free_port(), free_port()
    head = subprocess.Popen(
        with_ctrl_c(shlex.split(recipe[start]) + [
            f"--port={free_port()}", "--num-cpus=2", "--include-dashboard=true",
            f"--dashboard-port={dashboard}", f"--metrics-export-port={free_port()}",
            f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
        ]),
        env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_job_server(ray_bin, dashboard, head, env)
        yield ray_bin, env, dashboard, client, workdir, recipe[start + 1 :]
    finally:
        stop_ray_head(head)
        for folder in (home, env["RAY_TMPDIR"], workdir):
            shutil.rmtree(folder, ignore_errors=True)


def test_the_readme_recipe_submits_the_example_and_follows_it_up(head):
    _, env, dashboard, _, workdir, after_start = head
    env = {**env, "RAY_ADDRESS": f"http://127.0.0.1:{dashboard}"}
    submit_line = next(line for line in after_start if line.startswith("ray job submit"))
    # The dashboard answers before its job agent has registered; on a loaded machine the
    # first submissions are refused with "No available agent", or the client's version check
    # (before anything is submitted) cannot connect. Both submit nothing, so retry for a while.
    not_yet = ("No available agent", "Failed to connect to Ray at address")
    deadline = time.monotonic() + 90
    while True:
        submit = run_line(submit_line + " " + shlex.join(SMALL_BUDGET), env, workdir, timeout=300)
        said = submit.stderr + submit.stdout
        if not any(reason in said for reason in not_yet) or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-2000:]
    assert "succeeded" in (submit.stdout + submit.stderr).lower()
    assert '"pipeline": "ray-async"' in submit.stdout and '"num_collectors": 1' in submit.stdout
    # The follow-up commands, which failed with InvalidAuthToken when only the submit had the mode.
    for line in after_start[after_start.index(submit_line) + 1 :]:
        done = run_line(line, env, workdir)
        assert done.returncode == 0, f"{line}: {done.stdout[-1000:]} {done.stderr[-2000:]}"
        if line.startswith("ray job status"):
            assert "succeeded" in (done.stdout + done.stderr).lower()
        if line.startswith("ray job logs"):
            assert json.loads(done.stdout.strip().splitlines()[-1])["pipeline"] == "ray-async"


def test_the_dashboard_api_wants_the_token(head):
    _, env, dashboard, *_ = head
    url = f"http://127.0.0.1:{dashboard}/api/version"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=30)
    assert refused.value.code == 401
    token = open(os.path.join(env["HOME"], ".ray", "auth_token")).read()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


CLIENT_DRIVER = """
import sys
from ding_ray.entry import ray_pipeline
from tests.distributed.configs import small_config

main, create = small_config("client_run", address=sys.argv[1])
ray_pipeline((main, create), seed=0, max_env_step=1000)
"""


def test_ray_client_address_joins_the_cluster_and_runs(head, tmp_path):
    """``ray.address='ray://host:port'``: the driver runs here, its actors on the cluster."""
    _, env, _, client, *_ = head
    env = {**env, "PYTHONPATH": REPO}
    run = subprocess.run(
        [sys.executable, "-c", CLIENT_DRIVER, f"ray://127.0.0.1:{client}"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "joining the Ray cluster at ray://" in run.stderr
    result = json.loads((tmp_path / "client_run" / "result.json").read_text())
    assert result["pipeline"] == "ray-async" and result["env_steps"] >= 1000 and result["train_iter"] > 0
