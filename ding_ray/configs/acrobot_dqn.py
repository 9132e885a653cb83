"""DQN on Acrobot-v1 (serial pipeline): stops at an evaluation mean of -100 (random: about -500).

``max_env_step`` and ``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="acrobot_dqn",
    env=dict(
        env_id="Acrobot-v1", collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=-100
    ),
    policy=dict(
        # obs_shape and action_shape are read from the env when left out
        model=dict(encoder_hidden_size_list=[256, 256], dueling=False),
        nstep=1,
        discount_factor=0.99,
        # one gradient step per env step: Acrobot's sparse progress needs a high replay ratio
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            update_per_collect=32,
            batch_size=128,
            learning_rate=6.3e-4,
            target_update_freq=250,
        ),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=2000)),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=12000),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
    # Uniform replay, as for CartPole (the default 'advanced' buffer is prioritized).
    replay_buffer=dict(type="naive"),
)
max_env_step = 60_000
mode = "serial"
