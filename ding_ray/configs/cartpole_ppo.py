"""PPO on CartPole-v1 (on-policy serial pipeline), close to rl-zoo3's tuned CartPole PPO, to an
evaluation return of 475; ``python benchmarks/bench_serial_examples.py`` measures the env steps each
seed needs.

8 envs x 32 steps per collect, 20 epochs of minibatches of 256, gamma 0.98, GAE lambda 0.8, lr
falling linearly from 1e-3, separate actor and critic networks with tanh activations.
``max_env_step`` and ``mode`` are the budget and pipeline ``ding-ray train`` uses by default.
"""

main_config = dict(
    exp_name="cartpole_ppo",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        action_space="discrete",
        model=dict(
            obs_shape=4,
            action_shape=2,
            share_encoder=False,  # separate actor and critic networks, as SB3's MlpPolicy
            activation="tanh",  # SB3's MlpPolicy's too
            encoder_hidden_size_list=[64, 64],
            actor_head_hidden_size=64,
            critic_head_hidden_size=64,
            actor_head_layer_num=0,
            critic_head_layer_num=0,
        ),
        learn=dict(
            bootstrap_on_truncation=True,  # targets bootstrap at a time limit (rl-zoo3); DI-engine's: False
            epoch_per_collect=20,
            batch_size=256,
            learning_rate=1e-3,
            # linear decay to 0 over 100k env steps (390 collects of 256), as rl-zoo3's lin_1e-3
            lr_scheduler=dict(epoch_num=390, min_lr_lambda=0.0),
            value_weight=0.5,
            entropy_weight=0.0,
            clip_ratio=0.2,
            # rl-zoo3 uses no value normalisation; with DI-engine's value_norm=True, seeds 0-2 took
            # 40k / 22k / 10k env steps instead of 19k / 14k / 14k (ReLU, earlier random draws)
            value_norm=False,
            # torch's default init instead of DI-engine's orthogonal one (gain 1): seeds 0-5 reached
            # 475 in 1.7k-36k env steps (median 10.5k) against 2.8k-27k (median 16k) (ReLU, earlier draws)
            ppo_param_init=False,
        ),
        collect=dict(n_sample=256, discount_factor=0.98, gae_lambda=0.8),
        # eval_freq counts gradient steps, as in DI-engine: a collect trains 20 epochs x 1 minibatch,
        # so 40 is every 2 collects (512 env steps)
        eval=dict(evaluator=dict(eval_freq=40)),
    ),
    # On Ray (the sync pipeline; the serial one ignores this section): one collector actor with
    # the 8 envs, so a round's data is the serial pipeline's and so is the learning (seeds 0-2
    # reach 475 at the same env steps). CartPole's steps take microseconds: on 2 cores more
    # collector actors only add round trips; on a cluster raise it (and the envs with it).
    ray=dict(num_collectors=1),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
max_env_step = 100_000
mode = "serial"
