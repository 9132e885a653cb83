"""DQN on CartPole-v1 with the serial pipeline (one process, no Ray).

Run:
    python examples/cartpole_dqn.py --seed 0

The config is DI-engine's: a ``main_config`` with the hyperparameters and a ``create_config``
naming the component types. Results land in ``cartpole_dqn_seed<seed>/`` (config, TensorBoard
logs under ``log/``, checkpoints under ``ckpt/``, ``result.json``).
"""

import argparse
import json

from ding_ray.entry import read_result, serial_pipeline

main_config = dict(
    exp_name="cartpole_dqn",
    env=dict(
        env_id="CartPole-v1",
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=475,
    ),
    policy=dict(
        cuda=False,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True),
        nstep=3,
        discount_factor=0.99,
        # 16 gradient steps per 32 env steps: a replay ratio of 0.5 updates per env step
        learn=dict(
            update_per_collect=16,
            batch_size=64,
            learning_rate=1e-3,
            target_update_freq=100,
            # Huber loss: large early TD errors no longer dominate a step (seeds 0-4 solved in
            # 4.6k-12.7k env steps; with the squared error one seed in five stalled below 475).
            huber_kappa=1.0,
        ),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=200)),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.05, decay=8000),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
)
create_config = dict(
    env=dict(type="gymnasium"),
    env_manager=dict(type="base"),
    policy=dict(type="dqn"),
    # Uniform replay, as tuned: without a type the buffer is DI-engine's default, 'advanced'
    # (prioritized), with which seed 0 of CartPole needs 20k env steps instead of 4.6k.
    replay_buffer=dict(type="naive"),
)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-env-step", type=int, default=30_000)
    args = parser.parse_args()
    main_config["exp_name"] = f"cartpole_dqn_seed{args.seed}"
    serial_pipeline((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
    print(json.dumps(read_result(main_config["exp_name"])))
