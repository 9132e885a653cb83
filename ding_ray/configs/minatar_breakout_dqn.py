"""DQN on MinAtar Breakout (Ape-X on Ray by default; serial too): MinAtar's 10x10 frames, 4 channels.

Hyperparameters of the MinAtar paper's DQN (Young & Tian, 2019: its network, batch 32, replay
100k, gamma 0.99, Huber loss, lr 2.5e-4, epsilon 1.0 -> 0.1 over the first 100k env steps, 5k
random steps before training, a target update every 1,000 env steps), with a gradient step every
4 env steps (CleanRL's Atari DQN) in place of every step, so 1M env steps (250k gradient steps)
fits on 2 CPU cores; Adam, ding_ray's DQN optimizer, in place of RMSProp. Double DQN, n-step 1.
The Ray run adds Ape-X's prioritized replay (alpha 0.6, beta 0.4 -> 1); the serial run uses it too.
``benchmarks/minatar_dqn_plain.py`` is a single-process DQN with these values (uniform replay),
``benchmarks/bench_minatar.py`` runs both side by side and reports their evaluation returns (20
episodes) at 500k and 1M env steps.

``max_env_step`` and ``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="minatar_breakout_dqn",
    env=dict(
        env_id="MinAtar/Breakout-v1",  # observations (4, 10, 10) float32 0/1, channels first
        # Per collector, as many as n_sample: each env's trajectory is then cut every step. With 8
        # envs (cut every 4 steps) a collect call overshoots where short episodes end and drops the
        # extra transitions, 21% of the env steps measured (DI-engine's drop_extra).
        collector_env_num=32,
        # 20 greedy episodes an evaluation: a trained agent's returns spread widely (sticky actions)
        evaluator_env_num=10,
        n_evaluator_episode=20,
        stop_value=None,  # run the whole budget: the benchmark reads returns at 500k and 1M env steps
    ),
    policy=dict(
        # The MinAtar paper's encoder, stated in full: conv 16 3x3/1 + ReLU, linear 128;
        # then DI-engine's head (linear 128 + ReLU, linear to the 3 Q-values)
        model=dict(
            obs_shape=[4, 10, 10],
            action_shape=3,
            dueling=False,
            encoder_hidden_size_list=[16, 128],
            encoder_kernel_size=[3],
            encoder_stride=[1],
        ),
        nstep=1,
        discount_factor=0.99,
        random_collect_size=5000,  # uniform random env steps before training (MinAtar's replay start)
        priority=True,  # Ape-X: the learner returns |TD error| as new priorities
        priority_IS_weight=True,  # and weights its loss by the importance-sampling weights
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            # 8 gradient steps per 32 env steps: one per 4 env steps (serial), and on Ray a
            # samples-per-insert ratio of 8 x 32 / 32 = 8 (batch 32 every 4 env steps)
            update_per_collect=8,
            batch_size=32,
            learning_rate=2.5e-4,
            target_update_freq=250,  # gradient steps: 1,000 env steps
            huber_kappa=1.0,
        ),
        collect=dict(n_sample=32),  # transitions per collect call: one step of the 32 envs
        eval=dict(evaluator=dict(eval_freq=5000)),  # learner iterations: about every 20k env steps
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=100_000),  # over env steps
            replay_buffer=dict(replay_buffer_size=100_000),
        ),
    ),
    ray=dict(
        num_collectors=2,
        train_iters_per_call=16,  # gradient steps per learner call: one round trip buys many
        publish_freq=16,  # learner iterations between weight publications (64 env steps)
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
    replay_buffer=dict(type="advanced"),  # prioritized
)
max_env_step = 1_000_000
mode = "ray"
