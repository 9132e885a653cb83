"""Learner hooks in DI-engine's forms, run by a real BaseLearner training a real DQN policy."""

import json
import logging
import os

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from ding_ray.config import compile_config, merge_config
from ding_ray.config.merge import EXTRA_ENTRIES
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import BaseLearner, LearnerHook, add_learner_hook, build_learner_hook_by_cfg, merge_hooks
from ding_ray.worker.learner import (
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
    load_checkpoint,
    register_learner_hook,
)

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16])
# The defaults save a checkpoint when the run ends; most tests turn that off to leave the folder empty.
QUIET = dict(save_ckpt_after_run=False, save_ckpt_after_iter=False, log_show_after_iter=False)


def batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=4).astype(np.float32),
            next_obs=rng.normal(size=4).astype(np.float32),
            action=np.int64(rng.integers(2)),
            reward=np.float32(rng.normal()),
            done=bool(rng.random() < 0.2),
        )
        for _ in range(n)
    ]


def make_learner(exp_dir, hook=None, **cfg):
    policy = DQNPolicy(dict(model=MODEL), enable_field=["learn"])
    return BaseLearner(dict(hook=hook or {}, **cfg), policy.learn_mode, exp_name=str(exp_dir))


def ckpt_files(exp_dir):
    folder = os.path.join(str(exp_dir), "ckpt")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


class Recorder(LearnerHook):
    calls: list = []

    def __call__(self, engine):
        Recorder.calls.append((self.name, self.position, engine.train_iter))


# ----- hook classes: DI-engine's signature -------------------------------------------------------
def test_hooks_take_name_and_priority_positionally_and_run_in_priority_order(tmp_path):
    Recorder.calls = []
    learner = make_learner(tmp_path, QUIET)
    for name, priority, position in [
        ("late", 90, "after_iter"),
        ("early", 10, "after_iter"),
        ("mid", 50, "after_iter"),
        ("tie", 50, "after_iter"),  # equal priority: after the one added first
        ("pre", 50, "before_iter"),
        ("run", 0, "before_run"),
    ]:
        learner.register_hook(Recorder(name, priority, position=position))
    learner.call_hook("before_run")
    learner.train(batch(), envstep=7)
    assert Recorder.calls == [
        ("run", "before_run", 0),
        ("pre", "before_iter", 0),
        # as DI-engine's learner: after_iter hooks see the count before the step, 0 the first time
        ("early", "after_iter", 0),
        ("mid", "after_iter", 0),
        ("tie", "after_iter", 0),
        ("late", "after_iter", 0),
    ]
    hook = SaveCkptHook("s", 5, position="after_iter", ext_args={"freq": 2})
    assert (hook.name, hook.priority, hook.position) == ("s", 5, "after_iter")
    for cls, ext_args in [
        (LoadCkptHook, {"load_path": ""}),
        (SaveCkptHook, {}),
        (LogShowHook, {"freq": 3}),
        (LogReduceHook, {}),
    ]:
        hook = cls("h", 7, position="after_run", ext_args=ext_args)
        assert (hook.name, hook.priority, hook.position) == ("h", 7, "after_run")


def test_hook_constructor_errors_are_config_errors():
    with pytest.raises(ConfigError, match="position 'after_iteration' unknown.*'after_iter'"):
        Recorder("r", 1, position="after_iteration")
    with pytest.raises(ConfigError, match="priority must be a number >= 0"):
        Recorder("r", -1, position="after_iter")
    with pytest.raises(ConfigError, match="'r' .*takes no ext_args"):
        Recorder("r", 1, position="after_iter", ext_args={"freq": 3})
    with pytest.raises(ConfigError, match="does not read ext_args 'frq'.*'freq'"):
        SaveCkptHook("s", 1, position="after_iter", ext_args={"frq": 3})
    with pytest.raises(ConfigError, match="needs ext_args 'load_path'"):
        LoadCkptHook("l", 1, position="before_run", ext_args={})
    with pytest.raises(ConfigError, match="does not read ext_args 'freq'"):
        LogReduceHook("r", 1, position="after_iter", ext_args={"freq": 3})
    with pytest.raises(ConfigError, match="freq must be an integer >= 1"):
        LogShowHook("l", 1, position="after_iter", ext_args={"freq": 0})


