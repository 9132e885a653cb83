import pytest

from ding_ray.config import ConfigError
from ding_ray.worker import BaseLearner, LearnerHook, add_learner_hook, build_learner_hook_by_cfg, merge_hooks
from ding_ray.worker.learner import register_learner_hook


class Recorder(LearnerHook):
    calls: list = []

    def __call__(self, engine):
        Recorder.calls.append((self.name, self.position, engine.train_iter))


class FakePolicy:
    def __init__(self):
        self.steps = 0

    def forward(self, data):
        self.steps += 1
        return {"total_loss": float(len(data)), "priority": [0.5] * len(data)}

    def state_dict(self):
        return {}

    def get_attribute(self, name):
        return {"batch_size": 2, "priority": True}[name]


def test_hooks_run_in_priority_order_at_their_positions(tmp_path):
    Recorder.calls = []
    learner = BaseLearner(
        dict(hook=dict(save_ckpt_after_run=False, log_show_after_iter=1000)),
        FakePolicy(),
        exp_name=str(tmp_path),
    )
    for name, priority, position in [
        ("late", 90, "after_iter"),
        ("early", 10, "after_iter"),
        ("mid", 50, "after_iter"),
        ("pre", 50, "before_iter"),
        ("run", 1, "before_run"),
    ]:
        learner.register_hook(Recorder(name=name, priority=priority, position=position))
    learner.call_hook("before_run")
    learner.train(
        [{"replay_unique_id": "a", "replay_buffer_idx": 0}, {"replay_unique_id": "b", "replay_buffer_idx": 1}]
    )
    assert Recorder.calls == [
        ("run", "before_run", 0),
        ("pre", "before_iter", 0),
        ("early", "after_iter", 1),
        ("mid", "after_iter", 1),
        ("late", "after_iter", 1),
    ]
    assert learner.train_iter == 1
    assert learner.priority_info["replay_unique_id"] == ["a", "b"]
    assert list(learner.priority_info["priority"]) == [0.5, 0.5]


def test_build_by_cfg_short_and_long_forms_and_merge():
    register_learner_hook("recorder", Recorder)
    hooks = build_learner_hook_by_cfg(
        dict(
            load_ckpt_before_run="",
            log_show_after_iter=10,
            save_ckpt_after_iter=5,
            save_ckpt_after_run=True,
            mine=dict(type="recorder", position="after_iter", priority=5),
        )
    )
    assert [h.name for h in hooks["after_iter"]] == ["mine", "log_show_after_iter", "save_ckpt_after_iter"]
    assert [h.name for h in hooks["after_run"]] == ["save_ckpt_after_run"]
    assert hooks["before_run"] == []  # an empty path loads nothing
    other = {"after_iter": [Recorder(name="x", position="after_iter", priority=1)]}
    merged = merge_hooks(hooks, other)
    assert [h.name for h in merged["after_iter"]][0] == "x"
    add_learner_hook(merged, Recorder(name="y", position="before_run"))
    assert [h.name for h in merged["before_run"]] == ["y"]
    with pytest.raises(ConfigError, match="save_ckpt_after_iter"):
        build_learner_hook_by_cfg(dict(save_ckpt_after_iters=5))
