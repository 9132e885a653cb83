"""The DI-engine serial loop, written by a user as in the issue, runs against ding_ray's modules."""

import os
from functools import partial

from tensorboardX import SummaryWriter

from ding_ray.config import compile_config
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.policy import create_policy
from ding_ray.rl_utils import get_epsilon_greedy_fn
from ding_ray.worker import BaseLearner, InteractionSerialEvaluator, NaiveReplayBuffer, SampleSerialCollector

main_config = dict(
    exp_name="user_loop",
    env=dict(
        env_id="CartPole-v1", collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2, stop_value=475
    ),
    policy=dict(
        cuda=False,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64], dueling=True),
        nstep=3,
        discount_factor=0.99,
        priority=True,
        learn=dict(update_per_collect=4, batch_size=32, learning_rate=1e-3, target_update_freq=50),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=20)),
        other=dict(
            eps=dict(type="exp", start=1.0, end=0.05, decay=1000), replay_buffer=dict(replay_buffer_size=500)
        ),
    ),
)
create_config = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def test_the_reference_loop_runs(tmp_path):
    os.chdir(tmp_path)
    cfg = compile_config(main_config, seed=0, auto=True, create_cfg=create_config, save_cfg=True)
    env_fn, collector_env_cfg, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    collector_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg])
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    collector_env.seed(cfg.seed)
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "serial"))
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = SampleSerialCollector(
        cfg.policy.collect.collector, collector_env, policy.collect_mode, tb_logger, exp_name=cfg.exp_name
    )
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )
    replay_buffer = NaiveReplayBuffer(cfg.policy.other.replay_buffer, tb_logger, exp_name=cfg.exp_name)
    eps = cfg.policy.other.eps
    epsilon_greedy = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type)
    learner.call_hook("before_run")
    evals = 0
    while learner.train_iter < 60:
        if evaluator.should_eval(learner.train_iter):
            stop, episode_info = evaluator.eval(
                learner.save_checkpoint, learner.train_iter, collector.envstep
            )
            evals += 1
            if stop:
                break
        new_data = collector.collect(
            train_iter=learner.train_iter, policy_kwargs={"eps": epsilon_greedy(collector.envstep)}
        )
        replay_buffer.push(new_data, cur_collector_envstep=collector.envstep)
        for _ in range(cfg.policy.learn.update_per_collect):
            train_data = replay_buffer.sample(learner.policy.get_attribute("batch_size"), learner.train_iter)
            if train_data is None:
                break
            learner.train(train_data, collector.envstep)
            if learner.policy.get_attribute("priority"):
                replay_buffer.update(learner.priority_info)
    learner.call_hook("after_run")
    assert learner.train_iter >= 60 and collector.envstep >= 60 * 16 // 4 and evals >= 3
    assert len(learner.priority_info["priority"]) == 32
    assert os.path.isfile(os.path.join(cfg.exp_name, "ckpt", "ckpt_final.pth.tar"))
    assert os.path.isfile(os.path.join(cfg.exp_name, "ckpt", "ckpt_best.pth.tar"))
