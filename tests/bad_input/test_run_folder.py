"""A run's folder under misuse: a resume that cannot work is refused before anything is written
(a model that does not fit, a folder with no checkpoint) and goes on with the checkpoint's own config
when ``total_config.json`` is damaged; runs started at once with one ``exp_name`` get folders of their
own; a folder in use refuses a second run, and a dead holder's lock is taken over; a disk that fills
up at the last checkpoint still gets ``result.json``, no temp file, and an error naming the folder
and the free space; checkpoint files and their folder are fsynced before ``meta.json``."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys

import pytest

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.config import compile_config
from ding_ray.entry import serial_pipeline
from ding_ray.entry.cli import main as cli
from ding_ray.errors import ConfigError
from ding_ray.utils.checkpoint import CheckpointStore
from ding_ray.utils.run_dir import LOCK_FILE, RunLock
from tests.bad_input.configs import CREATE, small_main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A short serial run with a checkpoint at its end (iteration 20)."""
    exp = str(tmp_path_factory.mktemp("runs") / "r1c")
    serial_pipeline((small_main(exp, checkpoint=dict(freq=0)), CREATE), seed=0, max_train_iter=20)
    return exp


@pytest.fixture
def run(finished_run, tmp_path):
    exp = str(tmp_path / "r1c")
    shutil.copytree(finished_run, exp)
    return exp


def _snapshot(folder: str) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(folder):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), folder)] = f.read()
    return out


def _result(exp: str) -> dict:
    with open(os.path.join(exp, "result.json")) as f:
        return json.load(f)


# ----- item 4: a failed resume damages nothing ----------------------------------------------------------
def test_a_resume_whose_model_does_not_fit_is_refused_before_anything_is_written(run, capsys):
    before = _snapshot(run)
    over = "policy.model.encoder_hidden_size_list=[32,32,16]"
    assert cli(["train", "--resume", run, "--set", over, "--max-train-iter", "30"]) == 1
    err = capsys.readouterr().err
    assert "do not fit the model this config builds" in err, err
    assert "model.encoder.mlp.layers.0.weight is [16, 4] in the checkpoint and [32, 4] here" in err
    assert "policy.model.encoder_hidden_size_list: [16] in the run, [32, 32, 16] here" in err
    assert "Nothing was written" in err
    assert _snapshot(run) == before  # total_config.json included
    assert cli(["train", "--resume", run, "--max-train-iter", "30"]) == 0  # the plain resume still works
    assert _result(run)["resumed_from"].endswith("iter_00000020") and _result(run)["train_iter"] == 30


def test_a_resume_of_a_folder_without_checkpoints_creates_nothing(tmp_path):
    nowhere = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="there is no complete checkpoint under"):
        serial_pipeline((small_main(nowhere), CREATE), max_train_iter=5, resume=nowhere)
    assert not os.path.exists(nowhere)


@pytest.mark.parametrize("damage", ["{not json", "other config"])
def test_a_damaged_or_changed_total_config_resumes_with_the_checkpoints_config(run, damage, caplog):
    path = os.path.join(run, "total_config.json")
    if damage == "other config":  # what an older ding_ray left behind after a failed resume
        with open(path) as f:
            cfg = json.load(f)
        cfg["policy"]["model"]["encoder_hidden_size_list"] = [32, 32, 16]
        damage = json.dumps(cfg)
    with open(path, "w") as f:
        f.write(damage)
    with caplog.at_level(logging.WARNING, logger="ding_ray.utils.resume"):
        assert cli(["train", "--resume", run, "--max-train-iter", "30"]) == 0
    assert "resuming with the" in caplog.text and "checkpoints/iter_00000020" in caplog.text
    assert _result(run)["train_iter"] == 30 and "error" not in _result(run)
    with open(path) as f:  # written again from the config the run went on with
        assert json.load(f)["policy"]["model"]["encoder_hidden_size_list"] == [16]


# ----- item 5: runs started at once get folders of their own -------------------------------------------
def _compile_at_once(exp: str, seed: int, barrier, out) -> None:
    barrier.wait(timeout=30)
    cfg = compile_config(small_main(exp), seed=seed, auto=True, create_cfg=CREATE, save_cfg=True)
    out.put((seed, cfg.exp_name))


def test_runs_started_at_once_with_one_exp_name_get_folders_of_their_own(tmp_path):
    exp, n = str(tmp_path / "same"), 6
    ctx = multiprocessing.get_context("fork")
    for _ in range(2):  # the folder is new, then it exists (every run takes a timestamped name)
        barrier, out = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=_compile_at_once, args=(exp, seed, barrier, out)) for seed in range(n)]
        for p in procs:
            p.start()
        folders = dict(out.get(timeout=60) for _ in procs)
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
        assert len(set(folders.values())) == n, folders
        for seed, folder in folders.items():
            with open(os.path.join(folder, "total_config.json")) as f:
                assert json.load(f)["seed"] == seed


