"""DQN on Acrobot-v1 with the serial pipeline: the same loop as CartPole, another gymnasium task.

Run:
    python examples/acrobot_dqn.py --seed 0

Stops when the evaluation mean reaches -100 (a random policy scores about -500).
"""

import argparse
import json

from ding_ray.entry import read_result, serial_pipeline

main_config = dict(
    exp_name="acrobot_dqn",
    env=dict(
        env_id="Acrobot-v1", collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=-100
    ),
    policy=dict(
        # obs_shape and action_shape are read from the env when left out
        model=dict(encoder_hidden_size_list=[256, 256], dueling=False),
        nstep=1,
        discount_factor=0.99,
        # one gradient step per env step: Acrobot's sparse progress needs a high replay ratio
        learn=dict(update_per_collect=32, batch_size=128, learning_rate=6.3e-4, target_update_freq=250),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=2000)),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=12000),
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
    parser.add_argument("--max-env-step", type=int, default=60_000)
    args = parser.parse_args()
    main_config["exp_name"] = f"acrobot_dqn_seed{args.seed}"
    serial_pipeline((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
    print(json.dumps(read_result(main_config["exp_name"])))
