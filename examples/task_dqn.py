"""DQN on CartPole-v1 as a middleware pipeline: DI-engine's ``task.use(...)`` form, one process.

Run:
    python examples/task_dqn.py --seed 0

Each iteration of the task evaluates when due (and ends the run at ``stop_value``), collects
``n_sample`` transitions with epsilon-greedy exploration, pushes them into the replay buffer and
trains ``update_per_collect`` minibatches. The stages are the plain local ones; the same pipeline
with Ray actor handles in place of the collector, buffer and learner scales out. Checkpoints land
in ``task_dqn_seed<seed>/ckpt`` (``eval.pth.tar`` holds the best evaluated weights).
"""

import argparse
import copy
import json
import time
from functools import partial

from ding_ray.config import compile_config
from ding_ray.configs.cartpole_dqn import create_config, main_config  # seeds 0-2: 475 at the same steps
from ding_ray.data import create_buffer
from ding_ray.entry.cli_commands import exit_on_interrupt
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import (
    OffPolicyLearner,
    ckpt_saver,
    collector,
    data_pusher,
    eps_greedy_handler,
    interaction_evaluator,
    termination_checker,
)
from ding_ray.policy import create_policy
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import BaseLearner, SampleSerialCollector


def main(seed: int = 0, max_env_step: int = 30_000, **env_over) -> OnlineRLContext:
    """Train until the evaluation return reaches ``env.stop_value`` or ``max_env_step`` runs out;
    ``env_over`` overrides keys of ``env`` (the test asks for a lower ``stop_value``). Returns the
    last iteration's context (``env_step``, ``train_iter``, ``last_eval_value``)."""
    # ----- config -----
    config = copy.deepcopy(main_config)
    config["env"].update(env_over)
    config["exp_name"] = f"task_dqn_seed{seed}"
    cfg = compile_config(config, seed=seed, auto=True, create_cfg=create_config, save_cfg=False)
    set_torch_threads(1)
    set_pkg_seed(cfg.seed)

    # ----- components -----
    env_fn, collector_env_cfgs, evaluator_env_cfgs = get_vec_env_setting(cfg.env)
    collector_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfgs])
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfgs])
    collector_env.seed(cfg.seed)
    policy = create_policy(cfg.policy)
    buffer_ = create_buffer(cfg.policy.other.replay_buffer)
    collector_ = SampleSerialCollector(cfg.policy.collect.collector, collector_env, policy.collect_mode)
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)

    # ----- pipeline -----
    with Task(OnlineRLContext()) as task:
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(ckpt_saver(cfg, policy, train_freq=1000))  # next to the evaluator: the evaluated weights
        task.use(eps_greedy_handler(cfg))
        task.use(collector(cfg, collector_))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, learner, buffer_))
        task.use(termination_checker(max_env_step=max_env_step))
        task.run()
    collector_env.close()
    evaluator_env.close()
    return task.ctx


if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        start = time.perf_counter()
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=30_000)
        args = parser.parse_args()
        setup_logging()
        ctx = main(args.seed, args.max_env_step)
        result = dict(
            env_step=ctx.env_step,
            train_iter=ctx.train_iter,
            last_eval_return=ctx.last_eval_value,
            wall_s=round(time.perf_counter() - start, 1),  # from the start of this script's main block
        )
        print(json.dumps(result))
