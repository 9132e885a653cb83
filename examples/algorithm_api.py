"""The object API: train CartPole PPO step by step, evaluate, save, restore, act.

Run:
    python examples/algorithm_api.py            # one process
    python examples/algorithm_api.py --ray      # collector, learner and evaluator actors
    ray submit cluster.yaml examples/algorithm_api.py --ray

``ding_ray.Algorithm`` holds the run that ``ding-ray train cartpole_ppo`` makes (same config,
folder ``cartpole_ppo_seed0/``, checkpoints and ``result.json``); each ``train()`` runs the
pipeline until its next evaluation and returns the metrics.
"""

import argparse

import gymnasium as gym

import ding_ray

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ray", action="store_true", help="run on Ray (started here, or RAY_ADDRESS's)")
    args = parser.parse_args()

    # 1. the config: a bundled name (or a file, or (main_config, create_config)) and overrides
    algo = ding_ray.Algorithm("cartpole_ppo", mode="ray" if args.ray else "serial", seed=0)

    # 2. train, one evaluation interval per call, until the stop value or the budget
    for _ in range(200):
        metrics = algo.train()
        print(f"env steps {metrics['env_step']:>6}  eval return {metrics['eval_return']}")
        if metrics["done"]:
            break

    # 3. evaluate now, and keep a checkpoint
    print("evaluation:", algo.evaluate()["eval_return"])
    checkpoint = algo.save()
    algo.stop()  # the actors, envs and run folder are free again

    # 4. a new Algorithm from the checkpoint acts as the trained one
    with ding_ray.Algorithm.from_checkpoint(checkpoint, mode="serial") as restored:
        env = gym.make("CartPole-v1")
        obs, _ = env.reset(seed=0)
        episode_return, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(restored.act(obs))
            episode_return += reward
            done = terminated or truncated
        print("one greedy episode:", episode_return)
