"""wandb_online_logger / wandb_offline_logger, run by wandb in offline mode (no network).

What a run logged is read back from the run's own record file (``run-<id>.wandb``, a LevelDB-style
log of protobuf records that ``wandb sync`` would upload), so the tests check the values and steps
wandb itself stored.
"""

import glob
import json
import os
import struct
import sys
import time
from functools import partial

import numpy as np
import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, StageError
from ding_ray.framework import OfflineRLContext, OnlineRLContext, Task
from ding_ray.framework.middleware import wandb_offline_logger, wandb_online_logger
from ding_ray.model import DQN
from ding_ray.policy import DQNPolicy
from ding_ray.worker import InteractionSerialEvaluator, SampleSerialCollector, metrics

try:
    import wandb
except ImportError:  # the missing-wandb test still runs
    wandb = None

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    yield tmp_path
    if wandb.run is not None:  # a failed test must not leave its run to the next one
        wandb.run.finish()
    wandb.teardown()  # wandb reads its environment once per process setup: the next test sets its own


def history(wandb_dir, settle_s=5.0):
    """The rows the single run under ``wandb_dir`` logged: [{key: value}], values decoded from JSON.

    wandb's service process writes the file; on a loaded machine its last records can land a moment
    after ``finish`` returned, so the file is read until two reads agree (at most ``settle_s``)."""
    deadline, rows = time.monotonic() + settle_s, None
    while True:
        again = _read_history(wandb_dir)
        if again == rows or time.monotonic() > deadline:
            return again
        rows = again
        time.sleep(0.3)


def _read_history(wandb_dir):
    (path,) = glob.glob(os.path.join(str(wandb_dir), "wandb", "offline-run-*", "run-*.wandb"))
    from wandb.proto.wandb_internal_pb2 import Record

    with open(path, "rb") as f:
        data = f.read()
    block, pos, pending, rows = 32 * 1024, 7, b"", []  # 7 bytes of file header, then 32 KiB blocks
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header is padding
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = Record()
            record.ParseFromString(pending)
            pending = b""
            if record.WhichOneof("record_type") == "history":
                rows.append(_row(record.history.item))
    return rows


def _row(items):
    """{key: value} of a history record; media (histograms, videos) as {field: value} dicts."""
    row = {}
    for item in items:
        path = list(item.nested_key) or [item.key]
        node = row
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = json.loads(item.value_json)
    return row


def values(rows, key):
    """[(step, value)] of ``key`` in the run's rows."""
    return [(row["_step"], row[key]) for row in rows if key in row]


def env_manager(n=2, seed=0):
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=n, evaluator_env_num=n)
    )
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(seed)
    return manager


def test_online_logger_metrics_returns_actions_videos_and_gradients(offline_wandb, tmp_path):
    model = DQN(**MODEL)
    policy = DQNPolicy(dict(model=MODEL), model=model)
    collector = SampleSerialCollector(dict(n_sample=8), env_manager(), policy.collect_mode)
    evaluator = InteractionSerialEvaluator(dict(eval_freq=1, n_episode=3), env_manager(), policy.eval_mode)
    videos = tmp_path / "videos"
    videos.mkdir()
    seen = []

    def _collect_and_train(ctx):
        data = collector.collect(train_iter=ctx.train_iter, policy_kwargs={"eps": 0.5})
        ctx.env_step = collector.envstep
        ctx.inference_output = policy.collect_mode.forward({0: data[0]["obs"], 1: data[1]["obs"]}, eps=0.0)
        # 25 learner steps an iteration: wandb.watch(log_freq=100) records gradients in the 4th
        ctx.train_output = [policy.learn_mode.forward(data) for _ in range(25)]
        ctx.train_iter += 25
        ctx.info_for_logging["custom/answer"] = 42
        seen.append((ctx.env_step, ctx.train_output))

    def _evaluate(ctx):
        if ctx.total_step in (1, 3):
            (videos / f"eval-{ctx.total_step}.mp4").write_bytes(b"not really a video")
            _, info = evaluator.eval(train_iter=ctx.train_iter, envstep=ctx.env_step)
            ctx.eval_value = info["eval_episode_return_mean"]
            ctx.eval_output = {"episode_return": ctx.eval_value, "episode_info": info}
            ctx.eval_output["output"] = list(policy.eval_mode.forward({0: np.array([5.0, 1.0])}).values())

    cfg = dict(
        plot_logger=True, return_logger=True, action_logger=True, video_logger=True, gradient_logger=True
    )
    logger = wandb_online_logger(
        record_path=str(videos),
        cfg=cfg,
        exp_config={"seed": 7},
        metric_list=["total_loss", "q_value"],
        model=model,
        project_name="ding-ray-test",
        run_name="online",
    )
    assert wandb.run.name == "online" and wandb.run.config["seed"] == 7
    ctx = OnlineRLContext()
    with Task(ctx) as task:
        task.use(_collect_and_train)
        task.use(_evaluate)
        task.use(logger)
        task.run(max_step=4)
    assert wandb.run is None  # the task finished the run when it closed

    rows = history(offline_wandb)
    env_steps = [s for s, _ in seen]
    assert [row["_step"] for row in rows] == env_steps
    loss = values(rows, metrics.learner_key("total_loss"))
    assert [s for s, _ in loss] == env_steps
    for (_, logged), (_, outputs) in zip(loss, seen):  # the 25 learner steps averaged
        assert logged == pytest.approx(np.mean([o["total_loss"] for o in outputs]), rel=1e-6)
    assert metrics.learner_key("cur_lr") not in rows[0]  # not in metric_list
    assert values(rows, "custom/answer") == [(s, 42) for s in env_steps]
    # evaluations in iterations 1 and 3: Countdown's return is 5 whatever the actions
    assert values(rows, metrics.EVAL_RETURN_MEAN) == [(env_steps[1], 5.0), (env_steps[3], 5.0)]
    assert values(rows, metrics.EVAL_RETURN_STD) == [(env_steps[1], 0.0), (env_steps[3], 0.0)]
    assert values(rows, metrics.COLLECTOR_ENV_STEPS) == [
        (env_steps[1], env_steps[1]),
        (env_steps[3], env_steps[3]),
    ]
    assert values(rows, metrics.LEARNER_TRAIN_ITER) == [(env_steps[1], 50), (env_steps[3], 100)]
    returns = rows[1]["evaluator/episode_return"]
    assert returns["_type"] == "histogram" and sum(returns["values"]) == 3  # three episodes
    # actions: the evaluation's output (one obs) and the collector's inference output (two envs)
    prob = rows[1]["evaluator/action_prob"]
    assert prob["bins"] == [0, 1, 2] and sum(prob["values"]) == pytest.approx(1.0)
    assert sum(rows[1]["evaluator/logit"]["values"]) == 2  # two q-values
    assert all(sum(row["collector/action"]["values"]) == 2 for row in rows)
    # each evaluation uploads the video files that appeared since the last one
    assert [r.get("evaluator/replay_video", {}).get("count") for r in rows] == [None, 1, None, 1]
    assert any(key.startswith("gradients/") for row in rows for key in row)
    assert ctx.wandb_url == "" or "ding-ray-test" in ctx.wandb_url


