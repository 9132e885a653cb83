"""The Ray dashboard of a live run, seen as a user sees it: a real Prometheus (Debian's
``prometheus``) started with the config Ray writes scrapes the run and answers PromQL for every
actor's ding_ray series, and a real browser (headless ``chromium``) logs in with the cluster's
token and shows the run's actors on the dashboard's Actors page.

The run is a driver subprocess with its own Ray (``RAY_TMPDIR``) and token. It trains until the
test has seen every actor's series (a busy machine can start the last actors late, and a series
is only exported while its owner records it), and its actors stay up until the test has looked
at them. Set ``DING_RAY_SCREENSHOT=docs/img/dashboard_actors.png`` to
keep the browser's screenshot (the one the README shows). Without the two programs the tests are
skipped with the line that installs them (``tests/system_binaries.py``).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.distributed.conftest import REPO, free_port
from tests.short_tmp import short_tmp
from tests.system_binaries import require_binary

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ACTORS = ("learner", "buffer", "evaluator", "collector-0", "collector-1", "driver")

DRIVER = """
import json, os, sys
import ray
from ding_ray import distributed
from ding_ray.framework import pipelines
from tests.distributed.configs import small_config

main, create = small_config(sys.argv[1], include_dashboard=True, num_collectors=2)
cfg, plan, started = distributed.start_run((main, create), 0)
stop_file = sys.argv[3]  # the test creates it once it has seen what it looks for
with distributed.RayRun(cfg, plan) as rc, rc.task() as task:
    node = ray._private.worker._global_node
    print(json.dumps({"session": node.get_session_dir_path(), "dashboard": node.webui_url}), flush=True)
    pipelines.off_policy(task, cfg, rc, max_train_iter=int(sys.argv[2]))
    task.use(lambda ctx: setattr(task, "finish", task.finish or os.path.exists(stop_file)))
    task.run()
    print("trained", flush=True)
    sys.stdin.readline()  # the actors stay up until the test has looked at them
"""


@pytest.fixture(scope="module")
def live_run():
    """A run whose actors are up: yields (experiment, session dir, dashboard URL, token)."""
    if not (shutil.which("prometheus") or shutil.which("chromium")):  # no test here could use the run
        require_binary("prometheus", "sudo apt-get install prometheus chromium (Debian, Ubuntu)")
    token = secrets.token_hex(32)
    env = {
        **os.environ,
        "PYTHONPATH": REPO,
        "RAY_TMPDIR": short_tmp("drdm"),
        "RAY_AUTH_MODE": "token",  # Ray's default for a local cluster; its own token, not ~/.ray's
        "RAY_AUTH_TOKEN": token,
        # Ray's export interval stays its default (10 s): set as RAY_metrics_report_interval_ms, the
        # driver's own series are never exported (Ray 2.60)
    }
    exp_dir = short_tmp("drdm_exp")
    out = os.path.join(exp_dir, "driver.out")  # a file, not a pipe: workers' prints reach it too
    stop_file = os.path.join(exp_dir, "stop")
    with open(out, "w") as stdout:
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, os.path.join(exp_dir, "dashboard_run"), "20000", stop_file],
            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=stdout, text=True,
        )  # fmt: skip
    try:
        started = json.loads(wait_for_line(driver, out, '{"session"', timeout_s=180))
        yield (
            "dashboard_run", started["session"], f"http://{started['dashboard']}", token,
            (driver, out), stop_file,
        )  # fmt: skip
    finally:
        open(stop_file, "w").close()
        driver.stdin.close()
        try:
            driver.wait(timeout=60)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
        shutil.rmtree(exp_dir, ignore_errors=True)


def wait_for_line(driver: subprocess.Popen, out: str, prefix: str, timeout_s: float) -> str:
    """The first line of the driver's output that starts with ``prefix``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(out) as f:
            found = [line for line in f if line.startswith(prefix)]
        if found:
            return found[0]
        assert driver.poll() is None, f"the driver exited with {driver.returncode}"
        time.sleep(0.5)
    raise TimeoutError(f"no {prefix!r} from the driver in {timeout_s} s")


