from functools import partial

import numpy as np
import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import GymnasiumEnv, create_env_manager, get_vec_env_setting
from ding_ray.errors import EnvError


def make_manager(env_id, n=3, **manager):
    env_fn, cfgs, _ = get_vec_env_setting(dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1))
    return create_env_manager(dict(type="base", **manager), [partial(env_fn, cfg=c) for c in cfgs])


def run_steps(manager, steps):
    out = []
    for _ in range(steps):
        obs = dict(manager.ready_obs)
        out.append((obs, manager.step({i: 0 for i in obs})))
    return out


def test_auto_reset_keeps_final_obs_and_reports_return():
    m = make_manager("Countdown-v0", n=2)
    m.seed(0)
    m.launch()
    history = run_steps(m, 5)
    obs, timesteps = history[-1]
    for env_id, ts in timesteps.items():
        assert ts.done and ts.obs[0] == 0.0  # the final observation, not the reset one
        assert ts.info["eval_episode_return"] == 5.0 and ts.info["truncated"] is False
        assert m.ready_obs[env_id][0] == 5.0  # already reset: first obs of the next episode
    m.close()


def test_truncation_is_flagged():
    m = make_manager("CountdownTrunc-v0", n=1)
    m.launch()
    _, ts = run_steps(m, 4)[-1]
    assert ts[0].done and ts[0].info["truncated"] is True


def test_seeding_reproducible_and_distinct_per_env():
    def first_obs(seed, dynamic):
        m = make_manager("Countdown-v0", n=3)
        m.seed(seed, dynamic_seed=dynamic)
        m.launch()
        starts = [m.ready_obs[i][1] for i in range(3)]
        run_steps(m, 5)  # one full episode, auto-reset
        nxt = [m.ready_obs[i][1] for i in range(3)]
        m.reset()
        again = [m.ready_obs[i][1] for i in range(3)]
        return starts, nxt, again

    a, b = first_obs(7, True), first_obs(7, True)
    assert a == b  # same seed, same run
    assert len(set(a[0])) == 3  # envs seeded differently
    assert a[1] != a[0]  # dynamic seed: the next episode starts elsewhere
    static = first_obs(7, False)
    assert static[2] == static[0]  # static seed: every reset() starts the same episodes
    assert first_obs(8, True)[0] != a[0]


def test_crashing_env_is_reset_counted_and_others_continue():
    m = make_manager("CountdownCrash-v0", n=2)
    m.seed(0)
    m.launch()
    history = run_steps(m, 8)
    assert m.error_count == 2  # both envs crash once at step 3 of their first episode
    abnormal = [ts for _, tss in history for ts in tss.values() if ts.info.get("abnormal")]
    assert len(abnormal) == 2
    finished = [ts for _, tss in history for ts in tss.values() if ts.done and not ts.info.get("abnormal")]
    assert finished and all(ts.info["eval_episode_return"] == 5.0 for ts in finished)


def test_unknown_env_id_names_close_ids():
    with pytest.raises(EnvError, match="CartPole-v1"):
        GymnasiumEnv(dict(env_id="CartPole-v9"))


def test_random_action_in_space():
    env = GymnasiumEnv(dict(env_id="CartPole-v1"))
    env.seed(1)
    assert all(env.action_space.contains(env.random_action()) for _ in range(10))
    assert isinstance(env.reset(), np.ndarray)
