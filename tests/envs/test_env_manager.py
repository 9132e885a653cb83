import threading
import time
from functools import partial

import gymnasium as gym
import numpy as np
import pytest

import tests.envs.test_subprocess_env_manager  # noqa: F401 - registers HangCountdown-v0
import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import GymnasiumEnv, create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, EnvError
from tests.fakes import CountdownEnv


def make_manager(env_id, n=3, **manager):
    env_fn, cfgs, _ = get_vec_env_setting(dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1))
    return create_env_manager(dict(type="base", **manager), [partial(env_fn, cfg=c) for c in cfgs])


def env_fns(env_id, n, **kwargs):
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1, kwargs=kwargs)
    )
    return [partial(env_fn, cfg=c) for c in cfgs]


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


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_random_actions_go_on_across_episodes_whose_seed_comes_again(kind):
    """An env's random actions are one stream from its seed, not restarted by a reset: an episode
    whose seed comes up again (dynamic seeds have 999 values; an evaluator's never change) does not
    repeat the random actions of the first one, in either manager (DI-engine's random policy draws
    from one action space that no reset reseeds)."""
    m = create_env_manager(dict(type=kind), env_fns("Pendulum-v1", 1))
    m.seed(3, dynamic_seed=False)  # every episode starts from the same seed
    m.launch()
    first = [m.random_action(0) for _ in range(20)]
    m.reset()
    again = [m.random_action(0) for _ in range(20)]
    assert not np.allclose(first, again)
    env = GymnasiumEnv(dict(env_id="Pendulum-v1"))
    env.seed(3, dynamic_seed=False)
    env.reset()
    first = [env.random_action() for _ in range(20)]
    env.reset()
    assert not np.allclose(first, [env.random_action() for _ in range(20)])
    m.close()


# ----- DI-engine's retry and timeout keys ------------------------------------------------------------
class FailFirstResetEnv(CountdownEnv):
    """Raises in the first reset of each env object: retrying on the same env ('reset') works,
    building a new one ('renew') fails again."""

    def reset(self, *, seed=None, options=None):
        if self.resets == 0:
            self.resets += 1
            raise RuntimeError("first reset fails")
        return super().reset(seed=seed, options=options)


if "FailFirstReset-v0" not in gym.envs.registry:
    gym.register("FailFirstReset-v0", entry_point=FailFirstResetEnv)


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_retry_type_reset_retries_the_same_env_and_renew_builds_new_ones(kind):
    m = create_env_manager(
        dict(type=kind, retry_type="reset", retry_waiting_time=0.0), env_fns("FailFirstReset-v0", 2)
    )
    m.launch()
    assert sorted(m.ready_obs) == [0, 1] and m.error_count == 2
    m.close()
    m = create_env_manager(
        dict(type=kind, retry_type="renew", retry_waiting_time=0.0, max_retry=3),
        env_fns("FailFirstReset-v0", 1),
    )
    with pytest.raises(EnvError, match="failed to reset 3 times in a row.*first reset fails"):
        m.launch()
    m.close()


def test_base_step_timeout_interrupts_renews_and_goes_on():
    m = make_manager("HangCountdown-v0", n=2, step_timeout=0.3)
    m.seed(0, dynamic_seed=False)  # env 0 hangs at step 3; its replacement is seeded 1000 and does not
    m.launch()
    start = time.monotonic()
    history = run_steps(m, 8)
    assert time.monotonic() - start < 3
    abnormal = [(i, ts) for _, tss in history for i, ts in tss.items() if ts.info.get("abnormal")]
    assert [i for i, _ in abnormal] == [0] and "took longer than 0.3 s" in abnormal[0][1].info["error"]
    assert m.error_count == 1 and len([1 for _, tss in history if 1 in tss]) == 8


def test_base_reset_timeout_and_its_main_thread_rule():
    m = create_env_manager(dict(type="base", reset_timeout=0.3), env_fns("HangCountdown-v0", 2, on="reset"))
    m.seed(0, dynamic_seed=False)
    m.launch()  # env 0's first reset hangs: interrupted, renewed
    assert sorted(m.ready_obs) == [0, 1] and m.error_count == 1
    errors = []
    thread = threading.Thread(target=lambda: _catch(errors, m.reset))
    thread.start()
    thread.join()
    assert isinstance(errors[0], EnvError) and "main thread" in str(errors[0])
    assert m.error_count == 1  # a usage error, not an env failure


def _catch(errors, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        errors.append(e)


def test_base_bad_retry_keys_are_refused_and_random_action_is_seeded():
    with pytest.raises(ConfigError, match="retry_type"):
        make_manager("Countdown-v0", retry_type="again")
    with pytest.raises(ConfigError, match="max_retry"):
        make_manager("Countdown-v0", max_retry=0)
    with pytest.raises(ConfigError, match="step_timeout"):
        make_manager("Countdown-v0", step_timeout=-1)
    a, b = make_manager("Countdown-v0"), make_manager("Countdown-v0")
    a.seed(4)
    b.seed(4)
    assert [a.random_action(1) for _ in range(8)] == [b.random_action(1) for _ in range(8)]