# ----- short form -------------------------------------------------------------------------------
def test_short_form_builds_di_engine_names_and_priorities():
    hooks = build_learner_hook_by_cfg(
        dict(
            load_ckpt_before_run="some.pth.tar",
            log_show_after_iter=10,
            save_ckpt_after_iter=5,
            save_ckpt_after_run=True,
            log_reduce_after_iter=True,
        )
    )
    summary = {p: [(type(h).__name__, h.name, h.priority) for h in hs] for p, hs in hooks.items()}
    assert summary == {
        "before_run": [("LoadCkptHook", "load_ckpt", 20)],
        "after_run": [("SaveCkptHook", "save_ckpt_after_run", 20)],
        "before_iter": [],
        "after_iter": [
            ("LogReduceHook", "log_reduce_after_iter", 10),
            ("LogShowHook", "log_show", 20),
            ("SaveCkptHook", "save_ckpt_after_iter", 20),
        ],
    }
    off = build_learner_hook_by_cfg(dict(QUIET, load_ckpt_before_run=""))
    assert all(v == [] for v in off.values())


def test_short_form_saves_checkpoints_on_disk(tmp_path):
    learner = make_learner(tmp_path, dict(save_ckpt_after_iter=2, save_ckpt_after_run=True))
    learner.call_hook("before_run")
    for i in range(5):
        learner.train(batch(seed=i), envstep=10 * (i + 1))
    learner.call_hook("after_run")
    # DI-engine's after_iter hooks see 0, 1, 2, 3, 4: a checkpoint at 0, 2 and 4
    names = ["ckpt_final.pth.tar", "iteration_0.pth.tar", "iteration_2.pth.tar", "iteration_4.pth.tar"]
    assert ckpt_files(tmp_path) == names
    state = load_checkpoint(os.path.join(tmp_path, "ckpt", "iteration_4.pth.tar"))
    assert state["last_iter"] == 4 and state["last_step"] == 50  # DI-engine's keys
    final = load_checkpoint(os.path.join(tmp_path, "ckpt", "ckpt_final.pth.tar"))
    assert final["last_iter"] == 5 and final["last_step"] == 50


def test_short_form_log_show_every_freq_iterations(tmp_path, caplog):
    learner = make_learner(tmp_path, dict(QUIET, log_show_after_iter=2))
    with caplog.at_level(logging.INFO, logger="ding_ray"):
        for i in range(4):
            learner.train(batch(seed=i))
    lines = [r.getMessage() for r in caplog.records if "total_loss=" in r.getMessage()]
    assert len(lines) == 2 and "iter 0 " in lines[0] and "iter 2 " in lines[1]  # DI-engine's iterations


def _trained_checkpoint(tmp_path):
    source = make_learner(tmp_path / "source", QUIET)
    for i in range(3):
        source.train(batch(seed=i), envstep=100 + i)
    return source, source.save_checkpoint()


def _same_weights(a, b):
    sa, sb = a.policy.state_dict()["model"], b.policy.state_dict()["model"]
    return all(torch.equal(sa[k], sb[k]) for k in sa)


