"""SAC on MuJoCo Hopper-v5 (serial pipeline, or Ray async): rl-zoo3's Hopper SAC settings.

Needs the ``mujoco`` extra (``pip install "ding_ray[mujoco]"``). 10,000 uniform random steps first,
then one gradient step of 256 per env step, lr 3e-4, gamma 0.99, Polyak rate 0.005, 256x256 actor
and critics, automatic entropy temperature: Stable-Baselines3's tuned Hopper SAC. Hopper's action
space is already [-1, 1]; ``env.act_scale=True`` keeps that explicit for SAC's tanh actions.
``max_env_step`` and ``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="hopper_sac",
    env=dict(
        env_id="Hopper-v5",
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=3000,
        act_scale=True,
    ),
    policy=dict(
        cuda=False,
        random_collect_size=10000,  # rl-zoo3's learning_starts
        transition_with_policy_data=False,  # uniform warm-up actions, as SB3's (SAC's default: the policy)
        model=dict(
            obs_shape=11,
            action_shape=3,
            twin_critic=True,
            action_space="reparameterization",
            # an input layer and one hidden layer: 256x256, as SB3's net_arch=[256, 256]
            actor_head_hidden_size=256,
            actor_head_layer_num=1,
            critic_head_hidden_size=256,
            critic_head_layer_num=1,
        ),
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            update_per_collect=1,  # one gradient step per env step (SB3's train_freq=1)
            batch_size=256,
            learning_rate_q=3e-4,
            learning_rate_policy=3e-4,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
        ),
        collect=dict(n_sample=1),
        # eval_freq counts train iterations (one per env step after the random ones): an
        # evaluation every 5,000 env steps
        eval=dict(evaluator=dict(eval_freq=5000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
    # On Ray (the async pipeline; the serial one ignores this section): one collector actor,
    # 32 transitions per call, the serial replay ratio (256 sampled items per transition) kept by
    # the rate limiter, training from 10,000 transitions on.
    ray=dict(
        num_collectors=1,
        n_sample=32,
        samples_per_insert=256.0,
        train_iters_per_call=8,
        publish_freq=8,
        min_replay_size=10000,
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="sac"),
    replay_buffer=dict(type="naive"),
)
max_env_step = 100_000
mode = "serial"
