"""dizoo/classic_control/cartpole/config/cartpole_dqn_config.py of DI-engine 0.5.3, values unchanged.

Changed, as the compatibility issue allows: the env type (``'cartpole'`` -> ``'gymnasium'``, its
``import_names`` dropped) and ``env.env_id`` added (dizoo's cartpole env is CartPole-v0).
Everything else, ``replay_path``, ``load_path`` and the ``deque`` buffer with DI-engine's
``import_names`` included, is as DI-engine ships it.
"""

from easydict import EasyDict

cartpole_dqn_config = dict(
    exp_name="cartpole_dqn_seed0",
    env=dict(
        env_id="CartPole-v0",  # changed: the env id
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
        replay_path="cartpole_dqn_seed0/video",
    ),
    policy=dict(
        cuda=False,
        load_path="cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar",  # necessary for eval
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[128, 128, 64],
            dueling=True,
        ),
        nstep=1,
        discount_factor=0.97,
        learn=dict(
            update_per_collect=5,
            batch_size=64,
            learning_rate=0.001,
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(
            eps=dict(
                type="exp",
                start=0.95,
                end=0.1,
                decay=10000,
            ),
            replay_buffer=dict(replay_buffer_size=20000),
        ),
    ),
)
cartpole_dqn_config = EasyDict(cartpole_dqn_config)
main_config = cartpole_dqn_config
cartpole_dqn_create_config = dict(
    env=dict(type="gymnasium"),  # changed: the env type
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
    replay_buffer=dict(type="deque", import_names=["ding.data.buffer.deque_buffer_wrapper"]),
)
cartpole_dqn_create_config = EasyDict(cartpole_dqn_create_config)
create_config = cartpole_dqn_create_config

if __name__ == "__main__":
    from ding_ray.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
