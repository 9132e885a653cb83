"""``ray_pipeline`` end to end on the session's Ray, both pipelines, and the errors users can cause."""

from __future__ import annotations

import json
import os
import re
import time

import pytest
import ray
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from ding_ray.distributed import (
    ClusterError,
    RayRun,
    check_resources,
    create_actors,
    make_plan,
    start_run,
)
from ding_ray.distributed.cluster import check_reachable
from ding_ray.entry import compile_ray_config, ray_pipeline
from ding_ray.errors import ConfigError, StageError
from ding_ray.framework import current_task, pipelines
from tests.distributed.configs import small_config
from tests.distributed.conftest import run_python

pytestmark = pytest.mark.ray


def read_result(exp_name: str) -> dict:
    with open(os.path.join(exp_name, "result.json")) as f:
        return json.load(f)


def assert_actors_gone(namespace: str) -> None:
    deadline = time.monotonic() + 10
    for name in ("learner", "buffer", "evaluator", "collector-0", "collector-1"):
        while True:
            try:
                ray.get_actor(name, namespace=namespace)
            except ValueError:
                break
            assert time.monotonic() < deadline, f"{name} is still alive after the run"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def async_run(ray_session, tmp_path_factory) -> tuple[str, object]:
    """An async run of 1,500 env steps: (exp_name, the policy it returned). A later test runs into
    its folder again."""
    exp_name = str(tmp_path_factory.mktemp("pipeline") / "async_run")
    return exp_name, ray_pipeline(small_config(exp_name), seed=1, max_env_step=1500)


def test_async_pipeline_writes_the_result_and_returns_the_policy(async_run):
    exp_name, policy = async_run
    result = read_result(exp_name)
    assert result["pipeline"] == "ray-async" and result["env_steps"] >= 1500 and result["train_iter"] > 0
    for key in (
        "best_eval_return",
        "last_eval_return",
        "stop",
        "wall_s",
        "env_steps_per_s",
        "train_iter_per_s",
    ):
        assert key in result
    assert result["lost_batches"] == 0 and result["first_batch_s"] > 0 and result["seed"] == 1
    assert os.path.isfile(os.path.join(exp_name, "total_config.json"))
    assert os.path.isdir(os.path.join(exp_name, "log", "ray"))
    assert policy.eval_mode.forward({0: [0.0, 0.0, 0.0, 0.0]})[0]["action"] in (0, 1)
    assert_actors_gone("async_run")


def test_sync_pipeline_trains_on_fresh_data_each_round(ray_session, tmp_path):
    exp_name = str(tmp_path / "sync_run")
    ray_pipeline(small_config(exp_name, pipeline="sync", n_sample=64), seed=0, max_train_iter=24)
    result = read_result(exp_name)
    assert result["pipeline"] == "ray-sync"
    # the budget ends the run once reached (as DI-engine's serial entries stop): 24 rounds of one
    # learner call (one DQN step: serial_pipeline_onpolicy's one call per collect), the weights
    # published after each
    assert result["train_iter"] == 24 and result["policy_version"] == 24
    assert result["env_steps"] >= 24 * 64  # >= 64 transitions per round
    # TensorBoard: learner values over iterations (as the serial learner and DI-engine log them),
    # collector values over env steps
    acc = EventAccumulator(os.path.join(exp_name, "log", "ray"), size_guidance={"scalars": 0})
    acc.Reload()
    loss_steps = [e.step for e in acc.Scalars("learner/total_loss")]
    assert loss_steps and loss_steps[-1] == result["train_iter"]
    assert acc.Scalars("collector/env_steps")[-1].step == result["env_steps"]
    assert_actors_gone("sync_run")


def test_unknown_ray_key_names_the_nearest(tmp_path):
    with pytest.raises(ConfigError, match="ray.num_colectors.*ray.num_collectors"):
        compile_ray_config(small_config(str(tmp_path / "x"), num_colectors=3), save_cfg=False)


def test_a_learner_call_larger_than_the_buffer_fails_with_what_to_change(tmp_path):
    main, create = small_config(str(tmp_path / "small_buffer"))
    main["policy"]["other"] = {"replay_buffer": {"replay_buffer_size": 100}}
    cfg = compile_ray_config((main, create), save_cfg=False)
    with pytest.raises(
        ConfigError, match=r"= 128 items, but the replay buffer holds 100.*Lower ray.train_iters_per_call"
    ):
        make_plan(cfg)


def test_start_run_compiles_while_joining_and_keeps_a_running_ray(ray_session, tmp_path):
    cfg, plan, started = start_run(small_config(str(tmp_path / "run_a")), seed=3, save_cfg=False)
    assert not started  # the session's Ray was used as it is
    assert plan.namespace == "run_a" and cfg.seed == 3 and cfg.ray.num_collectors == 1
    with pytest.raises(ConfigError, match="ray.num_colectors"):
        start_run(small_config(str(tmp_path / "run_b"), num_colectors=3), save_cfg=False)
    assert ray.is_initialized()  # a config error does not shut down a Ray this call did not start


