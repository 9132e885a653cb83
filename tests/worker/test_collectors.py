from functools import partial

import numpy as np
import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import EpisodeSerialCollector, InteractionSerialEvaluator, SampleSerialCollector

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def env_manager(env_id="Countdown-v0", n=3, seed=0):
    env_fn, cfgs, _ = get_vec_env_setting(dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1))
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(seed)
    return manager


def policy(**over):
    return DQNPolicy(dict(model=MODEL, **over))


def test_exact_sample_counts_and_envstep():
    collector = SampleSerialCollector(dict(n_sample=7), env_manager(), policy().collect_mode)
    data = collector.collect(policy_kwargs={"eps": 0.5})
    assert len(data) == 7 and collector.envstep == 9  # 3 envs step together: 3 steps of 3
    more = collector.collect(n_sample=7, drop_extra=False)
    assert len(more) >= 7 and collector.envstep > 9 and collector.envstep % 3 == 0
    assert set(data[0]) >= {"obs", "next_obs", "action", "reward", "done"}
    with pytest.raises(ConfigError):
        SampleSerialCollector(dict(), env_manager(), policy().collect_mode).collect()


def test_transitions_carry_collect_iter_and_stay_numpy_inside():
    """DI-engine's collectors add ``collect_iter`` (the ``train_iter`` of the call) to every
    transition; inside, ding_ray's collectors keep numpy and Python numbers, never a tensor per env."""
    collector = SampleSerialCollector(dict(n_sample=6), env_manager(), policy().collect_mode)
    data = collector.collect(train_iter=17, policy_kwargs={"eps": 0.5})
    assert [t["collect_iter"] for t in data] == [17] * 6
    assert all(type(t["action"]) is int for t in data)
    episodes = EpisodeSerialCollector(dict(n_episode=2), env_manager(), policy().collect_mode).collect(
        train_iter=3
    )
    assert {t["collect_iter"] for episode in episodes for t in episode} == {3}


def test_transitions_follow_the_env_and_mark_termination():
    collector = SampleSerialCollector(dict(n_sample=30), env_manager(n=1), policy().collect_mode)
    data = collector.collect(drop_extra=False)
    for t in data:  # Countdown: obs[0] counts down by one per step; terminal exactly at 0
        assert t["next_obs"][0] == t["obs"][0] - 1
        assert t["done"] == (t["next_obs"][0] == 0)
    assert sum(t["done"] for t in data) == 6


def test_a_time_limit_is_done_as_in_di_engine_unless_bootstrap_on_truncation():
    # the 4-step time limit cuts a 50-step episode: DI-engine's transitions mark it done
    for bootstrap, dones in ((False, [3, 7, 11]), (True, [])):
        learn = dict(bootstrap_on_truncation=bootstrap)
        manager = env_manager("CountdownTrunc-v0", n=1)
        data = SampleSerialCollector(dict(n_sample=12), manager, policy(learn=learn).collect_mode).collect()
        assert [i for i, t in enumerate(data) if t["done"]] == dones


def test_nstep_samples_never_cross_episode_boundaries():
    collector = SampleSerialCollector(
        dict(n_sample=200), env_manager(n=4), policy(nstep=3, discount_factor=0.9).collect_mode
    )
    data = collector.collect(policy_kwargs={"eps": 1.0})
    assert len(data) == 200
    for s in data:
        k = int(np.count_nonzero(s["reward"]))  # Countdown pays 1 per real step
        assert s["next_obs"][0] == s["obs"][0] - k and s["next_obs"][1] == s["obs"][1]  # same episode
        assert s["value_gamma"] in (np.float32(0.9**3), np.float32(0.9 ** (k - 1)))


def test_nstep_windows_end_at_each_piece_as_di_engine_cuts_them():
    """DI-engine's collector hands an env's trajectory over every ``n_sample / env_num`` steps (here 3)
    and at the episode's end; each piece's last windows are shortened there and bootstrap from its
    last ``next_obs`` with ``gamma ** (k - 1)`` for k real steps (``get_nstep_return_data``)."""
    collector = SampleSerialCollector(
        dict(n_sample=3), env_manager(n=1), policy(nstep=3, discount_factor=0.9).collect_mode
    )
    data = collector.collect(n_sample=5)  # one 5-step episode: pieces of 3 and 2 steps
    assert [s["obs"][0] for s in data] == [5, 4, 3, 2, 1]
    assert [s["reward"].tolist() for s in data] == [[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 0], [1, 0, 0]]
    assert [s["next_obs"][0] for s in data] == [2, 2, 2, 0, 0]
    assert [bool(s["done"]) for s in data] == [False, False, False, True, True]
    assert [s["value_gamma"] for s in data] == pytest.approx([0.81, 0.9, 1.0, 0.9, 1.0])
    longer = SampleSerialCollector(
        dict(n_sample=8), env_manager(n=1, env_id="CountdownTrunc-v0"), policy(nstep=2).collect_mode
    )
    gamma = longer.collect(n_sample=8)[0]["value_gamma"]  # a window well inside its piece
    assert gamma == pytest.approx(0.97**2)


