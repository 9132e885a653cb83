"""IMPALA on CartPole-v1 (Ray pipeline): collector actors stream unrolls into the buffer actor, the
bounded queue; the learner trains on them with V-trace as they come and never waits for the
collectors (``ray.backpressure='block'``: the collectors wait instead, once they are ahead).

``ding-ray train cartpole_impala --mode ray``, seeds 0-2, on the 2 cores (quiet, 2026-11-26, the
collectors pushing into the queue themselves), two rounds: 475 reached 27.1 / 13.6 / 10.1 s and
43.8 / 11.7 / 15.5 s after launch (medians 13.6 and 15.5 s), all six solved; three later quiet
rounds took 31.3 / 26.3 / 30.5, 18.6 / 15.3 / 20.2 and 27.0 / 18.4 / 19.6 s (19k-97k env steps; the
first batch comes 8.5-11 s after launch). DI-engine's discount of 0.9 was no better (19.5 / 19.1 /
14.0 s, then two rounds with seed 0 unsolved at 200k); learner busy 0.85-0.90
over the whole run, policy lag median 40-44 learner iterations, p95 72-76. With a learning rate of
1e-3 one round of three solved (30.3 / 11.7 / 13.3 s), the next lost seed 0 to a policy that
collapsed onto one action (eval return 9.4 to the 300k budget), and so did a round with the
gradient norm clipped at 0.5; with DI-engine's entropy weight (1e-4) seeds 0 and 2 collapsed in
one round of two.
``benchmarks/bench_impala.py`` (60-s windows at steady state, same 2 collectors, entropy weight
1e-4): 2,744-3,028 env steps/s against 1,050-1,277 for sync PPO on Ray (2.15-2.78x), learner busy
0.90. ``max_env_step`` and ``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
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
        learn=dict(
            update_per_collect=8,
            batch_size=16,
            learning_rate=5e-4,  # 1e-3 collapsed seed 0 in one round of two (see above)
            discount_factor=0.99,
            # DI-engine's 1e-4 let the policy collapse to one action (eval return 9.4 to the end of
            # 300k env steps) in 2 of seeds 0-2 on 2026-11-26; 3e-3 and 1e-2 solved all three
            entropy_weight=0.003,
        ),
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