def test_too_many_cpus_or_gpus_or_a_resource_no_node_has_fail_before_any_actor_starts(ray_session, tmp_path):
    start = time.monotonic()
    with pytest.raises(
        ClusterError, match=r"the learner needs 64 CPU on one node, but no single node has that"
    ):
        ray_pipeline(small_config(str(tmp_path / "cpu"), learner_num_cpus=64.0), max_env_step=100)
    with pytest.raises(ClusterError, match=r"the learner asks for GPU, which no node of the cluster has"):
        ray_pipeline(small_config(str(tmp_path / "gpu"), learner_num_gpus=1), max_env_step=100)
    with pytest.raises(ClusterError, match=r"the buffer asks for buffer_node, which no node"):
        ray_pipeline(
            small_config(str(tmp_path / "res"), buffer_resources={"buffer_node": 1}), max_env_step=100
        )
    assert time.monotonic() - start < 10


def test_resource_check_per_node():
    nodes = [{"CPU": 2.0}, {"CPU": 2.0}]
    check_resources([("collector-0", {"CPU": 2.0}), ("collector-1", {"CPU": 2.0})], nodes)
    with pytest.raises(ClusterError, match="the learner needs 3 CPU on one node, but no single node"):
        check_resources([("learner", {"CPU": 3.0})], nodes)


def test_unreachable_address_fails_fast():
    start = time.monotonic()
    with pytest.raises(ClusterError, match="Cannot reach the Ray cluster at '127.0.0.1:1'"):
        check_reachable("127.0.0.1:1")
    with pytest.raises(ClusterError, match="ray://127.0.0.1:1"):
        check_reachable("ray://127.0.0.1:1")
    assert time.monotonic() - start < 8


def test_unreachable_address_in_a_fresh_process(tmp_path):
    """The whole entry point, in a process where Ray is not initialised yet."""
    code = (
        "from ding_ray.entry import ray_pipeline\n"
        "from tests.distributed.configs import small_config\n"
        f"ray_pipeline(small_config({str(tmp_path / 'x')!r}, address='127.0.0.1:1'))\n"
    )
    start = time.monotonic()
    proc = run_python(code, timeout=120)
    assert proc.returncode != 0 and time.monotonic() - start < 60
    assert "ClusterError: Cannot reach the Ray cluster at '127.0.0.1:1'" in proc.stderr


@pytest.mark.parametrize("value", [10 * 2**20, 2**60, "2GB"])
def test_an_object_store_size_ray_would_refuse_is_a_config_error_before_ray_starts(tmp_path, value):
    running = ray.is_initialized()
    with pytest.raises(ConfigError) as err:
        start_run(small_config(str(tmp_path / "x"), object_store_memory=value), save_cfg=False)
    assert str(err.value).startswith(
        "Config key 'ray.object_store_memory' must be in [75 MiB, "  # Ray's minimum, then this machine's
    )
    assert "It is in bytes (2 * 2**30: 2 GiB); None leaves the size to Ray." in str(err.value)
    assert ray.is_initialized() == running  # no Ray was started, none was stopped


def test_an_object_store_size_with_a_cluster_address_is_a_config_error(tmp_path):
    main = small_config(str(tmp_path / "x"), address="127.0.0.1:1", object_store_memory=2**30)
    with pytest.raises(ConfigError, match=r"^Config key 'ray.object_store_memory' \(1073741824\) sizes the "):
        start_run(main, save_cfg=False)  # refused before the address is tried


