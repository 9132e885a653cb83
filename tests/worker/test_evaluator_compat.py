"""InteractionSerialEvaluator against DI-engine's: config keys, the render schedule, force_render,
figure_path and the eval signature."""

import inspect
import sys
from functools import partial

import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import BaseEnvManager, create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import InteractionSerialEvaluator

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


class ReplayRecordingManager(BaseEnvManager):
    """A BaseEnvManager that notes where it was asked to save replays instead of recording videos,
    and which replay folder was active at each env step."""

    def __init__(self, env_fn, cfg=None):
        super().__init__(env_fn, cfg)
        self.replay_calls = []
        self.recording = None
        self.steps_recording_to = []

    def enable_save_replay(self, replay_path):
        self.replay_calls.append(replay_path)
        self.recording = replay_path

    def disable_save_replay(self):
        self.replay_calls.append(None)
        self.recording = None

    def step(self, actions):
        self.steps_recording_to.append(self.recording)
        return super().step(actions)


class NoStopManager(BaseEnvManager):
    """Saves replays its own way (no moviepy needed) but cannot stop."""

    disable_save_replay = None  # BaseEnvManager's own can stop; this one cannot

    def enable_save_replay(self, replay_path):
        pass


def env_fns(n=2):
    env_fn, _, cfgs = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=1, evaluator_env_num=n)
    )
    return [partial(env_fn, cfg=c) for c in cfgs]


def evaluator(tmp_path, manager=None, **cfg):
    policy = DQNPolicy(dict(model=MODEL), enable_field=["eval"])
    manager = manager or create_env_manager(dict(type="base"), env_fns())
    manager.seed(0, dynamic_seed=False)
    return InteractionSerialEvaluator(
        dict(n_episode=2, stop_value=5, **cfg), manager, policy.eval_mode, exp_name=str(tmp_path)
    )


@pytest.fixture
def no_moviepy(monkeypatch):
    monkeypatch.setitem(sys.modules, "moviepy", None)  # as if it were not installed, whether it is or not


def test_default_config_has_every_di_engine_key():
    cfg = InteractionSerialEvaluator.default_config()
    # DI-engine's InteractionSerialEvaluator.config, plus what its compile_config copies in
    assert cfg.eval_freq == 1000
    assert cfg.render == dict(render_freq=-1, mode="train_iter")
    assert cfg.figure_path is None
    assert {"stop_value", "n_episode"} <= set(cfg)


def test_eval_signature_and_return_match_di_engine(tmp_path):
    params = inspect.signature(InteractionSerialEvaluator.eval).parameters
    assert [(n, p.default) for n, p in params.items()] == [
        ("self", inspect.Parameter.empty),
        ("save_ckpt_fn", None),
        ("train_iter", -1),
        ("envstep", -1),
        ("n_episode", None),
        ("force_render", False),
        ("policy_kwargs", None),
    ]
    saved = []
    stop_flag, info = evaluator(tmp_path).eval(saved.append, train_iter=3, envstep=30)
    assert stop_flag is True and info["eval_episode_return_mean"] == 5.0  # Countdown returns 5
    assert saved == ["ckpt_best.pth.tar"] and "replay_path" not in info


def test_render_freq_without_moviepy_fails_at_construction(tmp_path, no_moviepy):
    with pytest.raises(ConfigError, match=r'render_freq=5 saves videos.*pip install "ding_ray\[video\]"'):
        evaluator(tmp_path, render=dict(render_freq=5))
    plain = evaluator(tmp_path)  # render_freq -1: no videos, moviepy not needed
    with pytest.raises(ConfigError, match=r'force_render=True.*pip install "ding_ray\[video\]"'):
        plain.eval(train_iter=1, force_render=True)


@pytest.mark.parametrize(
    "cfg, message",
    [
        (dict(render=dict(mode="episode")), "render.mode must be 'train_iter' or 'envstep'"),
        (dict(render=dict(render_freq=-2)), "render_freq must be -1"),
        (dict(figure_path="figures"), "figure_path='figures' is not supported yet"),
    ],
)
def test_bad_render_and_figure_settings_are_refused(tmp_path, cfg, message):
    with pytest.raises(ConfigError, match=message):
        evaluator(tmp_path, **cfg)


def _run(ev, manager, evals):
    """``evals``: (train_iter, envstep, force_render); returns the replay folder each one used."""
    used = []
    for train_iter, envstep, force in evals:
        first_step = len(manager.steps_recording_to)
        _, info = ev.eval(train_iter=train_iter, envstep=envstep, force_render=force)
        folders = set(manager.steps_recording_to[first_step:])
        assert len(folders) == 1  # every step of one evaluation records to the same place (or nowhere)
        assert folders == {info.get("replay_path")}
        assert manager.recording is None  # nothing left recording for the next evaluation
        used.append(info.get("replay_path"))
    return used


def test_train_iter_schedule_and_force_render(tmp_path, no_moviepy):
    manager = ReplayRecordingManager(env_fns())
    ev = evaluator(tmp_path, manager, render=dict(render_freq=10, mode="train_iter"))
    used = _run(
        ev,
        manager,
        [
            (0, 0, False),
            (5, 50, False),
            (10, 100, False),
            (15, 150, True),
            (20, 200, False),
            (25, 250, False),
        ],
    )
    folder = str(tmp_path / "videos" / "evaluator_train_iter_{}")
    # DI-engine's count: first at 10 (10 - (-1) >= 10); force_render at 15 leaves the schedule alone
    assert used == [None, None, folder.format(10), folder.format(15), folder.format(20), None]
    assert manager.replay_calls == [folder.format(10), None, folder.format(15), None, folder.format(20), None]


def test_a_manager_that_cannot_stop_replays_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="NoStopManager has no disable_save_replay"):
        evaluator(tmp_path, NoStopManager(env_fns()), render=dict(render_freq=10))
    ev = evaluator(tmp_path, NoStopManager(env_fns()))
    with pytest.raises(ConfigError, match="force_render=True.*no disable_save_replay"):
        ev.eval(force_render=True)


def test_envstep_schedule(tmp_path, no_moviepy):
    manager = ReplayRecordingManager(env_fns())
    ev = evaluator(tmp_path, manager, render=dict(render_freq=100, mode="envstep"))
    used = _run(
        ev, manager, [(1, 0, False), (2, 50, False), (3, 120, False), (4, 150, False), (5, 260, False)]
    )
    folder = str(tmp_path / "videos" / "evaluator_envstep_{}")
    assert used == [None, None, folder.format(120), None, folder.format(260)]
    ev.reset()  # a reset starts the schedule over, as in DI-engine
    assert _run(ev, manager, [(6, 300, False)]) == [folder.format(300)]


def test_render_freq_zero_renders_every_evaluation(tmp_path, no_moviepy):
    manager = ReplayRecordingManager(env_fns(n=1))
    ev = evaluator(tmp_path, manager, render=dict(render_freq=0))
    assert all(_run(ev, manager, [(0, 0, False), (1, 5, False)]))


def test_missing_episode_count_is_a_clear_error(tmp_path):
    policy = DQNPolicy(dict(model=MODEL), enable_field=["eval"])
    manager = create_env_manager(dict(type="base"), env_fns())
    ev = InteractionSerialEvaluator(dict(n_episode=None), manager, policy.eval_mode)
    with pytest.raises(ConfigError, match="n_episode"):
        ev.eval()
    assert ev.eval(n_episode=1)[1]["episode_count"] == 1