def test_offline_logger_logs_against_trained_env_step(offline_wandb):
    policy = DQNPolicy(dict(model=MODEL))
    dataset = SampleSerialCollector(dict(n_sample=16), env_manager(), policy.collect_mode).collect()
    outputs = []

    def _train(ctx):
        ctx.train_output = policy.learn_mode.forward(dataset)
        outputs.append(ctx.train_output)
        ctx.trained_env_step += len(dataset)
        ctx.train_iter += 1
        ctx.train_epoch = ctx.train_iter // 2
        if ctx.train_iter == 3:
            ctx.eval_value = 2.5
            ctx.eval_output = {"episode_return": [2.0, 3.0]}

    with Task(OfflineRLContext()) as task:
        task.use(_train)
        task.use(wandb_offline_logger(exp_config={"lr": 0.1}))  # no cfg: the metrics only
        task.run(max_step=3)

    rows = history(offline_wandb)
    assert [row["_step"] for row in rows] == [16, 32, 48]
    q = values(rows, metrics.learner_key("q_value"))  # DI-engine's default metric_list
    assert q == [(16 * (i + 1), pytest.approx(outputs[i]["q_value"], rel=1e-6)) for i in range(3)]
    assert values(rows, metrics.EVAL_RETURN_MEAN) == [(48, 2.5)]
    assert values(rows, metrics.EVAL_RETURN_MAX) == [(48, 3.0)]
    assert values(rows, metrics.learner_key("train_epoch")) == [(48, 1)]
    assert "evaluator/episode_return" not in rows[2]  # return_logger is off


def test_return_logger_needs_the_episode_returns(offline_wandb):
    def _eval(ctx):
        ctx.eval_value = 1.0

    with pytest.raises(StageError, match="wandb_online_logger") as info:
        with Task(OnlineRLContext()) as task:
            task.use(_eval)
            task.use(wandb_online_logger(cfg=dict(return_logger=True)))
            task.run(max_step=1)
    assert "eval_episode_return" in str(info.value)


def test_missing_wandb_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # what `import wandb` meets when it is not installed
    with pytest.raises(ConfigError, match=r'pip install "ding_ray\[wandb\]"'):
        wandb_online_logger()
    with pytest.raises(ConfigError, match=r'pip install "ding_ray\[wandb\]"'):
        wandb_offline_logger()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(cfg=dict(video_logger=True)), "record_path"),
        (dict(cfg=dict(gradient_loger=True)), "did you mean 'gradient_logger'"),
        (dict(cfg=dict(gradient_logger=True)), "model"),
        (dict(cfg=dict(vis_dataset=True)), "vis_dataset=False"),
    ],
)
def test_bad_arguments_are_refused_before_a_run_starts(offline_wandb, kwargs, words):
    with pytest.raises(ConfigError) as info:
        wandb_offline_logger(**kwargs)
    assert words in str(info.value)
    assert wandb.run is None
