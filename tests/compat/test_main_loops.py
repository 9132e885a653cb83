"""DI-engine's hand-written training loops with ``ding`` replaced by ``ding_ray`` in the imports.

``test_dizoo_main_script`` is dizoo's ``cartpole_dqn_main.py`` (DI-engine 0.5.3) line for line,
with ``gym`` replaced by gymnasium and the closing video evaluation left out (it needs moviepy).
``test_classic_loop_with_each_buffer_class`` is the README loop with each buffer class built from
the buffer section that ``compile_config`` resolved for the config's own buffer type.
"""

import os
from functools import partial

import gymnasium as gym
import pytest
from easydict import EasyDict
from tensorboardX import SummaryWriter

from ding_ray.config import compile_config, read_config
from ding_ray.envs import BaseEnvManager, DingEnvWrapper, create_env_manager, get_vec_env_setting
from ding_ray.model import DQN
from ding_ray.policy import DQNPolicy, create_policy
from ding_ray.rl_utils import get_epsilon_greedy_fn
from ding_ray.utils import set_pkg_seed
from ding_ray.worker import (
    AdvancedReplayBuffer,
    BaseLearner,
    DequeBufferWrapper,
    InteractionSerialEvaluator,
    NaiveReplayBuffer,
    SampleSerialCollector,
)

CARTPOLE = os.path.join(os.path.dirname(__file__), "configs", "cartpole_dqn_config.py")


def wrapped_cartpole_env():
    return DingEnvWrapper(
        gym.make("CartPole-v0"),
        EasyDict(env_wrapper="default"),
    )


def main(cfg, seed=0, max_env_step=4000):
    cfg = compile_config(
        cfg,
        BaseEnvManager,
        DQNPolicy,
        BaseLearner,
        SampleSerialCollector,
        InteractionSerialEvaluator,
        AdvancedReplayBuffer,
        save_cfg=True,
    )
    collector_env_num, evaluator_env_num = cfg.env.collector_env_num, cfg.env.evaluator_env_num
    collector_env = BaseEnvManager(
        env_fn=[wrapped_cartpole_env for _ in range(collector_env_num)], cfg=cfg.env.manager
    )
    evaluator_env = BaseEnvManager(
        env_fn=[wrapped_cartpole_env for _ in range(evaluator_env_num)], cfg=cfg.env.manager
    )

    collector_env.seed(seed)
    evaluator_env.seed(seed, dynamic_seed=False)
    set_pkg_seed(seed, use_cuda=cfg.policy.cuda)

    model = DQN(**cfg.policy.model)
    policy = DQNPolicy(cfg.policy, model=model)

    tb_logger = SummaryWriter(os.path.join("./{}/log/".format(cfg.exp_name), "serial"))  # noqa: UP032
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = SampleSerialCollector(
        cfg.policy.collect.collector, collector_env, policy.collect_mode, tb_logger, exp_name=cfg.exp_name
    )
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )
    replay_buffer = AdvancedReplayBuffer(cfg.policy.other.replay_buffer, tb_logger, exp_name=cfg.exp_name)

    eps_cfg = cfg.policy.other.eps
    epsilon_greedy = get_epsilon_greedy_fn(eps_cfg.start, eps_cfg.end, eps_cfg.decay, eps_cfg.type)

    stop = False
    while collector.envstep < max_env_step:  # the test's budget; dizoo's loop runs until stop
        if evaluator.should_eval(learner.train_iter):
            stop, reward = evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
            if stop:
                break
        eps = epsilon_greedy(collector.envstep)
        new_data = collector.collect(train_iter=learner.train_iter, policy_kwargs={"eps": eps})
        replay_buffer.push(new_data, cur_collector_envstep=collector.envstep)
        for _ in range(cfg.policy.learn.update_per_collect):
            train_data = replay_buffer.sample(learner.policy.get_attribute("batch_size"), learner.train_iter)
            if train_data is None:
                break
            learner.train(train_data, collector.envstep)
    return stop, collector.envstep


def test_dizoo_main_script(tmp_path):
    os.chdir(tmp_path)
    main_config, _ = read_config(CARTPOLE)
    stop, envstep = main(main_config)
    assert stop, f"no stop value within {envstep} env steps"


@pytest.mark.parametrize("buffer_cls", [NaiveReplayBuffer, AdvancedReplayBuffer, DequeBufferWrapper])
def test_classic_loop_with_each_buffer_class(tmp_path, buffer_cls):
    """The config names a 'deque' buffer; each class takes the section compiled for it."""
    os.chdir(tmp_path)
    main_config, create_config = read_config(CARTPOLE)
    cfg = compile_config(main_config, seed=0, auto=True, create_cfg=create_config, save_cfg=True)
    env_fn, collector_env_cfg, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    collector_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg])
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    collector_env.seed(cfg.seed)
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "serial"))
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = SampleSerialCollector(
        cfg.policy.collect.collector, collector_env, policy.collect_mode, tb_logger, exp_name=cfg.exp_name
    )
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )
    replay_buffer = buffer_cls(cfg.policy.other.replay_buffer, tb_logger, exp_name=cfg.exp_name)
    eps = cfg.policy.other.eps
    epsilon_greedy = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type)
    learner.call_hook("before_run")
    stop = False
    while collector.envstep < 6000:
        if evaluator.should_eval(learner.train_iter):
            stop, _ = evaluator.eval(learner.save_checkpoint, learner.train_iter, collector.envstep)
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
    learner.call_hook("after_run")
    assert stop, f"{buffer_cls.__name__}: no stop value within {collector.envstep} env steps"