# ----- item 6: one run at a time in a folder -------------------------------------------------------------
def test_a_folder_in_use_refuses_a_second_resume_and_a_dead_holders_lock_is_taken_over(run, caplog):
    code = (
        "import sys, time; from ding_ray.utils.run_dir import RunLock; held = RunLock(sys.argv[1]); "
        "print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, run], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = _snapshot(run)
        with pytest.raises(ConfigError, match=rf"in use by another run \(pid {holder.pid} on host") as err:
            serial_pipeline((small_main(run), CREATE), max_train_iter=30, resume=run)
        assert socket.gethostname() in str(err.value) and "Wait for it to end" in str(err.value)
        assert _snapshot(run) == before
    finally:
        holder.kill()  # SIGKILL: its lock file stays behind, naming a dead pid
        holder.wait(timeout=30)
    with open(os.path.join(run, LOCK_FILE)) as f:
        assert json.load(f)["pid"] == holder.pid
    with caplog.at_level(logging.WARNING, logger="ding_ray.utils.run_dir"):
        serial_pipeline((small_main(run), CREATE), max_train_iter=30, resume=run)
    assert f"of pid {holder.pid}" in caplog.text and "holds it no more" in caplog.text
    assert _result(run)["train_iter"] == 30 and "error" not in _result(run)
    assert not os.path.exists(os.path.join(run, LOCK_FILE))  # released at the end


def test_the_ray_run_takes_the_same_checks_and_lock(run):
    """RayRun refuses before it starts an actor (no Ray needed for that)."""
    from ding_ray.distributed import RayRun, make_plan
    from ding_ray.entry import compile_ray_config

    main = small_main(run, ray=dict(check_resources=False))
    main.policy.model.encoder_hidden_size_list = [32]
    cfg = compile_ray_config((main, CREATE), save_cfg=False, renew_dir=False)
    before = _snapshot(run)
    with pytest.raises(
        ConfigError, match=r"do not fit the model this config builds: .*\[16, 4\] in the checkpoint"
    ):
        RayRun(cfg, make_plan(cfg), resume=run)
    cfg.policy.model.encoder_hidden_size_list = [16]
    lock = RunLock(run)
    try:
        with pytest.raises(ConfigError, match=rf"in use by another run \(pid {os.getpid()} "):
            RayRun(cfg, make_plan(cfg), resume=run)
    finally:
        lock.release()
    assert _snapshot(run) == before


# ----- item 8: a full disk at the last checkpoint ----------------------------------------------------------
def _own_tmpfs_works(folder: str) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = f"mount -t tmpfs -o size=64k tmpfs {folder}"
    return (
        subprocess.run(["unshare", "-Urm", "sh", "-c", probe], capture_output=True, timeout=30).returncode
        == 0
    )


def _in_full_disk(root: str, script: str, size: str, leave: int, timeout: float) -> dict:
    """Run ``tests/bad_input/<script> root leave`` on a tmpfs of ``size`` mounted at ``root`` in a
    user and mount namespace of its own; its report."""
    command = (
        f"mount -t tmpfs -o size={size} tmpfs {root} && "
        f"exec {sys.executable} tests/bad_input/{script} {root} {leave}"
    )
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("REPORT ") :])


def test_a_full_disk_at_the_last_checkpoint_still_writes_result_json_and_leaves_no_temp_file(tmp_path):
    """On a 1 MiB tmpfs of the test's own (a mount namespace: nothing outside sees it), the disk
    fills up just before the run's final checkpoint; a real ENOSPC, nothing mocked."""
    root = str(tmp_path / "disk")
    os.makedirs(root)
    if not _own_tmpfs_works(root):
        pytest.skip("cannot mount a tmpfs in a user and mount namespace here (unshare -Urm)")
    report = _in_full_disk(root, "full_disk_run.py", "1m", 12288, timeout=180)
    error = report["error"]
    assert error.startswith("ding_ray.errors.StorageError: Cannot write the checkpoint "), error
    assert f"{root}/run/checkpoints/iter_00000020: No space left on device" in error
    assert "bytes free on its disk" in error and "resume=" in error
    assert report["result"]["error"].startswith("StorageError: Cannot write the checkpoint")
    assert report["result"]["train_iter"] == 20
    assert not [f for f in report["files"] if f.endswith(".tmp")], report["files"]
    # what the failed checkpoint had written is gone: the space left goes to result.json
    assert not [f for f in report["files"] if "iter_00000020" in f], report["files"]
    # the earlier checkpoint is the one to resume from, byte for byte as it was
    assert report["latest"].endswith("iter_00000016") and report["unchanged"]


