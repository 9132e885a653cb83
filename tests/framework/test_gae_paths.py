"""The two ways a PPO pipeline gets its advantages agree: ``gae_estimator(cfg, policy)`` after a
step collector, and the policy's ``get_train_sample`` (what the serial collectors and the
collector actors call), with value and observation normalisation on (CartPole-v1, real envs)."""

import copy
from functools import partial

import numpy as np
import torch

from ding_ray.config import compile_config
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import StepCollector, gae_estimator, trainer
from ding_ray.policy import create_policy

MAIN = dict(
    env=dict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1, stop_value=500),
    policy=dict(
        obs_norm=True,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16]),
        learn=dict(epoch_per_collect=2, batch_size=32, value_norm=True),
        collect=dict(n_sample=64, discount_factor=0.9, gae_lambda=0.8),
    ),
)
CREATE = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="ppo"))


def chunks(transitions, end_idx):
    """Each env's trajectory pieces, as a collector hands them to ``get_train_sample``."""
    start = 0
    for end in end_idx:
        yield transitions[start : end + 1]
        start = end + 1


def test_gae_estimator_gives_the_collectors_advantages_with_value_and_obs_norm(tmp_path):
    torch.manual_seed(0)
    main = copy.deepcopy(MAIN)
    main["exp_name"] = str(tmp_path / "exp")
    cfg = compile_config(main, seed=0, auto=True, create_cfg=CREATE, save_cfg=False)
    policy = create_policy(cfg.policy)
    env_fn, env_cfgs, _ = get_vec_env_setting(cfg.env)
    env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])
    get_train_sample = policy.collect_mode.get_train_sample
    collected, compared = None, []

    def keep_collected(ctx):
        nonlocal collected
        collected = copy.deepcopy(ctx.trajectories)  # gae_estimator writes into the transitions

    def collectors_path(ctx):
        """get_train_sample on the same transitions, with the statistics gae_estimator used."""
        samples = [s for c in chunks(collected, ctx.trajectory_end_idx) for s in get_train_sample(c)]
        value_stats = policy.learn_mode.get_attribute("running_mean_std")
        obs_stats = policy.collect_mode.get_attribute("obs_norm")
        compared.append((samples, ctx.train_data, float(value_stats.std), obs_stats.count))

    with Task(OnlineRLContext()) as task:
        task.use(StepCollector(cfg, policy.collect_mode, env))
        task.use(keep_collected)
        task.use(gae_estimator(cfg, policy.collect_mode))
        task.use(collectors_path)
        task.use(trainer(cfg, policy.learn_mode))  # moves both statistics away from the identity
        task.run(max_step=3)
    env.close()

    assert [c[3] for c in compared] == [0, 64, 128]  # observations seen by the statistics
    for samples, train_data, scale, _ in compared:
        assert [s["traj_flag"] for s in samples] == [d["traj_flag"] for d in train_data]
        for key in ("adv", "value"):
            expected = np.array([s[key] for s in samples], np.float32)
            np.testing.assert_allclose([d[key] for d in train_data], expected, rtol=1e-5, atol=1e-5)
        value, adv = (np.array([d[k] for d in train_data]) for k in ("value", "adv"))
        # the critic's target, in its own units (values divided by the returns' running std)
        np.testing.assert_allclose([d["return"] for d in train_data], value + adv / scale, rtol=1e-5)
    assert abs(compared[-1][2] - 1.0) > 0.1  # value_norm's std, away from 1
    samples = compared[-1][0]  # terminations and cuts (or time limits) both occur
    assert any(s["done"] for s in samples) and any(s["traj_flag"] and not s["done"] for s in samples)
