"""Ape-X DQN on CartPole-v1: collector actors stream into a prioritized replay actor, a learner
actor trains from it and publishes its weights through Ray's object store.

Run it (from the repository root):
    python examples/apex_dqn.py --seed 0        # Ray starts inside this process
    python examples/apex_dqn.py --dashboard     # the same, with the Ray dashboard (4 s more start-up)

    export RAY_AUTH_MODE=token                   # or a local cluster (token-guarded), the script as a job
    ray get-auth-token --generate >/dev/null     # makes ~/.ray/auth_token if there is none
    ray start --head --dashboard-host=127.0.0.1 --block    # Ctrl-C stops this head (and no other Ray)
    ray job submit --working-dir . -- python examples/apex_dqn.py    # in a second shell, same export

    ray up cluster.yaml                          # or a cloud cluster (see cluster.yaml)
    ray submit cluster.yaml examples/apex_dqn.py --num-collectors 16 --set ray.collector_num_cpus=1

With --dashboard or on a cluster, the Ray dashboard (http://127.0.0.1:8265) lists the actors
by name (learner, buffer, evaluator, collector-0, collector-1) and its metrics page shows the
``ding_ray_*`` gauges. Results land in ``apex_dqn_seed<seed>/`` (config, TensorBoard logs, checkpoints,
``result.json``). ``ding_ray.entry.ray_pipeline`` builds this same Task pipeline in one call
(``ding_ray.framework.pipelines.off_policy``, the stage list ``serial_pipeline`` runs too).
"""

import argparse
import json

import ray

from ding_ray import distributed  # its names load on first use: torch loads while Ray starts
from ding_ray.configs.apex_dqn import create_config, main_config
from ding_ray.entry.cli_commands import add_override_args, apply_override_args, exit_on_interrupt
from ding_ray.framework.middleware import (
    OffPolicyLearner,
    collector,
    data_pusher,
    eps_greedy_handler,
    interaction_evaluator,
    random_collector,
    termination_checker,
    weights_publisher,
)
from ding_ray.utils.runtime import setup_logging


def main(seed: int, max_env_step: int | None, dashboard: bool = False, resume: str | None = None) -> dict:
    setup_logging()  # ding_ray's INFO lines: first batch, learner ready, evaluations
    main_config["exp_name"] = f"apex_dqn_seed{seed}"
    main_config["ray"]["include_dashboard"] = dashboard  # only used when Ray starts in this process
    # Ray starts while a thread compiles the config (loading torch); the plan holds the
    # namespace, the calls' sizes and the samples per insert.
    # With resume, the run in that folder goes on from its latest checkpoint.
    cfg, plan, started_ray = distributed.start_run((main_config, create_config), seed, resume=resume)

    # The actors behind the interfaces the stages call: collectors, buffer, learner, evaluator.
    # It checks the cluster can hold them first, and at the end saves the learner's final
    # checkpoint, writes result.json and frees the actors' names.
    with distributed.RayRun(cfg, plan, max_env_step, resume=resume) as rc, rc.task() as task:
        task.use(random_collector(cfg, rc.collector, rc.buffer))  # first the random warm-up (once)
        task.use(interaction_evaluator(cfg, rc.evaluator))  # every eval_freq iters, on the latest weights
        task.use(eps_greedy_handler(cfg))  # epsilon by env steps, for the next collect calls
        task.use(collector(cfg, rc.collector))  # relaunch idle collectors (each pushes into the buffer)
        task.use(data_pusher(cfg, rc.buffer))  # the driver's own warm-up batches, as refs
        # sample when the rate limiter allows, queue a train call, take the calls that finished
        # and send their priorities back to the buffer
        task.use(OffPolicyLearner(cfg, rc.learner, rc.buffer, log_freq=1000, rounds=rc.train_rounds))
        task.use(weights_publisher(rc.learner, rc.collector, rc.evaluator))  # newest weights out
        task.use(rc.monitor())  # progress bar, TensorBoard, dashboard metrics
        task.use(rc.checkpoint())  # run checkpoints: resume= goes on from them, dead actors come back
        task.use(rc.wait())  # block until some actor call finishes
        task.use(termination_checker(max_env_step=max_env_step, at_budget=True))  # after training
        task.run()
    if started_ray:
        ray.shutdown()
    return rc.result


if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        formatter = argparse.RawDescriptionHelpFormatter
        parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
        parser.add_argument("--seed", type=int, help="default 0; a resumed run's own")
        parser.add_argument("--max-env-step", type=int, help="default 200,000; a resumed run's own")
        parser.add_argument("--dashboard", action="store_true", help="start the Ray dashboard with Ray")
        add_override_args(parser)  # --num-collectors N, --set key.path=value ...
        args = parser.parse_args()
        apply_override_args(args, main_config, create_config, max_env_step=200_000)
        print(json.dumps(main(args.seed, args.max_env_step, args.dashboard, args.resume)))
