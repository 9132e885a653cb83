"""ding-ray: train, evaluate, plot and list from the command line.

    ding-ray train cartpole_dqn                      # a bundled config, serial pipeline
    ding-ray train my_config.py --mode ray --seed 1  # a DI-engine style config file, on Ray
    ding-ray eval cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar --episodes 10
    ding-ray export cartpole_dqn_seed0 cartpole_dqn.pt      # TorchScript (.onnx: ONNX)
    ding-ray plot cartpole_dqn_seed0 cartpole_dqn_seed1 --out curves.png
    ding-ray list

Mistakes a user can make (a missing file, an unknown key or name, a bad --set) end with one
line on stderr and exit code 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import textwrap

from ding_ray.entry.cli_commands import (
    PROG,
    cmd_eval,
    cmd_export,
    cmd_list,
    cmd_plot,
    cmd_train,
    import_modules,
    say_interrupted,
)
from ding_ray.errors import DingRayError


def _version() -> str:
    try:
        return importlib.metadata.version("ding_ray")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree without installing
        return "(not installed)"


def _wrap(text: str) -> str:
    """A description as argparse would wrap it (the raw formatter keeps the examples' lines)."""
    return textwrap.fill(text, width=90)


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = sub.add_parser(
        "train",
        help="train a policy from a config",
        formatter_class=fmt,
        description=_wrap(
            "Train until the evaluator reaches env.stop_value or the budget runs out. The run "
            "writes <exp_name>_seed<N>/ (config, result.json, checkpoints under ckpt/, TensorBoard logs "
            "under log/); a folder that exists already makes it a renewed <name>_<yymmdd_HHMMSS>/."
        ),
        epilog="examples:\n  ding-ray train cartpole_dqn --max-env-step 20000\n"
        "  ding-ray train apex_dqn --num-collectors 4\n"
        "  ding-ray train cartpole_dqn --resume cartpole_dqn_seed0\n"
        "  ding-ray train my_config.py --mode ray --address auto --set policy.learn.learning_rate=3e-4",
    )
    train.add_argument(
        "config",
        metavar="CONFIG",
        nargs="?",
        help="a Python config file defining main_config (and create_config), DI-engine style, a run's "
        "total_config.json, or a bundled config's name (see `ding-ray list`); with --resume, default: "
        "the run's total_config.json",
    )
    train.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of envs, torch and numpy (default 0; --resume: the run's)",
    )
    train.add_argument(
        "--mode",
        choices=("serial", "ray", "offline"),
        default=None,
        help="serial: one process, no Ray; ray: collectors, buffer, learner and evaluator as Ray actors; "
        "offline: train on the dataset at policy.collect.data_path (serial_pipeline_offline, "
        "--max-train-iter its budget) (default: the bundled config's mode, else serial)",
    )
    train.add_argument(
        "--address",
        default=None,
        help="Ray cluster to join with --mode ray ('auto', 'HOST:PORT', 'ray://HOST:10001'); "
        "sets ray.address",
    )
    train.add_argument(
        "--num-collectors",
        metavar="N",
        type=int,
        default=None,
        help="collector actors with --mode ray; sets ray.num_collectors (a Ray started here shrinks "
        "their CPU shares to fit its cores)",
    )
    train.add_argument(
        "--max-env-step",
        type=int,
        default=None,
        help="env step budget (default: the bundled config's; a config file: until env.stop_value)",
    )
    train.add_argument("--max-train-iter", type=int, default=None, help="train iteration budget")
    train.add_argument(
        "--resume",
        metavar="DIR",
        default=None,
        help="continue the run in DIR from its latest checkpoint (its counters, replay buffer and "
        "TensorBoard curves go on; --mode and --seed default to the run's)",
    )
    train.add_argument(
        "--set",
        metavar="KEY.PATH=VALUE",
        nargs="+",
        action="extend",
        default=[],
        help="override config values, e.g. --set policy.learn.batch_size=128 env.stop_value=400; values "
        "are Python literals, else text; 'create_config.' prefixes a create_config path; unknown keys "
        "are an error",
    )
    _add_import_arg(train)
    train.set_defaults(func=cmd_train)

    ev = sub.add_parser(
        "eval",
        help="evaluate a checkpoint",
        formatter_class=fmt,
        description=_wrap(
            "Load a checkpoint into the config's policy and run the evaluator once; print the "
            "mean return. A run folder evaluates its best checkpoint, else its final, else its latest run "
            "checkpoint (as load_policy and export); a checkpoint in a run's ckpt/ folder finds the run's "
            "total_config.json by itself."
        ),
        epilog="example:\n  ding-ray eval cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar --episodes 10 "
        "--video cartpole.mp4",
    )
    ev.add_argument(
        "ckpt",
        metavar="RUN_OR_CKPT",
        help="a run folder or a checkpoint file (e.g. <run>/ckpt/ckpt_best.pth.tar)",
    )
    ev.add_argument(
        "--config",
        default=None,
        help="config file or bundled config name (default: the run's total_config.json beside ckpt/)",
    )
    ev.add_argument("--seed", type=int, default=0, help="seed of the evaluation envs (default 0)")
    ev.add_argument("--episodes", type=int, default=None, help="episodes to evaluate (default: the config's)")
    ev.add_argument(
        "--video",
        metavar="PATH",
        default=None,
        help='record the episodes: PATH.mp4 gets the first one, a folder all (pip install "ding_ray[video]")',
    )
    ev.add_argument(
        "--set",
        metavar="KEY.PATH=VALUE",
        nargs="+",
        action="extend",
        default=[],
        help="override config values, as for train",
    )
    _add_import_arg(ev)
    ev.set_defaults(func=cmd_eval)

    ex = sub.add_parser(
        "export",
        help="export a trained policy to TorchScript or ONNX",
        formatter_class=fmt,
        description=_wrap(
            "Write what ding_ray.load_policy(RUN_OR_CKPT).act computes as one file: float32 observations "
            "'obs' (batch, *obs_shape) in, the env's actions 'action' out (int64 indices, or float32 "
            "scaled onto the env's bounds with env.act_scale); PPO's observation normalisation is inside. "
            "A run folder exports its best checkpoint, else its final, else its latest run checkpoint. "
            "The file is read back and checked to act as the policy does. ONNX needs "
            'pip install "ding_ray[onnx]".'
        ),
        epilog="examples:\n  ding-ray export cartpole_dqn_seed0 cartpole_dqn.pt\n"
        "  ding-ray export pendulum_sac_seed0/ckpt/ckpt_final.pth.tar pendulum_sac.onnx",
    )
    ex.add_argument("source", metavar="RUN_OR_CKPT", help="a run folder or a checkpoint file")
    ex.add_argument("out", metavar="OUT", help="the file to write (.onnx: ONNX, else TorchScript)")
    ex.add_argument(
        "--format", choices=("torchscript", "onnx"), default=None, help="default: from OUT's suffix"
    )
    ex.add_argument(
        "--config",
        default=None,
        help="config file or bundled config name (default: the run's total_config.json)",
    )
    _add_import_arg(ex)
    ex.set_defaults(func=cmd_export)

    plot = sub.add_parser(
        "plot",
        help="plot learning curves of runs into a PNG",
        formatter_class=fmt,
        description=_wrap(
            "Read the evaluator's mean return from the runs' TensorBoard files and draw it. Runs "
            "of one experiment (names differing only in _seed<N>) become one curve: their mean and spread "
            "on a common x grid (a run keeps its last value after it ends). Needs "
            'pip install "ding_ray[plot]".'
        ),
        epilog="example:\n  ding-ray plot cartpole_dqn_seed0 cartpole_dqn_seed1 cartpole_dqn_seed2 "
        "--out dqn.png",
    )
    plot.add_argument("exp_dirs", metavar="EXP_DIR", nargs="+", help="run folders (a run's exp_name)")
    plot.add_argument(
        "--x", choices=("env_step", "wall_time"), default="env_step", help="x axis (default env_step)"
    )
    plot.add_argument(
        "--spread",
        choices=("minmax", "std"),
        default="minmax",
        help="band around the mean of several runs: min to max, or mean +- std (default minmax)",
    )
    plot.add_argument(
        "--out",
        metavar="PNG",
        default=None,
        help="output file (default: EXP_DIR/learning_curve.png for one run, ./learning_curve.png "
        "for several)",
    )
    plot.add_argument("--title", default=None, help="figure title (default: the experiments' names)")
    plot.set_defaults(func=cmd_plot)

    lst = sub.add_parser(
        "list",
        help="list policies, buffers, env managers, envs and bundled configs",
        description=_wrap(
            "List the registered component types (the 'type' values a config may name) and the "
            "bundled configs."
        ),
    )
    lst.set_defaults(func=cmd_list)
    return parser


def _add_import_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--import",
        dest="import_modules",
        metavar="MODULE",
        action="append",
        default=[],
        help="import MODULE first (one that registers your env, policy or model); a run's "
        "total_config.json never imports modules by itself. Repeat for several",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry of the ``ding-ray`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        import_modules(getattr(args, "import_modules", []))
        return args.func(args)
    except DingRayError as e:
        print(f"{PROG}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        say_interrupted(PROG, err)  # also when stderr is a closed pipe by now
        return 130


if __name__ == "__main__":
    sys.exit(main())
