"""IMPALA on CartPole-v1 (Ray pipeline): one collector actor of 16 envs streams unrolls into the
buffer actor, the bounded queue; the learner trains on them with V-trace as they come and never
waits for the collector (``ray.backpressure='block'``: the collector waits instead, once ahead).

The policy loss is APPO's clipped surrogate (``learn.surrogate_clip_ratio=0.2``, ding_ray's
addition; DI-engine's IMPALA has the plain V-trace policy gradient): each unroll is sampled about 8
times and trained on 40-odd learner iterations after it was collected, and the trust region keeps
those steps from pushing the policy away from the one that collected it. Without it a run could
saturate onto one action and stay at a return of 9 (1 run in 15 with the config before this one).

``ding-ray train cartpole_impala --mode ray``, seeds 0-2, on the 2 cores (2026-11-27, 01:14-01:27,
seven rounds, all 21 runs solved): 475 reached 10.4-21.2 s after launch, median 13.0 s (per-round
medians 14.1, 16.0, 13.8, 13.0, 11.6, 11.6, 13.2 s), at 17k-75k env steps (median 27k); policy lag
median 40-48 learner iterations, p95 72-96. In the same hour the config before (2 collectors of 8
envs, learning rate 3e-4, no surrogate): 21.5 / 12.0 / unsolved at 200k and 20.1 / 13.8 / 24.4 s;
ding_ray's sync PPO on Ray (``cartpole_ppo``): 13.2 / 12.3 / 12.1 and 14.0 / 11.0 / 12.3 s. The
first batch comes 6-9 s after launch (Ray's own start takes 4-5 s of it). The README's IMPALA
section has the variants measured. ``max_env_step`` and ``mode`` are the budget and pipeline
``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="cartpole_impala",
    env=dict(
        env_id="CartPole-v1", collector_env_num=16, evaluator_env_num=5, n_evaluator_episode=5, stop_value=475
    ),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64]),
        unroll_len=16,  # steps per train sample (one V-trace unroll)
        # 8 gradient steps of 16 unrolls per 16 unrolls collected: each unroll is sampled about 8
        # times (the serial pipeline's replay ratio); a serial sweep solved in the fewest env steps
        # with 8 against 4
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            update_per_collect=8,
            batch_size=16,
            # interleaved with 1e-3 (9 runs each): median 23.6k env steps against 29.9k (wall time
            # 13.0 s against 11.7 s: the first batch came 1 s sooner in 1e-3's rounds)
            learning_rate=2e-3,
            discount_factor=0.99,
            entropy_weight=0.003,
            surrogate_clip_ratio=0.2,  # APPO's clipped surrogate (see above)
        ),
        collect=dict(n_sample=16),  # unrolls per collect call
        eval=dict(evaluator=dict(eval_freq=100)),  # learner iterations between evaluations
        # The queue: 128 unrolls, each used at most 16 times. 256 doubled the policy lag (median
        # 76) and one seed in three did not solve in 300k env steps.
        other=dict(replay_buffer=dict(replay_buffer_size=128, max_use=16)),
    ),
    ray=dict(
        # one collector of 16 envs: a second actor process costs the 2 cores its start-up (torch
        # import) and its share of them. With learning rate 1e-3, in the same hour, 12 runs each:
        # 2 collectors of 8 envs median 17.3 s, 1 collector of 16 envs 15.3 s
        num_collectors=1,
        backpressure="block",  # the learner never waits on data; the collector waits when ahead
        # gradient steps per learner call (128 unrolls sampled per call). Each call costs the
        # learner about 1 ms of Ray's dispatch outside training: with 4 per call it was busy 0.88-0.90
        # of the time, with 8 0.917 (bench_impala, 2026-11-27). Launch to 475 on Ray, 15 runs each
        # interleaved (seeds 0-2, five rounds): median 11.6 s for 4 and for 8
        train_iters_per_call=8,
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="impala"),
)
max_env_step = 300_000
mode = "ray"
