"""A small CartPole DQN config shared by the distributed tests (fast to build, fast to train)."""

from __future__ import annotations

import copy

from ding_ray.entry import compile_ray_config


def small_config(exp_name: str, **ray_over) -> tuple[dict, dict]:
    """``(main_config, create_config)`` of a tiny prioritized DQN; ``ray_over`` updates ``ray``."""
    main = dict(
        exp_name=exp_name,
        env=dict(env_id="CartPole-v1", collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2),
        policy=dict(
            model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[32, 32], dueling=False),
            nstep=3,
            discount_factor=0.99,
            priority=True,
            priority_IS_weight=True,
            learn=dict(update_per_collect=4, batch_size=32, learning_rate=1e-3, target_update_freq=50),
            collect=dict(n_sample=32),
            eval=dict(evaluator=dict(eval_freq=40)),
            other=dict(
                eps=dict(type="linear", start=1.0, end=0.1, decay=2000),
                replay_buffer=dict(replay_buffer_size=5000),
            ),
        ),
        ray={
            # one collector: every actor is a process that imports torch (seconds of CPU); the
            # tests about several collectors ask for them
            "num_collectors": 1,
            "progress_bar": False,
            "train_iters_per_call": 4,
            "publish_freq": 4,
            "report_interval_s": 0.5,
            **ray_over,
        },
    )
    create = dict(
        env=dict(type="gymnasium"),
        env_manager=dict(type="base"),
        policy=dict(type="dqn"),
        replay_buffer=dict(type="advanced"),
    )
    return main, create


def compiled(tmp_path, name: str = "exp", **ray_over):
    main, create = small_config(str(tmp_path / name), **ray_over)
    return compile_ray_config((copy.deepcopy(main), create), seed=0, save_cfg=False)
