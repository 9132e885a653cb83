"""The ``ding`` console script: DI-engine's command line (``ding -m serial -c cfg.py -s 0``) on ding_ray.

It takes DI-engine's options for the modes ding_ray has (``serial``, ``serial_onpolicy``,
``serial_offline``, ``eval``) and runs a config file as DI-engine would, dizoo's env types mapped onto
the gymnasium envs they wrap (``ding_ray.compat.dizoo_envs``). Several seeds (``-s 0 -s 1``) run one
after the other, each in ``<config name>_result/seed<S>`` (or ``<exp-name>/seed<S>``), as DI-engine
lays them out. The other modes of DI-engine's command are refused by name, with what to use instead.
"""

from __future__ import annotations

import argparse
import os
import sys

from ding_ray.entry.cli_commands import say_interrupted
from ding_ray.errors import ConfigError, DingRayError

PROG = "ding"
MODES = ("serial", "serial_onpolicy", "serial_offline", "eval")
# DI-engine's other modes -> what to use instead
OTHER_MODES = {
    "parallel": "ding_ray runs distributed on Ray: ding-ray train CONFIG --mode ray",
    "dist": "ding_ray runs distributed on Ray: ding-ray train CONFIG --mode ray",
    **{
        mode: "ding_ray has no such entry yet; -m serial trains the policy of the config without it"
        for mode in (
            "serial_sqil",
            "serial_dqfd",
            "serial_trex",
            "serial_trex_onpolicy",
            "serial_reward_model",
            "serial_gail",
            "serial_ngu",
        )
    },
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="DI-engine's `ding` command on ding_ray: train or evaluate a DI-engine config file.",
    )
    parser.add_argument("-m", "--mode", required=True, help=f"one of {', '.join(MODES)}")
    parser.add_argument("-c", "--config", help="path of a DI-engine config file (main_config, create_config)")
    parser.add_argument(
        "-s", "--seed", type=int, action="append", help="random seed; repeat for several runs (default 0)"
    )
    parser.add_argument("-e", "--env", help="with -p, no -c: the bundled config ENV_POLICY (e.g. cartpole)")
    parser.add_argument("-p", "--policy", help="with -e, no -c: the bundled config ENV_POLICY (e.g. dqn)")
    parser.add_argument("--exp-name", help="the run folder (several seeds: their parent folder)")
    parser.add_argument("--train-iter", default="1e8", help="most policy updates of the run (default 1e8)")
    parser.add_argument("--env-step", default="1e8", help="most env steps of the run (default 1e8)")
    parser.add_argument("--load-path", help="eval: the checkpoint to evaluate (else policy.load_path)")
    parser.add_argument("--replay-path", help="eval: a folder to save a video of each episode in")
    return parser


def _count(text: str, option: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        raise ConfigError(f"{option} takes a number (e.g. 1e5), got {text!r}.") from None


def _config(args: argparse.Namespace):
    """``(main_config, create_config)`` of ``-c``, or of the bundled config ``-e``/``-p`` name."""
    from ding_ray.compat.dizoo_envs import gymnasium_config
    from ding_ray.config.compile import read_python_config

    if args.config:
        if not os.path.isfile(args.config):
            raise ConfigError(f"-c {args.config}: no such file.")
        main, create = gymnasium_config(*read_python_config(args.config))
    elif args.env and args.policy:
        from ding_ray.configs import load_config

        bundled = load_config(f"{args.env}_{args.policy}")
        main, create = bundled.main_config, bundled.create_config
    else:
        raise ConfigError("ding needs -c CONFIG_FILE, or -e ENV and -p POLICY for a bundled config.")
    if args.exp_name:
        main.exp_name = args.exp_name
    return main, create


def run(args: argparse.Namespace, seed: int) -> None:
    """One run of ``args.mode`` with ``seed``, in the working directory."""
    import copy

    main, create = _config(args)
    train_iter, env_step = _count(args.train_iter, "--train-iter"), _count(args.env_step, "--env-step")
    config = (copy.deepcopy(main), copy.deepcopy(create))
    if args.mode == "serial":
        from ding_ray.entry.serial_entry import serial_pipeline

        serial_pipeline(config, seed, max_train_iter=train_iter, max_env_step=env_step)
    elif args.mode == "serial_onpolicy":
        from ding_ray.entry.serial_entry_onpolicy import serial_pipeline_onpolicy

        serial_pipeline_onpolicy(config, seed, max_train_iter=train_iter, max_env_step=env_step)
    elif args.mode == "serial_offline":  # the dataset at policy.collect.data_path; no env steps to count
        from ding_ray.entry.serial_entry_offline import serial_pipeline_offline

        serial_pipeline_offline(config, seed, max_train_iter=train_iter)
    else:
        from ding_ray.entry.eval_entry import eval as evaluate

        evaluate(config, seed, load_path=args.load_path, replay_path=args.replay_path)


def main(argv: list[str] | None = None) -> int:
    """Entry of the ``ding`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.mode in OTHER_MODES:
            raise ConfigError(
                f"-m {args.mode} is a DI-engine mode ding_ray does not run: {OTHER_MODES[args.mode]}."
            )
        if args.mode not in MODES:
            raise ConfigError(f"-m {args.mode}: unknown mode; ding_ray's ding runs {', '.join(MODES)}.")
        seeds = args.seed or [0]
        if len(seeds) == 1:
            run(args, seeds[0])
            return 0
        # several seeds: DI-engine's layout, one folder per seed under <exp-name or config name>_result
        source = args.config or f"{args.env}_{args.policy}"
        name = args.exp_name or os.path.basename(source).split(".")[0] + "_result"
        args.config = os.path.abspath(args.config) if args.config else None
        origin = os.getcwd()
        for seed in seeds:
            folder = os.path.join(name, f"seed{seed}")
            os.makedirs(folder, exist_ok=True)
            os.chdir(folder)
            try:
                run(args, seed)
            finally:
                os.chdir(origin)
        return 0
    except DingRayError as e:
        print(f"{PROG}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        say_interrupted(PROG, err)
        return 130


if __name__ == "__main__":
    sys.exit(main())