def test_the_object_store_size_reaches_the_ray_started_here():
    """ding_ray's minimum is Ray's: ``ray.init`` refuses a byte less, and the Ray started here with
    exactly that much has an object store of that size."""
    code = (
        "import ray\n"
        "from ding_ray.distributed import RayConfig\n"
        "from ding_ray.distributed.cluster import OBJECT_STORE_MINIMUM_BYTES as low, init_ray\n"
        "try:\n"
        "    ray.init(num_cpus=1, include_dashboard=False, object_store_memory=low - 1)\n"
        "except ValueError as err:\n"
        "    print('refused', err)\n"
        "cfg = RayConfig.default_config()\n"
        "cfg.update(num_cpus=1, object_store_memory=low)\n"
        "assert init_ray(cfg, 'object-store-test')\n"
        "print('size:', int(ray.cluster_resources()['object_store_memory']), low)\n"
        "ray.shutdown()\n"
    )
    proc = run_python(code, timeout=180, env={"RAY_ADDRESS": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused Attempting to cap object store memory usage at 78643199 bytes" in proc.stdout
    store, low = proc.stdout.split("size: ")[1].split()
    assert store == low == str(75 * 2**20), proc.stderr[-2000:]


def test_warm_up_fills_the_buffer_before_the_collectors_are_up(ray_session, tmp_path):
    main, create = small_config(str(tmp_path / "warm"))
    main["policy"]["random_collect_size"] = 256
    cfg = compile_ray_config((main, create), save_cfg=False)
    plan = make_plan(cfg)
    # returns once the buffer answers; the collectors import torch for seconds, while 256 random
    # steps take the driver milliseconds
    with RayRun(cfg, plan, max_env_step=10_000) as rc, rc.task() as task:
        pipelines.off_policy(task, cfg, rc)
        task.use(lambda ctx: setattr(current_task(), "finish", not rc.collector.warming_up))
        task.run()
        # The collectors' first calls (queued while they start) are random too and take their share.
        mine = 256 - len(rc.collector.pool.slots) * plan.n_sample  # collector-0 only: the rest start later
        pushed = ray.get(rc.actors.buffer.stats.remote())["buffer/pushed"]
        # the driver's pushes go before this call on the buffer; a collector's random call pushes on
        # its own, and may or may not have landed by now (one once had: a warm worker starts fast)
        assert mine <= pushed <= 256 and (pushed - mine) % plan.n_sample == 0
        assert task.ctx.env_step >= mine  # (n-step targets hold a few steps back)
        assert rc.collector.first_batch_s is not None and rc.collector.random_left == 0


def test_collectors_that_never_start_fail_the_run_with_a_clear_error(ray_session, tmp_path):
    main, create = small_config(
        str(tmp_path / "stuck"),
        collector_resources={"no_such_node": 1},
        actor_start_timeout_s=12.0,  # the buffer, started first, must make it on a loaded machine
        check_resources=False,  # as with an autoscaler that never delivers the node
    )
    cfg = compile_ray_config((main, create), save_cfg=False)
    with pytest.raises(StageError, match="No collector actor started within 12 s") as err:
        # the buffer starts; collector-0 cannot be placed
        with RayRun(cfg, make_plan(cfg), max_env_step=1000) as rc, rc.task() as task:
            pipelines.off_policy(task, cfg, rc, max_env_step=1000)
            task.run()
    assert isinstance(err.value.__cause__, ClusterError)
    # Ray has placed it nowhere: the message says so, with what it needs (not a hanging constructor)
    needs = "ray.collector_num_cpus=0.5, ray.collector_resources={'no_such_node': 1}"
    # (collector-1 too, if the learner published its first weights by then)
    assert re.search(
        r"Waiting for a node with room: collector-0(, collector-1)?, which needs ", str(err.value)
    )
    assert needs in str(err.value)
    assert "constructor" not in str(err.value)
    # the failed run still has its record, with the error, and its actors are gone
    assert "No collector actor started" in read_result(cfg.exp_name)["error"]
    assert_actors_gone(make_plan(cfg).namespace)


def test_dizoo_config_file_on_ray_ignores_load_path_and_replay_path(ray_session, tmp_path):
    """dizoo's cartpole config names a checkpoint that does not exist yet and a video folder (no
    moviepy here): as in DI-engine, training reads neither; the deque buffer serves the actors."""
    os.chdir(tmp_path)
    config = os.path.join(os.path.dirname(__file__), "..", "compat", "configs", "cartpole_dqn_config.py")
    ray_pipeline(config, seed=0, max_env_step=20_000)
    result = read_result("cartpole_dqn_seed0")
    assert result["stop"] is True and result["best_eval_return"] >= 195
    assert not os.path.exists("cartpole_dqn_seed0/video")


def test_a_second_run_into_the_same_folder_gets_a_fresh_one(async_run):
    exp_name = async_run[0]
    first = read_result(exp_name)
    ray_pipeline(small_config(exp_name), seed=0, max_env_step=300)
    assert read_result(exp_name) == first  # the first run's record is untouched
    parent = os.path.dirname(exp_name)
    renewed = [d for d in os.listdir(parent) if d.startswith("async_run_")]
    assert len(renewed) == 1 and read_result(os.path.join(parent, renewed[0]))["env_steps"] >= 300


def test_two_runs_in_one_namespace_fail_with_what_to_do(ray_session, tmp_path):
    cfg = compile_ray_config(small_config(str(tmp_path / "ns"), namespace="shared_ns"), save_cfg=False)
    actors = create_actors(cfg, "shared_ns")
    try:
        with pytest.raises(
            ClusterError, match="Another run holds the actor names in Ray namespace 'shared_ns'"
        ):
            create_actors(cfg, "shared_ns")
    finally:
        actors.kill()
