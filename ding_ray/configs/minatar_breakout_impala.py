"""IMPALA on MinAtar Breakout (Ray: the collectors stream unrolls, the learner never waits for them).

The MinAtar comparison's asynchronous side, beside Ape-X DQN (``minatar_breakout_dqn``) and sync PPO
(``minatar_breakout_ppo``) with the same encoder, the same 2 collector actors and the same 1M env
steps.

Unrolls of 20 steps (the IMPALA paper's), 8 envs per collector, batches of 32 unrolls, Adam at
5e-4, entropy weight 0.01, the paper's V-trace (lambda 1, rho and c clipped at 1) and its gradient
norm clip of 40. The queue holds 256 unrolls; each is sampled about 4 times (at most 8).
``benchmarks/bench_minatar.py --sides impala`` runs it. ``max_env_step`` and ``mode`` are the
budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="minatar_breakout_impala",
    env=dict(
        env_id="MinAtar/Breakout-v1",  # observations (4, 10, 10) float32 0/1, channels first
        collector_env_num=8,  # per collector actor
        evaluator_env_num=10,
        n_evaluator_episode=20,  # as minatar_breakout_dqn: returns spread widely (sticky actions)
        stop_value=None,  # run the whole budget
    ),
    policy=dict(
        # The MinAtar paper's encoder, stated in full: conv 16 3x3/1 + ReLU, linear 128;
        # shared by the actor and critic heads
        model=dict(
            obs_shape=[4, 10, 10],
            action_shape=3,
            encoder_hidden_size_list=[16, 128],
            encoder_kernel_size=[3],
            encoder_stride=[1],
        ),
        unroll_len=20,
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            # on Ray a samples-per-insert ratio of 1 x 32 / 8 = 4: each unroll is sampled ~4 times
            update_per_collect=1,
            batch_size=32,  # unrolls per gradient step
            learning_rate=5e-4,
            value_weight=0.5,
            entropy_weight=0.01,
            discount_factor=0.99,
            lambda_=1.0,
            grad_clip_type="clip_norm",
            clip_value=40.0,
        ),
        collect=dict(n_sample=8),  # unrolls per collect call: one of each of the 8 envs
        # learner iterations: about 6,250 in 1M env steps, so 125 is about every 20k env steps
        eval=dict(evaluator=dict(eval_freq=125)),
        other=dict(replay_buffer=dict(replay_buffer_size=256, max_use=8)),
    ),
    ray=dict(
        num_collectors=2,
        backpressure="block",  # the learner never waits on data; the collectors wait when ahead
        train_iters_per_call=4,
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="impala"),
)
max_env_step = 1_000_000
mode = "ray"