def test_short_form_load_ckpt_restores_weights_iteration_and_envstep(tmp_path, caplog):
    source, path = _trained_checkpoint(tmp_path)
    target = make_learner(tmp_path / "target", dict(QUIET, load_ckpt_before_run=path))
    assert not _same_weights(source, target)
    with caplog.at_level(logging.INFO, logger="ding_ray"):
        target.call_hook("before_run")
    assert _same_weights(source, target)
    assert target.last_iter.val == 3 and target.collector_envstep == 102
    lines = [r for r in caplog.records if "loaded checkpoint" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert path in lines[0].getMessage() and "iteration 3" in lines[0].getMessage()
    target.train(batch(), envstep=200)
    assert target.train_iter == 4  # training goes on from the loaded count


def test_no_checkpoint_no_log_line(tmp_path, caplog):
    learner = make_learner(tmp_path, QUIET)
    with caplog.at_level(logging.INFO, logger="ding_ray"):
        learner.call_hook("before_run")
    assert not [r for r in caplog.records if "loaded checkpoint" in r.getMessage()]
    assert learner.last_iter.val == 0


# ----- long form --------------------------------------------------------------------------------
def test_long_form_load_ckpt_ext_args_load_path(tmp_path):
    source, path = _trained_checkpoint(tmp_path)
    long_form = dict(
        name="resume", type="load_ckpt", priority=20, position="before_run", ext_args=dict(load_path=path)
    )
    target = make_learner(tmp_path / "target", dict(QUIET, resume=long_form))
    assert [h.name for h in target.hooks["before_run"]] == ["resume"]
    target.call_hook("before_run")
    assert _same_weights(source, target) and target.last_iter.val == 3 and target.collector_envstep == 102


def test_long_form_save_ckpt_and_log_show_read_ext_args_freq(tmp_path, caplog):
    hook = dict(
        QUIET,
        every3=dict(name="every3", type="save_ckpt", position="after_iter", ext_args=dict(freq=3)),
        # a long form under a short-form key, as DI-engine allows
        log_show_after_iter=dict(name="show", type="log_show", position="after_iter", ext_args=dict(freq=4)),
    )
    learner = make_learner(tmp_path, hook)
    with caplog.at_level(logging.INFO, logger="ding_ray"):
        for i in range(7):
            learner.train(batch(seed=i))
    assert ckpt_files(tmp_path) == ["iteration_0.pth.tar", "iteration_3.pth.tar", "iteration_6.pth.tar"]
    shown = [r.getMessage() for r in caplog.records if "total_loss=" in r.getMessage()]
    assert len(shown) == 2 and "iter 0 " in shown[0] and "iter 4 " in shown[1]
    assert [h.priority for h in learner.hooks["after_iter"]] == [100, 100]  # DI-engine's long-form default


def test_long_form_custom_hook_type_and_defaults(tmp_path):
    register_learner_hook("recorder", Recorder)
    Recorder.calls = []
    learner = make_learner(tmp_path, dict(QUIET, mine=dict(type="recorder", position="before_iter")))
    learner.train(batch())
    assert Recorder.calls == [("mine", "before_iter", 0)]  # name defaults to the key


@pytest.mark.parametrize(
    "entry, message",
    [
        (dict(type="save_ckp", position="after_iter"), "type 'save_ckp' is not registered.*'save_ckpt'"),
        (dict(type="save_ckpt", position="after_itr"), "position 'after_itr' unknown.*'after_iter'"),
        (dict(type="save_ckpt"), "needs 'position'"),
        (dict(type="save_ckpt", position="after_iter", prority=3), "unknown field 'prority'.*'priority'"),
        (dict(type="save_ckpt", position="after_iter", ext_args=dict(frequency=3)), "ext_args 'frequency'"),
        (
            dict(type="load_ckpt", position="before_run", ext_args=dict(path="x")),
            "ext_args 'path'.*'load_path'",
        ),
        (dict(type="log_show", position="after_iter", priority=-5), "priority must be a number >= 0"),
        ([dict(type="save_ckpt", position="after_iter")], "Unknown learner hook.*long form"),
    ],
)
def test_bad_long_form_entries_are_refused_naming_the_key(tmp_path, entry, message):
    with pytest.raises(ConfigError, match=message) as e:
        make_learner(tmp_path, dict(my_hook=entry))
    assert "policy.learn.learner.hook.my_hook" in str(e.value)


def test_unknown_short_form_gets_the_nearest_name(tmp_path):
    with pytest.raises(ConfigError, match="hook.save_ckpt_after_iters'. Did you mean 'save_ckpt_after_iter'"):
        make_learner(tmp_path, dict(save_ckpt_after_iters=5))


def test_compile_config_accepts_long_form_entries_and_keeps_the_marker_out(tmp_path):
    os.chdir(tmp_path)
    main = dict(
        exp_name="hooks",
        env=dict(env_id="CartPole-v1", collector_env_num=1, evaluator_env_num=1),
        policy=dict(
            model=MODEL,
            learn=dict(
                learner=dict(
                    hook=dict(
                        log_reduce_after_iter=True,
                        keep=dict(
                            name="keep", type="save_ckpt", position="after_iter", ext_args=dict(freq=9)
                        ),
                    )
                )
            ),
        ),
    )
    create = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=True)
    hook = cfg.policy.learn.learner.hook
    assert hook.keep.ext_args.freq == 9 and hook.log_reduce_after_iter is True
    assert EXTRA_ENTRIES not in hook
    saved = json.load(open(os.path.join("hooks", "total_config.json")))
    assert EXTRA_ENTRIES not in saved["policy"]["learn"]["learner"]["hook"]
    learner = BaseLearner(cfg.policy.learn.learner, DQNPolicy(cfg.policy, enable_field=["learn"]).learn_mode)
    assert "keep" in [h.name for h in learner.hooks["after_iter"]]
    bad = json.loads(json.dumps(main))
    bad["policy"]["learn"]["learner"]["hook"]["keep"]["type"] = "nope"
    with pytest.raises(ConfigError, match="policy.learn.learner.hook.keep.*'nope' is not registered"):
        compile_config(bad, seed=0, auto=True, create_cfg=create, save_cfg=False)


