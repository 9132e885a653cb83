"""``EnvStepper``, the one env-stepping core of the collectors, rolloutor and evaluators, on real
env managers of the countdown env (known episode lengths) and of tic-tac-toe (a battle env)."""

from functools import partial

import numpy as np

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import BaseEnvManager, TicTacToeEnv, create_env_manager, get_vec_env_setting
from ding_ray.policy.action_mask import RandomLegalPolicy
from ding_ray.worker.env_stepper import EnvStepper, battle_forward, random_forward


def countdown(env_id="Countdown-v0", n=2):
    env_fn, cfgs, _ = get_vec_env_setting(dict(env_id=env_id, collector_env_num=n, evaluator_env_num=1))
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(0)
    manager.launch()
    return manager


class ScriptedPolicy:
    """Always action 1; remembers the env ids of every ``reset`` call."""

    def __init__(self):
        self.resets = []

    def forward(self, obs, **kwargs):
        return {env_id: {"action": 1, "seen": o[0], **kwargs} for env_id, o in obs.items()}

    def reset(self, data_id=None):
        self.resets.append(data_id)


def test_steps_count_episode_lengths_and_reset_the_policy_at_episode_ends():
    env, policy = countdown(), ScriptedPolicy()
    stepper = EnvStepper(env, [policy])
    for step in range(1, 6):  # Countdown: every episode is 5 steps
        obs = stepper.ready_obs()
        batch = stepper.act(policy.forward, obs, eps=0.5)
        assert batch.env_ids.tolist() == [0, 1] and batch.steps == 2
        assert batch.length.tolist() == [step, step]
        assert batch.obs == [obs[0], obs[1]]  # what each env acted on, with its output
        assert [out["seen"] for out in batch.outputs] == [obs[0][0], obs[1][0]]
        assert [out["eps"] for out in batch.outputs] == [0.5, 0.5]
        assert [t.obs[0] for t in batch.timesteps] == [5 - step, 5 - step]
        assert batch.done.tolist() == [step == 5] * 2 and not batch.abnormal.any()
    assert policy.resets == [[0, 1]]  # once, when both episodes ended
    assert stepper.episode_length.tolist() == [0, 0]
    assert stepper.act(policy.forward, stepper.ready_obs()).length.tolist() == [1, 1]  # a new episode
    env.close()


def test_a_failed_step_is_no_step_and_ends_the_episode():
    env, policy = countdown("CountdownCrash-v0", n=1), ScriptedPolicy()  # raises in its 3rd step, once
    stepper = EnvStepper(env, [policy])
    batches = [stepper.act(policy.forward, stepper.ready_obs()) for _ in range(4)]
    assert [b.abnormal.tolist() for b in batches] == [[False], [False], [True], [False]]
    assert [b.steps for b in batches] == [1, 1, 0, 1]
    assert [b.length.tolist() for b in batches] == [[1], [2], [0], [1]]  # the next episode starts at 1
    assert not any(b.done.any() for b in batches)  # a failed step is not an episode end
    assert policy.resets == [[0]] and env.error_count == 1
    env.close()


def test_end_episode_restarts_the_count_where_the_caller_cuts():
    env, policy = countdown(), ScriptedPolicy()
    stepper = EnvStepper(env, [policy])
    stepper.act(policy.forward, stepper.ready_obs())
    stepper.end_episode(1)
    env.reset({1: None})
    assert stepper.episode_length.tolist() == [1, 0] and policy.resets == [[1]]
    assert stepper.act(policy.forward, stepper.ready_obs()).length.tolist() == [2, 1]
    env.close()


def test_random_forward_draws_actions_of_the_env():
    env = countdown(n=3)
    stepper = EnvStepper(env)
    batch = stepper.act(random_forward(env), stepper.ready_obs())
    assert batch.steps == 3 and {out["action"] for out in batch.outputs} <= {0, 1}
    env.close()


def test_battle_forward_gives_each_player_its_own_observation():
    env = BaseEnvManager([partial(TicTacToeEnv, {}) for _ in range(2)])
    env.seed(0)
    env.launch()
    players = [RandomLegalPolicy(seed=0), RandomLegalPolicy(seed=1)]
    stepper = EnvStepper(env, players)
    games, steps = 0, 0
    while games < 4:
        batch = stepper.act(battle_forward([p.forward for p in players]), stepper.ready_obs())
        for out in batch.outputs:
            assert out["action"] == [player["action"] for player in out["players"]]
            assert len(out["action"]) == 2
        steps += batch.steps
        games += int(batch.done.sum())
        for k in np.flatnonzero(batch.done):
            info = batch.timesteps[k].info  # a list: one final info per player
            assert info[0]["eval_episode_return"] == -info[1]["eval_episode_return"]
            assert 5 <= batch.length[k] <= 9  # a line of three takes 5 moves at least; 9 fill the board
    assert steps >= 4 * 5 and stepper.episode_length.max() < 9
    env.close()
