"""PPO on MinAtar Breakout (the synchronous Ray pipeline; serial too).

The MinAtar comparison's on-policy side, beside Ape-X DQN (``minatar_breakout_dqn``) and IMPALA
(``minatar_breakout_impala``) with the same encoder, the same 2 collector actors and the same 1M env
steps.

Values of the common PPO recipe for small Atari-like games (CleanRL's and gymnax's MinAtar
baselines): 16 envs x 64 steps a round, 4 epochs of minibatches of 256, lr 5e-4, clip 0.2,
entropy weight 0.01, GAE lambda 0.95, gamma 0.99, gradient norm clipped at 0.5.
``benchmarks/bench_minatar.py --sides ppo`` runs it. ``max_env_step`` and ``mode`` are the budget
and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="minatar_breakout_ppo",
    env=dict(
        env_id="MinAtar/Breakout-v1",  # observations (4, 10, 10) float32 0/1, channels first
        collector_env_num=8,  # per collector actor: 16 envs with the 2 actors
        evaluator_env_num=10,
        n_evaluator_episode=20,  # as minatar_breakout_dqn: returns spread widely (sticky actions)
        stop_value=None,  # run the whole budget
    ),
    policy=dict(
        action_space="discrete",
        # The MinAtar paper's encoder, stated in full: conv 16 3x3/1 + ReLU, linear 128;
        # shared by the actor and critic heads
        model=dict(
            obs_shape=[4, 10, 10],
            action_shape=3,
            encoder_hidden_size_list=[16, 128],
            encoder_kernel_size=[3],
            encoder_stride=[1],
        ),
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            epoch_per_collect=4,
            batch_size=256,  # 4 minibatches of a 1,024-step round, 16 gradient steps a round
            learning_rate=5e-4,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
        ),
        collect=dict(n_sample=1024, discount_factor=0.99, gae_lambda=0.95),  # 64 steps of 16 envs
        # gradient steps (train_iter), as in DI-engine: 320 is every 20 rounds (20k env steps)
        eval=dict(evaluator=dict(eval_freq=320)),
    ),
    ray=dict(num_collectors=2),  # a round splits n_sample over them: 512 steps of 8 envs each
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
max_env_step = 1_000_000
mode = "ray"