def test_extra_entries_marker_is_generic():
    def only_ints(full_key, value):
        if not isinstance(value, int):
            raise ConfigError(f"{full_key} must be an int")
        return value

    defaults = dict(section=dict(a=1, **{EXTRA_ENTRIES: only_ints}), closed=dict(b=2))
    merged = merge_config(defaults, dict(section=dict(a=3, extra=4)), "top")
    assert merged == dict(section=dict(a=3, extra=4), closed=dict(b=2))
    with pytest.raises(ConfigError, match="top.section.extra must be an int"):
        merge_config(defaults, dict(section=dict(extra="x")), "top")
    with pytest.raises(ConfigError, match="Unknown config key 'top.closed.c'"):
        merge_config(defaults, dict(closed=dict(c=1)), "top")
    assert EXTRA_ENTRIES not in merge_config(defaults, {}).section


# ----- merge helpers, log_policy, log_reduce ----------------------------------------------------
def test_merge_and_add_keep_priority_order():
    hooks = build_learner_hook_by_cfg(dict(log_show_after_iter=10, save_ckpt_after_iter=5))
    merged = merge_hooks(hooks, {"after_iter": [Recorder("x", 1, position="after_iter")]})
    assert [h.name for h in merged["after_iter"]] == ["x", "log_show", "save_ckpt_after_iter"]
    add_learner_hook(merged, Recorder("y", 20, position="after_iter"))
    assert [h.name for h in merged["after_iter"]] == ["x", "log_show", "save_ckpt_after_iter", "y"]


def test_log_policy_logs_the_policy_and_leaves_log_show_alone(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="ding_ray"):
        quiet = make_learner(tmp_path, log_policy=False)
        assert not [r for r in caplog.records if "DQNPolicy" in r.getMessage()]
        make_learner(tmp_path)
    assert [r for r in caplog.records if "DQNPolicy" in r.getMessage()]
    assert [h.name for h in quiet.hooks["after_iter"]] == ["log_show", "save_ckpt_after_iter"]


def test_log_reduce_single_process_and_missing_process_group(tmp_path):
    learner = make_learner(tmp_path, dict(QUIET, log_reduce_after_iter=True, log_show_after_iter=1))
    assert [h.name for h in learner.hooks["after_iter"]] == ["log_reduce_after_iter", "log_show"]
    learner.train(batch())  # one process: the reduce leaves the values as they are
    long_form = dict(type="log_reduce", position="after_iter", priority=10)
    assert make_learner(tmp_path, dict(QUIET, reduce=long_form)).hooks["after_iter"][0].name == "reduce"
    policy = DQNPolicy(dict(model=MODEL), enable_field=["learn"])
    two = BaseLearner(dict(hook=QUIET), policy.learn_mode, exp_name=str(tmp_path), dist_info=(0, 2))
    assert [h.name for h in two.hooks["after_iter"]] == ["log_reduce_after_iter"]  # added, as in DI-engine
    with pytest.raises(ConfigError, match="world size 2 but torch.distributed has no process group"):
        two.train(batch())


def _reduce_worker(rank, store, out_dir):
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        exp = os.path.join(out_dir, f"rank{rank}")
        learner = make_learner(
            exp, dict(save_ckpt_after_iter=1, save_ckpt_after_run=False, log_show_after_iter=1000)
        )
        # the second step: log_show (freq 1000) ran after the first (iteration 0, as in DI-engine)
        # and cleared the buffer, not after this one
        learner.train(batch(seed=20 + rank))
        (local,) = learner.train(batch(seed=10 + rank))
        result = dict(local=local, reduced=learner.log_buffer.latest, ckpts=ckpt_files(exp))
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    finally:
        torch.distributed.destroy_process_group()


def test_log_reduce_averages_over_two_real_ranks(tmp_path):
    mp.spawn(_reduce_worker, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=2, join=True)
    r0, r1 = (json.load(open(tmp_path / f"rank{r}.json")) for r in (0, 1))
    assert r0["local"]["total_loss"] != r1["local"]["total_loss"]
    assert sorted(r0["reduced"]) == sorted(r0["local"])
    for key, value in r0["reduced"].items():
        assert value == pytest.approx((r0["local"][key] + r1["local"][key]) / 2)
    assert r1["reduced"] == {}  # a rank other than 0 logs nothing and clears its buffer
    assert r0["ckpts"] == ["iteration_0.pth.tar", "iteration_1.pth.tar"]
    assert r1["ckpts"] == []  # only rank 0 saves