def test_on_policy_collect_drops_each_env_s_unfinished_piece():
    """As DI-engine's collector does for an on-policy policy, a call's unfinished pieces are not
    handed to the next call: its samples start at the envs' current steps (the episodes go on)."""
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=2, evaluator_env_num=1)
    )
    cfgs[1].kwargs = {"length": 3}  # env 1's episodes end two steps before env 0's: out of phase
    for on_policy, expected in ((True, [2, 1, 3, 2]), (False, [3, 2, 1, 3, 2])):
        manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
        manager.seed(0)
        mode = DQNPolicy(dict(model=MODEL, on_policy=on_policy)).collect_mode
        collector = SampleSerialCollector(dict(n_sample=4), manager, mode)  # pieces of 2 steps
        assert [s["obs"][0] for s in collector.collect()] == [5, 4, 3, 2]
        # env 1 ends its episode; env 0's step from 3 is a piece unfinished at the call's end
        assert [s["obs"][0] for s in collector.collect(n_sample=1)] == [1]
        assert [s["obs"][0] for s in collector.collect(drop_extra=False)] == expected


def test_episode_collector_returns_whole_episodes():
    collector = EpisodeSerialCollector(dict(n_episode=4), env_manager(n=3), policy().collect_mode)
    episodes = collector.collect(policy_kwargs={"eps": 0.2})
    assert len(episodes) == 4 and all(len(e) == 5 and e[-1]["done"] for e in episodes)
    assert collector.envstep >= 20


def test_crashing_env_does_not_stop_collection():
    manager = env_manager("CountdownCrash-v0", n=2)
    collector = SampleSerialCollector(dict(n_sample=20), manager, policy().collect_mode)
    data = collector.collect()
    assert len(data) == 20 and manager.error_count == 2
    for t in data:
        assert t["next_obs"][0] == t["obs"][0] - 1  # no transition spans a crash


def test_warm_up_uses_env_action_space():
    collector = SampleSerialCollector(dict(n_sample=50), env_manager(), policy().collect_mode)
    actions = [int(t["action"]) for t in collector.warm_up()]
    assert set(actions) == {0, 1}


def test_collect_acts_with_the_policy_also_when_called_as_di_engines_random_collect():
    """DI-engine's ``random_collect`` swaps a random policy in and calls ``collect(random_collect=True,
    record_random_collect=False)``: the flag leaves the log out, the actions stay the policy's."""
    greedy = policy().collect_mode
    plain = SampleSerialCollector(dict(n_sample=30), env_manager(), greedy)
    flagged = SampleSerialCollector(dict(n_sample=30), env_manager(), greedy)
    np.random.seed(0)  # each step's eps draw and the envs' reset seeds share numpy's global stream
    expected = [int(t["action"]) for t in plain.collect(policy_kwargs={"eps": 0.0})]
    np.random.seed(0)
    got = flagged.collect(random_collect=True, record_random_collect=False, policy_kwargs={"eps": 0.0})
    assert [int(t["action"]) for t in got] == expected


def test_evaluator_returns_known_mean_saves_best_and_stops(tmp_path):
    env_fn, _, cfgs = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=1, evaluator_env_num=2)
    )
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(0, dynamic_seed=False)
    evaluator = InteractionSerialEvaluator(
        dict(eval_freq=10, n_episode=5, stop_value=5), manager, policy().eval_mode
    )
    saved = []
    assert evaluator.should_eval(0) and not evaluator.should_eval(0) and not evaluator.should_eval(5)
    stop, info = evaluator.eval(saved.append, train_iter=0, envstep=0)
    assert not stop  # the stop value only counts once training has begun
    assert info["eval_episode_return"] == [5.0] * 5 and info["eval_episode_return_mean"] == 5.0
    assert saved == ["ckpt_best.pth.tar"]
    assert evaluator.should_eval(10)
    stop, _ = evaluator.eval(saved.append, train_iter=10, envstep=100)
    assert stop and saved == ["ckpt_best.pth.tar"]  # not better than the best: no new checkpoint


def test_deepcopy_obs_keeps_transitions_of_envs_that_reuse_their_obs_array():
    """DI-engine's collector key ``deepcopy_obs``: an env that writes each observation into the
    same array would otherwise leave every stored stack equal to its latest one."""

    def collect(deepcopy_obs):
        manager = env_manager(n=1)
        collector = SampleSerialCollector(
            dict(n_sample=5, deepcopy_obs=deepcopy_obs), manager, policy().collect_mode
        )
        shared = {}
        step = manager.step

        def reusing_step(actions):  # the env's observation array, overwritten in place each step
            timesteps = step(actions)
            for i, ts in timesteps.items():
                buf = shared.setdefault(i, np.array(ts.obs))
                buf[...] = ts.obs
                timesteps[i] = ts._replace(obs=buf)
            return timesteps

        manager.step = reusing_step
        data = collector.collect(drop_extra=False)
        collector.close()
        return [t["next_obs"][0] for t in data]

    copied = collect(True)
    assert len(set(np.round(copied, 6).tolist())) == len(copied)  # Countdown: every step differs
    assert len(set(np.round(collect(False), 6).tolist())) < len(copied)