def query(prometheus: str, promql: str) -> list[dict]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    answer = json.loads(urllib.request.urlopen(url, timeout=10).read())
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_prometheus_with_rays_config_scrapes_every_actors_ding_ray_series(live_run, tmp_path):
    require_binary("prometheus", "sudo apt-get install prometheus (Debian, Ubuntu)")
    experiment, session, _, _, driver, stop_file = live_run
    with open(f"{session}/metrics/prometheus/prometheus.yml") as f:
        config = yaml.safe_load(f)
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")  # Ray writes 10 s
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    prometheus = subprocess.Popen(
        [
            "prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        # while the run trains: on a busy machine the last actors start minutes late
        per_actor = f'count by (actor) ({{__name__=~"ray_ding_ray_.+", experiment="{experiment}"}})'
        actors, deadline = set(), time.monotonic() + 300
        while time.monotonic() < deadline and not set(ACTORS) <= actors:
            time.sleep(2)
            assert driver[0].poll() is None, f"the driver exited with {driver[0].returncode}"
            try:
                actors = {r["metric"]["actor"] for r in query(url, per_actor)}
            except OSError:  # Prometheus not listening yet
                assert prometheus.poll() is None, "prometheus exited"
        assert set(ACTORS) <= actors, actors
        (ratio,) = query(url, f'ray_ding_ray_buffer_samples_per_insert{{experiment="{experiment}"}}')
        assert ratio["metric"]["actor"] == "driver", ratio  # what only the driver knows
        evaluated = query(url, f'ray_ding_ray_evaluator_call_seconds_count{{experiment="{experiment}"}}')
        assert [e["metric"]["actor"] for e in evaluated] == ["evaluator"], evaluated
        steps = query(url, f'ray_ding_ray_collector_env_steps_total{{experiment="{experiment}"}}')
        assert {s["metric"]["actor"] for s in steps} == {"collector-0", "collector-1"}, steps
        assert all(float(s["value"][1]) > 0 for s in steps), steps
        (size,) = query(url, f'ray_ding_ray_buffer_size{{experiment="{experiment}"}}')
        assert size["metric"]["actor"] == "buffer" and float(size["value"][1]) > 0, size
        # the learner's counter, scraped more than once while the run went on
        series = f'ray_ding_ray_learner_train_iter_total{{experiment="{experiment}"}}'
        samples, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            samples = query(url, f"count_over_time({series}[5m])")
            if samples and float(samples[0]["value"][1]) >= 2:
                break
            time.sleep(1)
        assert samples and float(samples[0]["value"][1]) >= 2, samples
        open(stop_file, "w").close()
        wait_for_line(*driver, "trained", timeout_s=120)
        (learner,) = query(url, series)
        assert learner["metric"]["actor"] == "learner" and float(learner["value"][1]) > 0, learner
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)


class DevTools:
    """The few Chrome DevTools Protocol calls a test needs, over one page's websocket."""

    def __init__(self, ws_url: str) -> None:
        from websockets.sync.client import connect

        self._ws = connect(ws_url, max_size=None)
        self._ids = itertools.count(1)

    def __call__(self, method: str, **params) -> dict:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:  # events arrive in between: skip them
            message = json.loads(self._ws.recv(timeout=30))
            if message.get("id") == call_id:
                assert "error" not in message, message
                return message["result"]

    def close(self) -> None:
        self._ws.close()


def test_chromium_shows_the_runs_actors_on_the_dashboards_actors_page(live_run, tmp_path):
    require_binary("chromium", "sudo apt-get install chromium (Debian, Ubuntu)")
    _, _, dashboard, token, _, _ = live_run
    port = free_port()
    chromium = subprocess.Popen(
        [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
            f"--user-data-dir={tmp_path / 'profile'}", f"--remote-debugging-port={port}", "about:blank",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                pages = json.loads(
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5).read()
                )
                break
            except OSError:
                assert chromium.poll() is None and time.monotonic() < deadline, "chromium did not start"
                time.sleep(0.5)
        page = DevTools(next(p for p in pages if p["type"] == "page")["webSocketDebuggerUrl"])
        try:
            # what the dashboard's token dialog sets once a user pastes the token (`ray get-auth-token`)
            page("Network.setCookie", name="ray-authentication-token", value=token, url=dashboard, path="/")
            page(
                "Emulation.setDeviceMetricsOverride",
                width=1400,
                height=900,
                deviceScaleFactor=1,
                mobile=False,
            )
            page("Page.navigate", url=f"{dashboard}/#/actors")
            text, deadline = "", time.monotonic() + 60
            while time.monotonic() < deadline and not all(f"\t{a}\t" in text for a in ACTORS[:4]):
                time.sleep(1)
                evaluated = page("Runtime.evaluate", expression="document.body.innerText", returnByValue=True)
                text = evaluated["result"].get("value", "")
            time.sleep(1)  # let the table's last rows paint
            png = base64.b64decode(page("Page.captureScreenshot", format="png")["data"])
        finally:
            page.close()
    finally:
        chromium.terminate()
        chromium.wait(timeout=30)
    (tmp_path / "actors.png").write_bytes(png)
    (tmp_path / "actors.txt").write_text(text)
    if os.environ.get("DING_RAY_SCREENSHOT"):
        shutil.copy(tmp_path / "actors.png", os.environ["DING_RAY_SCREENSHOT"])
    assert "Authentication Token Required" not in text
    for actor in ("learner", "buffer", "evaluator", "collector-0"):
        assert f"\t{actor}\t" in text, text[-3000:]  # a cell of the table's Name column
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