@pytest.mark.ray
def test_a_full_disk_at_the_last_checkpoint_of_a_ray_run_still_writes_result_json(tmp_path):
    """The same on Ray: the learner actor's write fails; the driver's error is that StorageError
    (not Ray's traceback), result.json records it, no temp file is left. Ray runs inside the
    namespace, so its actors see the tmpfs."""
    root = str(tmp_path / "disk")
    os.makedirs(root)
    if not _own_tmpfs_works(root):
        pytest.skip("cannot mount a tmpfs in a user and mount namespace here (unshare -Urm)")
    report = _in_full_disk(root, "full_disk_ray_run.py", "2m", 65536, timeout=240)
    assert report["error"].startswith("StorageError: Cannot write the checkpoint "), report["error"][:2000]
    assert f"{root}/run/checkpoints/iter_" in report["error"] and "bytes free on its disk" in report["error"]
    assert report["result"]["error"] == report["error"] and report["result"]["last_checkpoint"] is None
    assert not [f for f in report["files"] if f.endswith(".tmp")], report["files"]
    # the learner's file of the failed checkpoint is removed with it (else result.json may not fit)
    assert not [f for f in report["files"] if f.startswith("checkpoints/")], report["files"]


# ----- item 12 (part): fsync before meta.json --------------------------------------------------------
def test_checkpoint_files_and_their_folder_reach_the_disk_before_meta_json(tmp_path, monkeypatch):
    """Which paths are fsynced and renamed, in order (os.fsync and os.replace still run)."""
    events = []
    fsync, replace = os.fsync, os.replace

    def spy_fsync(fd):
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        fsync(fd)

    def spy_replace(src, dst):
        events.append(("replace", os.path.basename(dst)))
        replace(src, dst)

    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    store = CheckpointStore(str(tmp_path / "run"))
    folder = store.folder(10)
    files = {"learner.pth": store.write(folder, "learner.pth", b"x" * 1000)}
    store.commit(folder, files, dict(train_iter=10))
    name = os.path.basename(folder)
    learner_tmp = next(e for e in events if e[0] == "fsync" and e[1].startswith("learner.pth."))
    assert learner_tmp[1].endswith(".tmp")
    assert events.index(learner_tmp) < events.index(("replace", "learner.pth"))
    meta_at = events.index(("replace", "meta.json"))
    assert ("fsync", name) in events[events.index(("replace", "learner.pth")) : meta_at], events
    assert ("fsync", name) in events[meta_at:], events


def test_a_run_that_failed_before_any_checkpoint_does_not_divert_the_next_runs_folder(tmp_path, caplog):
    """The next run of the same name takes the folder: one that holds only the failed run's config
    is removed, one with the failed run's result.json and logs is moved aside, whole; a folder that
    holds anything else (a checkpoint, a file of the user's) is never touched: the run renews."""
    exp = str(tmp_path / "run")
    with pytest.raises(Exception, match="Unknown gymnasium env id"):  # fails while building its envs
        serial_pipeline((small_main(exp, env=dict(env_id="NoSuchEnv-v0")), CREATE), seed=0, max_train_iter=5)
    broken = small_main(exp, env=dict(env_id="BadInputBrokenStep-v0", kwargs=dict(mistake="raise")))
    with pytest.raises(Exception):  # noqa: B017 - fails in its first steps, whatever the error's type
        serial_pipeline((broken, CREATE), seed=0, max_train_iter=5)
    assert sorted(os.listdir(tmp_path)) == ["run"]  # the folder of the first was taken, not renewed
    with open(os.path.join(exp, "result.json")) as f:
        failed = json.load(f)
    assert failed["error"] and not os.path.isdir(os.path.join(exp, "checkpoints"))

    serial_pipeline((small_main(exp, checkpoint=dict(freq=0)), CREATE), seed=0, max_train_iter=10)
    (aside,) = [name for name in os.listdir(tmp_path) if name.startswith("run_failed_")]
    with open(os.path.join(tmp_path, aside, "result.json")) as f:
        assert json.load(f) == failed  # kept whole
    assert "moved to" in caplog.text and aside in caplog.text
    assert CheckpointStore(exp).latest() is not None  # this run's, under the name asked for

    (tmp_path / "run" / "notes.txt").write_text("mine")  # a finished run, and a file of the user's
    serial_pipeline((small_main(exp, checkpoint=dict(freq=0)), CREATE), seed=0, max_train_iter=10)
    renewed = [name for name in os.listdir(tmp_path) if name.startswith("run_") and "failed" not in name]
    assert len(renewed) == 1 and (tmp_path / "run" / "notes.txt").read_text() == "mine"
