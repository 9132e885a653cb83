"""dizoo/classic_control/cartpole/config/cartpole_ppo_config.py of DI-engine 0.5.3, values unchanged.

Changed, as the compatibility issue allows: the env type (``'cartpole'`` -> ``'gymnasium'``, its
``import_names`` dropped) and ``env.env_id`` added (dizoo's cartpole env is CartPole-v0). The
policy keeps DI-engine's defaults for what the file does not set (value_norm=True,
ppo_param_init=True, recompute_adv=True, adv_norm=True, grad clip norm 0.5).
"""

from easydict import EasyDict

cartpole_ppo_config = dict(
    exp_name="cartpole_ppo_seed0",
    env=dict(
        env_id="CartPole-v0",  # changed: the env id
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        action_space="discrete",
        model=dict(
            obs_shape=4,
            action_shape=2,
            action_space="discrete",
            encoder_hidden_size_list=[64, 64, 128],
            critic_head_hidden_size=128,
            actor_head_hidden_size=128,
        ),
        learn=dict(
            epoch_per_collect=2,
            batch_size=64,
            learning_rate=0.001,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            resume_training=False,
        ),
        collect=dict(
            n_sample=256,
            unroll_len=1,
            discount_factor=0.9,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
)
cartpole_ppo_config = EasyDict(cartpole_ppo_config)
main_config = cartpole_ppo_config
cartpole_ppo_create_config = dict(
    env=dict(type="gymnasium"),  # changed: the env type
    env_manager=dict(type="base"),
    policy=dict(type="ppo"),
)
cartpole_ppo_create_config = EasyDict(cartpole_ppo_create_config)
create_config = cartpole_ppo_create_config

if __name__ == "__main__":
    from ding_ray.entry import serial_pipeline_onpolicy

    serial_pipeline_onpolicy((main_config, create_config), seed=0)
