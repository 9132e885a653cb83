"""DQN on CartPole-v1 as a middleware pipeline, written out: what ``serial_pipeline`` builds.

Run:
    python examples/task_dqn.py --seed 0

``serial_pipeline`` runs the ``off_policy`` stage list of ``ding_ray.framework.pipelines`` on a
``SerialRun`` (config, envs, policy, collector, replay buffer, learner, evaluator built as in
DI-engine, plus run checkpoints, resume and ``result.json``). Here the same stages are listed one
by one (a test checks that the two stay the same and reach 475 at the same env steps): each
iteration evaluates when due (ending the run at ``stop_value``), collects ``n_sample``
transitions with epsilon-greedy exploration, pushes them into the replay buffer and trains
``update_per_collect`` minibatches. ``examples/apex_dqn.py`` lists the same stages on Ray actors.
Results land in ``task_dqn_seed<seed>/``.
"""

import argparse
import copy
import json

from ding_ray.configs.cartpole_dqn import create_config, main_config  # seeds 0-2: 475 at the same steps
from ding_ray.entry.cli_commands import exit_on_interrupt
from ding_ray.entry.serial_entry import SerialRun
from ding_ray.framework.middleware import (
    OffPolicyLearner,
    collector,
    data_pusher,
    eps_greedy_handler,
    interaction_evaluator,
    random_collector,
    termination_checker,
)
from ding_ray.utils.runtime import setup_logging


def main(seed: int = 0, max_env_step: int = 30_000, **env_over) -> dict:
    """Train until the evaluation return reaches ``env.stop_value`` or ``max_env_step`` runs out;
    ``env_over`` overrides keys of ``env``. Returns the run's ``result.json``."""
    config = copy.deepcopy(main_config)
    config["env"].update(env_over)
    config["exp_name"] = f"task_dqn_seed{seed}"
    # the components, behind the protocols the stages call (on_policy=False: with a replay buffer)
    run = SerialRun(config, create_config, seed, None, None, True, False)
    cfg = run.cfg
    with run, run.task() as task:
        task.use(random_collector(cfg, run.collector, run.buffer))  # once: policy.random_collect_size
        task.use(interaction_evaluator(cfg, run.evaluator))  # every eval_freq iterations; stop value
        task.use(eps_greedy_handler(cfg))  # epsilon by env steps
        task.use(collector(cfg, run.collector))  # n_sample transitions
        task.use(data_pusher(cfg, run.buffer))
        # update_per_collect rounds of sample + train (+ new priorities to a prioritized buffer)
        task.use(OffPolicyLearner(cfg, run.learner, run.buffer, log_freq=1000, rounds=run.train_rounds))
        task.use(run.monitor())  # the latest context, for checkpoints and result.json
        task.use(run.checkpoint())  # run checkpoints: resume= goes on from them
        task.use(run.wait())  # nothing to wait for in one process
        task.use(termination_checker(max_env_step=max_env_step, at_budget=True))  # after training
        task.run()
    return run.result


if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=30_000)
        args = parser.parse_args()
        setup_logging()
        print(json.dumps(main(args.seed, args.max_env_step)))
