"""A Ray that ding_ray starts on a small machine fits the actors' CPU shares to its cores
(``ding-ray train apex_dqn --num-collectors 4`` on 2 cores); a cluster the user started is checked
as it is, and one too small still fails with the numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import ray

from ding_ray.configs.apex_dqn import create_config as apex_create
from ding_ray.configs.apex_dqn import main_config as apex_main
from ding_ray.distributed import ClusterError, RayConfig, RayRun, start_run
from ding_ray.distributed.config import fit_cpu_shares
from ding_ray.distributed.local_cpus import fit_local_cpus
from tests.distributed.configs import small_config
from tests.distributed.conftest import REPO, free_port, stop_ray_head, with_ctrl_c
from tests.short_tmp import short_tmp


def ray_cfg(**over) -> dict:
    cfg = RayConfig.default_config()
    cfg.update(over)
    return cfg


def test_the_collectors_share_shrinks_first():
    # 4 collectors of 0.5 + learner 0.5 + buffer 0.25 + evaluator 0.25 = 3 CPUs wanted
    assert fit_cpu_shares(ray_cfg(num_collectors=4), 2) == {"collector_num_cpus": 0.25}
    assert fit_cpu_shares(ray_cfg(num_collectors=3), 2) == {"collector_num_cpus": 0.3333}  # Ray's 0.0001
    assert fit_cpu_shares(ray_cfg(num_collectors=2), 2) == {}  # the defaults fit 2 cores
    assert fit_cpu_shares(ray_cfg(num_collectors=14), 8) == {}  # 7 + 1 CPUs


def test_every_default_share_scales_when_the_others_leave_the_collectors_nothing():
    # one core: learner, buffer and evaluator take it all; each share is halved
    fitted = fit_cpu_shares(ray_cfg(num_collectors=2), 1)
    assert fitted == {
        "learner_num_cpus": 0.25,
        "buffer_num_cpus": 0.125,
        "evaluator_num_cpus": 0.125,
        "collector_num_cpus": 0.25,
    }


def test_a_share_the_user_set_is_kept():
    cfg = ray_cfg(num_collectors=4, collector_num_cpus=0.4)  # 1.6 CPUs of collectors, 2.6 in all
    fitted = fit_cpu_shares(cfg, 2, explicit={"collector_num_cpus"})
    assert fitted == {"learner_num_cpus": 0.2, "buffer_num_cpus": 0.1, "evaluator_num_cpus": 0.1}
    # nothing left to shrink: no change, and the resource check reports it
    assert fit_cpu_shares(ray_cfg(num_collectors=4), 2, explicit={"collector_num_cpus"}) == {}
    assert fit_cpu_shares(ray_cfg(num_collectors=5, collector_num_cpus=0.4), 2, {"collector_num_cpus"}) == {}


def test_shares_the_user_set_that_cannot_fit_fail_before_ray_starts():
    """``fit_local_cpus`` (what a run that starts Ray here calls before starting it) refuses shares
    the user chose that 2 CPUs cannot hold, with the resource check's numbers; ones that fit pass."""
    main_cfg, _ = small_config("too_big", num_cpus=2)
    cfg = ray_cfg(num_cpus=2, num_collectors=4, collector_num_cpus=0.5)
    too_many = r"2 of the 4 collectors \(0.5 CPU each.*lower ray.num_collectors to 2"
    with pytest.raises(ClusterError, match=too_many):
        fit_local_cpus(main_cfg, cfg, chosen={"num_collectors", "collector_num_cpus"})
    assert not ray.is_initialized()
    fitted = fit_local_cpus(main_cfg, ray_cfg(num_cpus=2, num_collectors=4), chosen={"num_collectors"})
    assert fitted.ray.collector_num_cpus == 0.25


def test_num_collectors_is_a_flag_of_ray_runs(tmp_path, capsys, monkeypatch):
    from ding_ray.entry.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["train", "cartpole_dqn", "--mode", "serial", "--num-collectors", "4"]) == 1
    assert "--num-collectors sets the collector actors: use it with --mode ray" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def collectors_config(exp_name: str, num_collectors: int, **ray_over) -> tuple[dict, dict]:
    main, create = small_config(exp_name, **ray_over)
    main["ray"]["num_collectors"] = num_collectors
    return main, create


@pytest.mark.ray
def test_a_ray_running_in_this_process_is_checked_as_it_is(ray_session, tmp_path):
    """The session's Ray (4 CPUs) stands for any Ray ding_ray did not start: 8 collectors do not fit."""
    cfg, plan, started = start_run(collectors_config(str(tmp_path / "big"), 8), save_cfg=False)
    assert not started and cfg.ray.collector_num_cpus == 0.5  # not fitted
    with pytest.raises(
        ClusterError, match=r"hold the learner, buffer and evaluator and 6 of the 8 collectors \(0.5 CPU each"
    ):
        RayRun(cfg, plan, max_env_step=100)


