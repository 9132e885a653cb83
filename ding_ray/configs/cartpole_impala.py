"""IMPALA on CartPole-v1 (Ray pipeline): collector actors stream unrolls into the buffer actor, the
bounded queue; the learner trains on them with V-trace as they come and never waits for the
collectors (``ray.backpressure='block'``: the collectors wait instead, once they are ahead).

``ding-ray train cartpole_impala --mode ray``, seeds 0-2, on the 2 cores (quiet, 2026-11-26):
475 reached 12.8 / 15.9 / 14.6 s after launch (median 14.6 s), at 26,816 / 47,056 / 37,048 env
steps; 2,600-3,600 env steps/s, learner busy 0.82-0.83, policy lag median 44 learner iterations,
p95 72-76 (an earlier round of the same seeds: 13.4 / 11.5 / 11.0 s). Sync PPO on Ray beside it
(``cartpole_ppo --mode ray``, one collector actor): 12.0 / 9.6 / 10.7 s. ``max_env_step`` and
``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="cartpole_impala",
    env=dict(
        env_id="CartPole-v1", collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=475
    ),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64]),
        unroll_len=16,  # steps per train sample (one V-trace unroll)
        # 8 gradient steps of 16 unrolls per 16 unrolls collected: each unroll is sampled about 8
        # times (the serial pipeline's replay ratio); a serial sweep solved in the fewest env steps
        # with 8 against 4
        learn=dict(update_per_collect=8, batch_size=16, learning_rate=1e-3, discount_factor=0.99),
        collect=dict(n_sample=16),  # unrolls per collect call
        eval=dict(evaluator=dict(eval_freq=100)),  # learner iterations between evaluations
        # The queue: 128 unrolls, each used at most 16 times. 256 doubled the policy lag (median
        # 76) and one seed in three did not solve in 300k env steps.
        other=dict(replay_buffer=dict(replay_buffer_size=128, max_use=16)),
    ),
    ray=dict(
        num_collectors=2,
        backpressure="block",  # the learner never waits on data; the collectors wait when ahead
        train_iters_per_call=4,  # gradient steps per learner call (64 unrolls sampled per call)
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="impala"),
)
max_env_step = 300_000
mode = "ray"
