"""Atari (ale-py) and MinAtar envs: shapes and dtypes, DI-engine's training-only wrappers, frame
stacking, seeding, the atari_vector manager against the single env, and the errors of bad input."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

from ding_ray.config.compile import compile_config
from ding_ray.envs import AtariEnv, GymnasiumEnv, create_env_manager, get_vec_env_setting, make_gymnasium
from ding_ray.errors import ConfigError, EnvError

pytest.importorskip("ale_py")
pytest.importorskip("minatar")

PONG = "PongNoFrameskip-v4"


def atari_cfgs(env_id: str, n: int = 1, **keys) -> tuple[list, list]:
    """Collector and evaluator env configs as the pipelines make them (DI-engine's is_train)."""
    section = dict(AtariEnv.default_config(), env_id=env_id, collector_env_num=n, evaluator_env_num=n, **keys)
    _, collector, evaluator = get_vec_env_setting(section)
    return collector, evaluator


def play(env, steps: int, seed: int = 0):
    """Random actions for ``steps`` steps: (observations, timesteps), resetting at episode ends."""
    rng = np.random.default_rng(seed)
    obs, timesteps = [env.reset()], []
    for _ in range(steps):
        ts = env.step(int(rng.integers(env.action_space.n)))
        timesteps.append(ts)
        obs.append(env.reset() if ts.done else ts.obs)
    return obs, timesteps


def play_collector_and_evaluator(env_id: str, steps: int) -> dict[str, list]:
    """The timesteps of ``play`` in a collector env and in an evaluator env of ``env_id``, seeded 0."""
    collector, evaluator = atari_cfgs(env_id)
    played = {}
    for name, cfg in (("collector", collector[0]), ("evaluator", evaluator[0])):
        env = AtariEnv(cfg)
        env.seed(0)
        _, played[name] = play(env, steps)
        env.close()
    return played


def test_ale_and_minatar_ids_are_registered_when_first_made():
    # a fresh interpreter: neither package imported, so gymnasium knows none of their ids yet
    code = (
        "import gymnasium as gym; from ding_ray.envs import make_gymnasium\n"
        "assert 'ALE/Pong-v5' not in gym.envs.registry\n"
        "for env_id in ('ALE/Pong-v5', 'PongNoFrameskip-v4', 'MinAtar/Breakout-v1'):\n"
        "    make_gymnasium(env_id).close()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_unknown_id_names_the_extra_when_a_package_is_missing(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "minatar" else find_spec(n, *a)
    )
    with pytest.raises(EnvError, match=r"Unknown gymnasium env id.*ding_ray\[atari\].*minatar"):
        make_gymnasium("MinAtar/NotAGame-v1")


def test_collector_envs_train_evaluator_envs_play_whole_games():
    collector, evaluator = atari_cfgs(PONG, n=2)
    assert [c.is_train for c in collector] == [True, True]
    assert [c.is_train for c in evaluator] == [False, False]
    for cfg, train in ((collector[0], True), (evaluator[0], False)):
        env = AtariEnv(cfg)
        assert (env.episode_life, env.clip_rewards) == (train, train)
        assert env.observation_space.shape == (4, 84, 84) and env.observation_space.dtype == np.uint8
        env.seed(0)
        obs, timesteps = play(env, 30)
        assert all(o.shape == (4, 84, 84) and o.dtype == np.uint8 for o in obs)
        env.close()


def test_frame_stack_shifts_by_one_frame_per_step():
    env = AtariEnv(atari_cfgs("BreakoutNoFrameskip-v4")[0][0])
    env.seed(1)
    prev = env.reset()
    assert all(np.array_equal(prev[i], prev[-1]) for i in range(3))  # the first frame, repeated
    rng = np.random.default_rng(0)
    for _ in range(150):
        ts = env.step(int(rng.integers(4)))
        if ts.done:
            prev = env.reset()
            continue
        assert np.array_equal(ts.obs[:-1], prev[1:])
        prev = ts.obs
    env.close()


def test_episodic_life_ends_collector_episodes_only():
    played = play_collector_and_evaluator("BreakoutNoFrameskip-v4", 150)
    ends = {name: [ts.info["lives"] for ts in timesteps if ts.done] for name, timesteps in played.items()}
    assert ends["collector"] and all(lives > 0 for lives in ends["collector"][:2])  # a life lost, game on
    assert all(lives == 0 for lives in ends["evaluator"])  # only game over ends an evaluator's episode


def test_rewards_clipped_in_collector_envs_only():
    played = play_collector_and_evaluator("SpaceInvadersNoFrameskip-v4", 200)
    rewards = {name: {ts.reward for ts in timesteps} for name, timesteps in played.items()}
    assert rewards["collector"] <= {-1.0, 0.0, 1.0} and 1.0 in rewards["collector"]
    assert max(rewards["evaluator"]) > 1.0  # Space Invaders scores 5 to 30 a hit


def test_seed_replays_the_same_frames():
    runs = []
    for _ in range(2):
        env = AtariEnv(atari_cfgs("BreakoutNoFrameskip-v4")[0][0])
        env.seed(7)
        obs, _ = play(env, 60)
        runs.append(np.stack(obs))
        env.close()
    assert np.array_equal(runs[0], runs[1])


def test_env_managers_keep_uint8_observations():
    collector, _ = atari_cfgs(PONG, n=2)
    for manager in (
        dict(type="base"),
        dict(type="subprocess", shared_memory=True),
        dict(type="atari_vector"),
    ):
        env = create_env_manager(manager, [partial(AtariEnv, cfg=c) for c in collector])
        env.seed(0)
        env.launch()
        for _ in range(3):
            obs = env.ready_obs
            assert all(o.dtype == np.uint8 and o.shape == (4, 84, 84) for o in obs.values()), manager
            timesteps = env.step({i: 0 for i in obs})
            assert all(ts.obs.dtype == np.uint8 for ts in timesteps.values()), manager
        env.close()


def test_vector_manager_gives_the_single_envs_frames_where_the_game_draws_no_random_numbers():
    # Pong with neither no-ops, sticky actions nor FIRE: the emulator is deterministic, so both
    # step the same frames; they differ only in padding the stack before the first frame.
    collector, _ = atari_cfgs(PONG, n=2, noop_max=0, fire_reset=False, repeat_action_probability=0.0)
    fns = [partial(AtariEnv, cfg=c) for c in collector]
    single, vector = (
        create_env_manager(dict(type="base"), fns),
        create_env_manager(dict(type="atari_vector"), fns),
    )
    for env in (single, vector):
        env.seed(0)
        env.launch()
    for i in range(2):
        assert np.array_equal(single.ready_obs[i][-1], vector.ready_obs[i][-1])
    rng = np.random.default_rng(0)
    for step in range(60):
        actions = {i: int(rng.integers(6)) for i in range(2)}
        a, b = single.step(actions), vector.step(actions)
        for i in range(2):
            assert np.array_equal(a[i].obs[-1], b[i].obs[-1])
            if step >= 3:  # the whole stack holds frames of this episode
                assert np.array_equal(a[i].obs, b[i].obs)
            assert a[i].reward == b[i].reward and a[i].done == b[i].done
    single.close()
    vector.close()


def test_vector_manager_resets_envs_itself_and_reports_returns():
    collector, evaluator = atari_cfgs(PONG, n=3, max_episode_frames=240)
    env = create_env_manager(dict(type="atari_vector"), [partial(AtariEnv, cfg=c) for c in evaluator])
    with pytest.raises(EnvError, match="no env objects"):
        env.envs  # noqa: B018
    env.seed(5, dynamic_seed=False)
    env.launch()
    first = {i: o.copy() for i, o in env.ready_obs.items()}
    finished = {}
    for _ in range(70):
        timesteps = env.step({i: env.random_action(i) for i in env.ready_obs})
        for i, ts in timesteps.items():
            if ts.done:
                finished.setdefault(i, ts)
                assert ts.info["truncated"] and "eval_episode_return" in ts.info
                # dynamic_seed=False: the next episode starts from the env's seed again
                assert np.array_equal(env.ready_obs[i], first[i])
    assert sorted(finished) == [0, 1, 2]
    # an env left out of a step leaves ready_obs until reset
    env.step({0: 0, 1: 0})
    assert sorted(env.ready_obs) == [0, 1]
    with pytest.raises(EnvError, match="no ready observation"):
        env.step({2: 0})
    env.reset({2: None})
    assert sorted(env.ready_obs) == [0, 1, 2]
    env.close()


def test_minatar_observations_are_channel_first_float():
    env = GymnasiumEnv(dict(env_id="MinAtar/Breakout-v1"))
    assert env.observation_space.shape == (4, 10, 10) and env.observation_space.dtype == np.float32
    env.seed(0)
    obs, timesteps = play(env, 100)
    assert all(
        o.shape == (4, 10, 10) and o.dtype == np.float32 and set(np.unique(o)) <= {0.0, 1.0} for o in obs
    )
    raw = env.unwrapped.game.state()  # (10, 10, C) bool
    assert np.array_equal(obs[-1], np.moveaxis(raw, -1, 0).astype(np.float32)) or timesteps[-1].done
    env.close()


# ----- bad input ----------------------------------------------------------------------------------
def compile_atari(env: dict, model: dict | None = None, env_type: str = "atari"):
    main = dict(env=dict(env_id=PONG, **env), policy=dict(model=dict(action_shape=6, **(model or {}))))
    create = dict(env=dict(type=env_type), policy=dict(type="dqn"))
    return compile_config(main, create_cfg=create, save_cfg=False)


def test_obs_shape_errors_name_the_fix():
    compile_atari({}, dict(obs_shape=[4, 84, 84]))  # fits
    with pytest.raises(ConfigError, match=r"channel last.*obs_shape=\[4, 84, 84\]"):
        compile_atari({}, dict(obs_shape=[84, 84, 4]))
    with pytest.raises(
        ConfigError, match=r"env.frame_stack=4 does not match .*obs_shape\[0\]=3.*frame_stack=3"
    ):
        compile_atari({}, dict(obs_shape=[3, 84, 84]))
    with pytest.raises(ConfigError, match="frame_stack"):
        compile_atari(dict(frame_stack=0))


def test_unknown_ale_id_names_close_ids():
    with pytest.raises(EnvError, match="ALE/Pong-v5"):
        AtariEnv(dict(env_id="ALE/Pongg-v5"))


def test_missing_rom_names_the_extra(monkeypatch):
    from ale_py import roms

    monkeypatch.setattr(roms, "get_rom_path", lambda game: None)
    with pytest.raises(EnvError, match=r"no ROM for 'pong'.*ding_ray\[atari\]"):
        AtariEnv(dict(env_id=PONG))


def test_missing_package_names_the_extra(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ale_py" else find_spec(name, *a)
    )
    with pytest.raises(ConfigError, match=r"needs ale_py.*ding_ray\[atari\]"):
        AtariEnv(dict(env_id=PONG))


def test_atari_id_under_gymnasium_type_names_atari_type():
    with pytest.raises(ConfigError, match="type 'atari'"):
        compile_atari({}, env_type="gymnasium")


def test_vector_manager_needs_the_atari_env():
    with pytest.raises(ConfigError, match="env type 'atari'"):
        create_env_manager(dict(type="atari_vector"), [partial(GymnasiumEnv, cfg=dict(env_id="CartPole-v1"))])


def test_cli_switches_a_gymnasium_config_to_atari_for_an_atari_id():
    from ding_ray.entry.cli_commands import apply_overrides

    main, create = dict(env=dict(env_id="CartPole-v1")), dict(env=dict(type="gymnasium"))
    apply_overrides(main, create, ["env.env_id=ALE/Pong-v5"])
    assert create["env"]["type"] == "atari"
    main, create = dict(env=dict(env_id="CartPole-v1")), dict(env=dict(type="gymnasium"))
    apply_overrides(main, create, ["env.env_id=MinAtar/Breakout-v1"])
    assert create["env"]["type"] == "gymnasium"