def run_fresh(args: list[str], cwd: str, timeout: float = 420) -> subprocess.CompletedProcess:
    """``args`` in a fresh interpreter with no Ray to join: its own Ray temp folder, no RAY_ADDRESS."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(PYTHONPATH=REPO, RAY_TMPDIR=short_tmp("drfit"))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.ray
@pytest.mark.slow
def test_a_cluster_too_small_still_fails_with_the_numbers(tmp_path):
    """A ``ray start --head --num-cpus=2`` cluster, joined through ``ray.address`` and through
    RAY_ADDRESS (as ``ray job submit`` runs a driver): 4 collectors are not fitted to it."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    ray_tmp = short_tmp("drfith")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env.update(RAY_TMPDIR=ray_tmp, RAY_AUTH_MODE="disabled", PYTHONPATH=REPO)
    port = free_port()
    head = subprocess.Popen(
        with_ctrl_c([ray_bin, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                     "--include-dashboard=false"]),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    code = (
        "import os\n"
        "from ding_ray.distributed import ClusterError\n"
        "from ding_ray.entry import ray_pipeline\n"
        "from tests.distributed.test_fit_cpus import collectors_config\n"
        f"for how, address in (('config', {address!r}), ('env', None)):\n"
        "    if how == 'env':  # found as `ray job submit` drivers find theirs\n"
        f"        os.environ['RAY_ADDRESS'] = {address!r}\n"
        "    try:\n"
        "        ray_pipeline(collectors_config('c_' + how, 4, address=address), max_env_step=100)\n"
        "    except ClusterError as err:\n"
        "        print(how, '|', err)\n"
    )
    try:
        deadline = time.monotonic() + 90
        while not os.path.exists(os.path.join(ray_tmp, "ray", "ray_current_cluster")):
            assert head.poll() is None and time.monotonic() < deadline, "ray start --head did not come up"
            time.sleep(0.5)
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        stop_ray_head(head)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" | ", 1) for line in proc.stdout.splitlines() if " | " in line)
    for how in ("config", "env"):
        assert "hold the learner, buffer and evaluator and 2 of the 4 collectors (0.5 CPU each" in lines[how]
        assert "lower ray.num_collectors to 2" in lines[how]
    assert "fitted" not in proc.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_the_help_example_trains_on_two_cpus_and_its_resume_is_fitted_as_a_fresh_run(ray_session, tmp_path):
    """``ding-ray train apex_dqn --num-collectors 4`` (``ding-ray train --help``) on a 2-CPU Ray it
    starts: the collectors' share is fitted, all seven actors start and fill the 2 CPUs, and the run
    goes to its first learner call. ``--resume DIR --num-collectors 6`` then refits the shares the run
    recorded (its total_config.json, its checkpoint) as a fresh run of 6 would, not taking them for
    the user's."""

    def ding_ray(*args: str) -> subprocess.CompletedProcess:
        code = f"import sys\nfrom ding_ray.entry.cli import main\nsys.exit(main({list(args)!r}))\n"
        return run_fresh(["-c", code], cwd=str(tmp_path))

    first = ding_ray(
        "train", "apex_dqn", "--num-collectors", "4", "--max-train-iter", "16",
        "--set", "ray.num_cpus=2", "ray.progress_bar=False", "policy.random_collect_size=512",
        "ray.min_replay_size=1024",  # one learner call (16 iterations) after 1024 env steps
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    assert "ray.collector_num_cpus=0.25 (was 0.5)" in first.stderr
    run_dir = str(tmp_path / "apex_dqn_seed0")
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    assert result.get("error") is None and result["train_iter"] >= 16
    assert result["num_collectors"] == result["collectors_running"] == 4  # every collector started
    with open(os.path.join(run_dir, "total_config.json")) as f:
        saved = json.load(f)["ray"]
    assert saved["collector_num_cpus"] == 0.25 and saved["num_cpus"] == 2
    shares = [saved[f"{name}_num_cpus"] for name in ("learner", "buffer", "evaluator")]
    assert sum(shares) + 4 * saved["collector_num_cpus"] == 2.0  # the seven actors fill the 2 CPUs

    resumed = ding_ray("train", "--resume", run_dir, "--num-collectors", "6", "--max-train-iter", "32")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "ray.collector_num_cpus=0.1666 (was 0.25)" in resumed.stderr  # as a fresh run of 6 collectors
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    assert "error" not in result and result["resumed_from"]
    with open(os.path.join(run_dir, "total_config.json")) as f:
        saved = json.load(f)["ray"]
    assert saved["num_collectors"] == 6 and saved["collector_num_cpus"] == 0.1666
    # a share set on this command line is the user's: kept, and the resource check says, before Ray
    # starts, that it does not fit
    more = ["train", "--resume", run_dir, "--num-collectors", "8", "--max-train-iter", "48"]
    explicit = ding_ray(*more, "--set", "ray.collector_num_cpus=0.5")
    assert explicit.returncode == 1, explicit.stderr[-3000:]
    last = explicit.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ding-ray: error: The cluster cannot hold this pipeline's actors: the nodes hold the learner, "
        "buffer and evaluator and 2 of the 8 collectors (0.5 CPU each"
    ), last
    # a Ray not started here (the session's stands for a cluster) takes the run's shares as recorded
    cfg, _, started = start_run((apex_main, apex_create), resume=run_dir, save_cfg=False)
    assert not started and cfg.ray.collector_num_cpus == 0.1666
