"""RLlib 2.60's EnvRunners sampling Pong (new API stack), in RLlib's own venv.

Started by ``benchmarks/bench_pixels.py`` with the Python of ``.cache/bench_venvs/rllib``; prints
one ``RESULT {json}`` line. The env is RLlib's own Atari recipe (``wrap_atari_for_new_api_stack``:
84x84 grayscale, max-and-skip 4, 30 no-ops, fire reset, a stack of 4 inside the env) on
``ALE/Pong-v5`` with ``frameskip=1`` and sticky actions off; 2 remote EnvRunners x 4 envs (one
CPU each, batched torch inference over their 4 envs), sampled the way PPO's training step does it
(every runner samples one fragment, the episodes come back to the driver). One env step = one
agent step (4 emulator frames).

``--model nature``: RLlib's default CNN encoder given the Nature-CNN layout (32x8/4, 64x4/2,
64x3/1, a 512 head); ``--model default``: RLlib's default filters for 84x84 inputs
(16x8/4, 32x4/2, 256x11/1). ``--no-ship`` counts the steps on each runner and returns only the
count (RLlib's sampling without the trip of the episodes to the driver).
"""

from __future__ import annotations

import argparse

from timing import measure, report

NATURE_FILTERS = [[32, [8, 8], 4], [64, [4, 4], 2], [64, [3, 3], 1]]


def make_env(cfg: dict):
    import ale_py
    import gymnasium as gym
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0, full_action_space=False)
    return wrap_atari_for_new_api_stack(env, dim=84, framestack=4)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("nature", "default"), default="nature")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--envs-per-runner", type=int, default=4)
    parser.add_argument("--fragment", type=int, default=128, help="env steps per env per sample()")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--no-ship", action="store_true")
    args = parser.parse_args()

    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    ray.init(num_cpus=args.num_env_runners, include_dashboard=False, log_to_driver=False)
    tune.register_env("pong84", make_env)
    model = DefaultModelConfig(vf_share_layers=True)
    if args.model == "nature":
        model = DefaultModelConfig(
            conv_filters=NATURE_FILTERS, head_fcnet_hiddens=[512], vf_share_layers=True
        )
    config = (
        PPOConfig()
        .environment("pong84", clip_rewards=True)
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length=args.fragment,
        )
        .learners(num_learners=0)
        # The driver only gathers the samples: the 2 CPUs go to the 2 runners.
        .resources(num_cpus_for_main_process=0)
        .training(train_batch_size=args.num_env_runners * args.envs_per_runner * args.fragment)
        .rl_module(model_config=model)
    )
    algo = config.build_algo()
    group = algo.env_runner_group

    if args.no_ship:

        def step() -> int:
            return sum(
                group.foreach_env_runner(lambda r: sum(len(e) for e in r.sample()), local_env_runner=False)
            )
    else:

        def step() -> int:
            results = group.foreach_env_runner(lambda r: r.sample(), local_env_runner=False)
            return sum(len(e) for episodes in results for e in episodes)

    result = measure(step, args.seconds, args.warmup)
    algo.stop()
    ray.shutdown()
    runners = dict(num_env_runners=args.num_env_runners, envs_per_runner=args.envs_per_runner)
    report(
        dict(result, config=dict(runners, fragment=args.fragment, model=args.model, ship=not args.no_ship))
    )


if __name__ == "__main__":
    main()
