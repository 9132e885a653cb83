"""What the ``ding-ray`` subcommands do (the parser is in ``ding_ray.entry.cli``): configs from a
file or a bundled name with ``--set`` overrides, the pipelines, evaluation videos, plots, listings.

Errors a user can cause raise ``DingRayError``; ``cli.main`` prints them as one line.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import glob
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from easydict import EasyDict

from ding_ray.errors import ConfigError, DingRayError
from ding_ray.utils.runtime import interrupt_cause, run_end

PROG = "ding-ray"


# ----- configs -----


def import_modules(names: list[str]) -> None:
    """Import the modules a user names with ``--import`` (from the working directory too, as
    ``python -m`` would): their envs, policies and models register, and a run folder's config
    that lists them may use them."""
    import importlib

    if names and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            raise ConfigError(
                f"--import {name}: {err}. Name a module on the Python path (or in the working directory)."
            ) from err


def resolve_config(config: str) -> tuple[EasyDict, EasyDict, dict[str, Any]]:
    """``(main_config, create_config, defaults)`` of a config file path or a bundled config's name;
    ``defaults`` holds a bundled config's ``max_env_step`` and ``mode``."""
    from ding_ray.compat.dizoo_envs import gymnasium_config
    from ding_ray.config.compile import split_input_cfg
    from ding_ray.configs import list_configs, load_config

    if not os.path.isfile(config):
        if config in list_configs():
            bundled = load_config(config)
            defaults = dict(max_env_step=bundled.max_env_step, mode=bundled.mode)
            return bundled.main_config, bundled.create_config, defaults
        if os.path.isdir(config):
            raise ConfigError(
                f"'{config}' is a folder; pass a config file (.py, or a run's total_config.json)."
            )
        if not (config.endswith((".py", ".json")) or os.sep in config):
            load_config(config)  # an unknown name: the error lists the bundled ones
    main_cfg, create_cfg = split_input_cfg(config)  # ConfigError when the file does not exist
    return (*gymnasium_config(main_cfg, create_cfg), {})  # a dizoo config's env type, mapped


# a name in a dict or list written without its quotes: a letter or _ first, not inside a number
_BARE_NAME = re.compile(r"(?<![\w.'\"-])[A-Za-z_][\w./-]*(?![\w'\"])")


def parse_override(item: str) -> tuple[list[str], Any]:
    """``key.path=value`` -> ``(['key', 'path'], value)``; the value is a Python literal
    (``1e-3``, ``True``, ``None``, ``[64, 64]``) or else the text itself (``CartPole-v1``).

    A dict or list whose names lost their quotes reads as if they had them: ``{learner_node:1}``
    is ``{'learner_node': 1}``. ``ray submit`` passes the script's arguments through a shell
    that drops the inner quotes of ``--set "ray.learner_resources={'learner_node':1}"``."""
    key, sep, text = item.partition("=")
    path = key.strip().split(".")
    if not sep or not all(path):
        raise ConfigError(
            f"--set expects key.path=value (e.g. policy.learn.learning_rate=3e-4), got '{item}'."
        )
    text = text.strip()
    try:
        return path, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if text[:1] in "{[" and not any(quote in text for quote in "'\""):
        quoted = _BARE_NAME.sub(lambda m: m[0] if m[0] in ("True", "False", "None") else repr(m[0]), text)
        try:
            return path, ast.literal_eval(quoted)
        except (ValueError, SyntaxError):
            pass
    return path, text


def apply_overrides(main_cfg: dict, create_cfg: dict, items: list[str], infer_shapes: bool = True) -> None:
    """Set each ``key.path=value`` in the main config (``create_config.``-prefixed paths in the
    create config). Unknown keys are left for ``compile_config``, which rejects them by name.

    With ``infer_shapes``, a new ``env.env_id`` whose overrides leave ``policy.model.obs_shape`` and
    ``action_shape`` alone clears them: the pipeline then takes them from the new env (the old
    ones are the old env's), and a line says so."""
    from ding_ray.config.merge import set_dotted

    old_env_id = (main_cfg.get("env") or {}).get("env_id")
    keys = set()
    for item in items:
        path, value = parse_override(item)
        keys.add(".".join(path))
        try:
            set_dotted(main_cfg, create_cfg, ".".join(path), value)
        except ConfigError as err:
            raise ConfigError(f"--set {item}: {err}") from err
    new_env_id = (main_cfg.get("env") or {}).get("env_id")
    if "env.env_id" in keys and new_env_id != old_env_id:
        _atari_env_type(create_cfg, keys, new_env_id)
    if infer_shapes and "env.env_id" in keys and new_env_id != old_env_id:
        _free_model_shapes(main_cfg, keys, old_env_id, new_env_id)


def _atari_env_type(create_cfg: dict, keys: set[str], env_id: Any) -> None:
    """An Atari id given to a config of env type 'gymnasium' switches it to 'atari' (DI-engine's
    preprocessing), as a user asking for a game means; a line says so."""
    from ding_ray.envs.game_ids import ensure_registered, is_atari_id

    env_section = create_cfg.get("env") or {}
    if any(k in keys for k in ("create_config.env.type", "create.env.type")):
        return
    if env_section.get("type", "gymnasium") != "gymnasium" or not isinstance(env_id, str):
        return
    if not (ensure_registered(env_id) and is_atari_id(env_id)):
        return
    create_cfg.setdefault("env", {})["type"] = "atari"
    print(
        f"{PROG}: {env_id} is an Atari game: env type 'atari' (DeepMind's preprocessing, observations "
        "(frame_stack, 84, 84) uint8)"
    )


def _free_model_shapes(main_cfg: dict, keys: set[str], old_env_id: Any, new_env_id: Any) -> None:
    model = (main_cfg.get("policy") or {}).get("model") or {}
    names = [
        n
        for n in ("obs_shape", "action_shape")
        if model.get(n) is not None and f"policy.model.{n}" not in keys
    ]
    if not names:
        return
    old = ", ".join(f"{n}={model[n]!r}" for n in names)
    for name in names:
        model[name] = None
    print(
        f"{PROG}: env.env_id changed from {old_env_id} to {new_env_id}: the model takes "
        f"{' and '.join(names)} from {new_env_id} (the config's {old} fit {old_env_id}; "
        f"--set policy.model.{names[0]}=... keeps a value of your own)"
    )


def add_override_args(parser: argparse.ArgumentParser) -> None:
    """The example scripts' ``--num-collectors``, ``--set`` and ``--resume`` (as ``ding-ray train``'s),
    so that ``ray submit cluster.yaml examples/x.py --num-collectors 16`` needs no edit of the script."""
    parser.add_argument("--num-collectors", type=int, help="collector actors on Ray (ray.num_collectors)")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides, as ding-ray's"
    )
    parser.add_argument(
        "--resume", metavar="DIR", default=None, help="continue the run in DIR from its latest checkpoint"
    )


def apply_override_args(
    args: argparse.Namespace, main_cfg: dict, create_cfg: dict, max_env_step: int | None = None
) -> None:
    """Apply what ``add_override_args`` parsed to the configs; settle ``args.seed`` and
    ``args.max_env_step`` (parsed with default None) as ``ding-ray train`` does (``settle_run_args``),
    ``max_env_step`` being the script's own budget."""
    if args.num_collectors is not None:
        main_cfg.setdefault("ray", {})["num_collectors"] = args.num_collectors
    apply_overrides(main_cfg, create_cfg, args.set)
    if hasattr(args, "seed"):
        settle_run_args(args, max_env_step)


def settle_run_args(args: argparse.Namespace, max_env_step: int | None = None) -> dict[str, Any]:
    """``args.seed``, ``args.max_env_step`` and ``args.max_train_iter`` (where the parser has them):
    what the command line gives wins; with ``args.resume``, the resumed run's own (the seed and
    budget its latest checkpoint records) comes next; then seed 0 and the ``max_env_step`` given here.
    Returns that checkpoint's ``meta.json`` ({} for a new run)."""
    meta: dict[str, Any] = {}
    if getattr(args, "resume", None) is not None:
        from ding_ray.utils.resume import find_checkpoint

        meta = find_checkpoint(args.resume)[1].meta
    budget = meta.get("budget")  # None: a checkpoint written before runs recorded their budget
    if args.seed is None:
        args.seed = int(meta["config"]["seed"]) if meta.get("config") else 0
    if getattr(args, "max_env_step", None) is None:
        args.max_env_step = budget.get("max_env_step") if isinstance(budget, dict) else max_env_step
    if hasattr(args, "max_train_iter") and args.max_train_iter is None and isinstance(budget, dict):
        args.max_train_iter = budget.get("max_train_iter")
    return meta


def interrupted(err: BaseException) -> str:
    """The one line a Ctrl-C (or SIGTERM) run ends with, instead of a traceback: what stopped it
    and what the run saved on its way out."""
    saved = run_end() or "the run had not started: nothing was saved"
    return f"interrupted ({interrupt_cause(err)}); {saved}"


@contextlib.contextmanager
def exit_on_interrupt(prog: str | None = None) -> Iterator[None]:
    """Around an example's ``__main__``: a Ctrl-C or SIGTERM ends it with one line on stderr and
    exit status 130, as ``ding-ray`` does (the run's checkpoint and result.json are written by then)."""
    try:
        yield
    except KeyboardInterrupt as err:
        say_interrupted(prog or os.path.basename(sys.argv[0]) or PROG, err)
        raise SystemExit(130) from None


def leave_ray() -> None:
    """Disconnect from Ray (stopping it if this process started it) before the last line: left to
    the interpreter's exit, Ray's shutdown runs after that line, and the Ctrl-C'd workers' deaths
    reach the terminal below it as ERROR lines of Ray's own processes."""
    ray = sys.modules.get("ray")  # never imported: nothing to leave
    if ray is not None and ray.is_initialized():
        with contextlib.suppress(Exception):
            ray.shutdown()


def say_interrupted(prog: str, err: BaseException) -> None:
    """Leave Ray, then print the one line of ``interrupted`` on stderr, if it can still be written: Ctrl-C on
    ``python x.py | tee out`` ends ``tee`` too, and the line would go to a closed pipe. Streams that
    are closed pipes are then pointed at /dev/null, so the interpreter's exit does not fail on them."""
    leave_ray()
    with contextlib.suppress(OSError, ValueError):
        print(f"{prog}: {interrupted(err)}", file=sys.stderr, flush=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def latest_run_dir(exp_name: str) -> str | None:
    """The folder of the latest run of ``exp_name`` (a run into an existing folder goes to a
    renewed ``<exp_name>_<yymmdd_HHMMSS>``), or None when none finished."""
    paths = [os.path.join(exp_name, "result.json")] + glob.glob(glob.escape(exp_name) + "_*/result.json")
    paths = [p for p in paths if os.path.isfile(p)]
    return os.path.dirname(max(paths, key=os.path.getmtime)) if paths else None


# ----- train -----


def cmd_train(args: argparse.Namespace) -> int:
    if args.config is None:
        if args.resume is None:
            raise ConfigError("ding-ray train needs a CONFIG (a file or a bundled name), or --resume DIR.")
        from ding_ray.distributed.config import CPU_SHARES
        from ding_ray.utils.resume import resume_config

        # the run's own settings: those its latest checkpoint was written with, less its CPU shares:
        # they are no choice made on this command line (start_run keeps them, or refits them)
        main_cfg, create_cfg, defaults = resume_config(args.resume), EasyDict(), {}
        for key in CPU_SHARES:
            main_cfg.get("ray", {}).pop(key, None)
        args.config = os.path.join(args.resume, "total_config.json")
    else:
        main_cfg, create_cfg, defaults = resolve_config(args.config)
    # the seed and budget: given, else a resumed run's own, else seed 0 and the bundled budget
    meta = settle_run_args(args, defaults.get("max_env_step"))
    if args.resume is not None:  # the run's folder and mode
        main_cfg.exp_name = args.resume
        defaults["mode"] = "ray" if str(meta.get("pipeline", "")).startswith("ray") else "serial"
    if args.resume is None and not any(item.split("=", 1)[0].strip() == "exp_name" for item in args.set):
        # a run's own total_config.json already carries a seed suffix: replace it
        base = re.sub(r"_seed\d+$", "", main_cfg.get("exp_name") or "default_experiment")
        main_cfg.exp_name = f"{base}_seed{args.seed}"
    apply_overrides(main_cfg, create_cfg, args.set)
    mode = args.mode or defaults.get("mode", "serial")
    max_env_step = args.max_env_step
    for flag, budget in (("--max-env-step", max_env_step), ("--max-train-iter", args.max_train_iter)):
        if budget is not None and budget < 1:
            raise ConfigError(f"{flag} must be >= 1, got {budget}; leave it out for no budget.")
    if args.address is not None:
        if mode != "ray":
            raise ConfigError("--address names a Ray cluster to join: use it with --mode ray.")
        main_cfg.setdefault("ray", EasyDict()).address = args.address
    if args.num_collectors is not None:
        if mode != "ray":
            raise ConfigError("--num-collectors sets the collector actors: use it with --mode ray.")
        main_cfg.setdefault("ray", EasyDict()).num_collectors = args.num_collectors
    budget = f"{max_env_step} env steps" if max_env_step is not None else "no env step budget"
    # a new run's folder is settled when it starts (a renewed name if that one is taken): a log line names it
    into = f" into {main_cfg.exp_name}" if args.resume is not None else ""
    print(f"{PROG}: training {args.config} ({mode}, seed {args.seed}, {budget}){into}")
    input_cfg = (main_cfg, create_cfg)
    budget = dict(max_env_step=max_env_step, max_train_iter=args.max_train_iter, resume=args.resume)
    if mode == "ray":
        from ding_ray.entry import ray_pipeline

        ray_pipeline(input_cfg, seed=args.seed, **budget)
    elif mode == "offline":
        from ding_ray.entry import serial_pipeline_offline

        if args.resume is not None or max_env_step is not None:
            raise ConfigError(
                "--mode offline trains on a dataset: it takes --max-train-iter, not --resume "
                "or --max-env-step."
            )
        serial_pipeline_offline(input_cfg, seed=args.seed, max_train_iter=args.max_train_iter or int(1e10))
    else:
        from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy
        from ding_ray.entry.serial_entry_onpolicy import is_on_policy

        entry = serial_pipeline_onpolicy if is_on_policy(main_cfg, create_cfg) else serial_pipeline
        entry(input_cfg, seed=args.seed, **budget)
    print_run_summary(main_cfg.exp_name)
    return 0


def print_run_summary(exp_name: str) -> None:
    """Where the run's result, checkpoints and logs are, and the commands that use them."""
    run_dir = latest_run_dir(exp_name)
    if run_dir is None:
        print(f"{PROG}: the run wrote no {exp_name}/result.json")
        return
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    best, last = result.get("best_eval_return"), result.get("last_eval_return")
    outcome = "stop value reached" if result.get("stop") else "budget spent"
    ckpt_dir = os.path.join(run_dir, "ckpt")
    ckpts = sorted(os.listdir(ckpt_dir)) if os.path.isdir(ckpt_dir) else []
    best_ckpt = os.path.join(ckpt_dir, "ckpt_best.pth.tar")
    print(
        f"\n{PROG}: {outcome} after {result.get('env_steps')} env steps, {result.get('train_iter')} train "
        f"iterations, {result.get('wall_s')} s; eval return best {best}, last {last}\n"
        f"  result:       {os.path.join(run_dir, 'result.json')}\n"
        f"  config:       {os.path.join(run_dir, 'total_config.json')}\n"
        f"  checkpoints:  {ckpt_dir}{os.sep} ({', '.join(ckpts) or 'none'})\n"
        f"  TensorBoard:  tensorboard --logdir {os.path.join(run_dir, 'log')}\n"
        f"  plot:         {PROG} plot {run_dir}"
        + (f"\n  evaluate:     {PROG} eval {best_ckpt}" if os.path.isfile(best_ckpt) else "")
        + (f"\n  continue:     {PROG} train --resume {run_dir}" if result.get("last_checkpoint") else "")
    )


# ----- eval -----


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a checkpoint file, or a run folder's policy (the checkpoint ``load_policy`` takes)."""
    if not os.path.exists(args.ckpt):
        raise ConfigError(f"'{args.ckpt}' does not exist: pass a run folder or a checkpoint file.")
    run_dir = args.ckpt if os.path.isdir(args.ckpt) else _run_dir_of_ckpt(args.ckpt)
    config = args.config
    if config is None:
        if run_dir is None or not os.path.isfile(os.path.join(run_dir, "total_config.json")):
            raise ConfigError(
                f"'{args.ckpt}' is not a run folder, nor in a run's ckpt/ folder next to its "
                "total_config.json: pass --config."
            )
        config = os.path.join(run_dir, "total_config.json")
    main_cfg, create_cfg, _ = resolve_config(config)
    weights: dict[str, Any] = {"load_path": args.ckpt}
    if os.path.isdir(args.ckpt):
        from ding_ray.entry.trained_policy import find_weights

        state, source = find_weights(args.ckpt, main_cfg)
        weights = {"state_dict": state}
        print(f"{PROG}: evaluating {source}")
    if run_dir is not None:  # the evaluation's own logs go beside the run's
        main_cfg.exp_name = os.path.join(run_dir, "eval")
    env = main_cfg.setdefault("env", EasyDict())
    if args.episodes is not None:
        if args.episodes < 1:
            raise ConfigError(f"--episodes must be >= 1, got {args.episodes}.")
        env.n_evaluator_episode = args.episodes
        env.evaluator_env_num = min(env.get("evaluator_env_num", 5), args.episodes)
    apply_overrides(main_cfg, create_cfg, args.set, infer_shapes=False)  # the checkpoint's shapes
    from ding_ray.entry import eval as eval_entry

    video_dir, scratch = args.video, None
    if args.video is not None and args.video.endswith(".mp4"):
        scratch = tempfile.mkdtemp(prefix="ding_ray_video_")  # episodes land here, the first is kept
        video_dir = os.path.join(scratch, "videos")
    try:
        mean = eval_entry((main_cfg, create_cfg), seed=args.seed, replay_path=video_dir, **weights)
        n = env.get("n_evaluator_episode", "the configured")
        print(f"{PROG}: mean evaluation return over {n} episodes: {mean:g}")
        if args.video is not None:
            print(f"{PROG}: video: {_place_videos(video_dir, args.video)}")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _run_dir_of_ckpt(ckpt: str) -> str | None:
    from ding_ray.entry.trained_policy import run_dir_of

    return run_dir_of(ckpt)


# ----- export -----


def cmd_export(args: argparse.Namespace) -> int:
    from ding_ray.entry.export import export_policy

    info = export_policy(args.source, args.out, config=args.config, fmt=args.format)
    action = info["action"]
    print(
        f"{PROG}: exported {info['policy']} ({info['env_id']}) from {info['source']} to {args.out}: "
        f"obs float32 {tuple(info['obs']['shape'])} -> action {action['dtype']} {tuple(action['shape'])}"
        + (", scaled onto the env's bounds" if action["scaled_onto_env_bounds"] else "")
        + (", observation normalisation inside" if info["obs_norm"] else "")
    )
    return 0


def _place_videos(video_dir: str, target: str) -> str:
    """``target`` ending in .mp4 gets the first evaluated episode's video; a folder keeps them all."""
    videos = sorted(glob.glob(os.path.join(video_dir, "**", "*.mp4"), recursive=True), key=_natural_key)
    # Each env also records the one-frame episodes of its resets before and after the evaluation.
    episodes = [v for v in videos if _frame_count(v) != 1]
    if not episodes:
        raise DingRayError(f"The evaluation recorded no episode video in {video_dir}.")
    if not target.endswith(".mp4"):
        return f"{len(episodes)} episode videos in {target} (and {len(videos) - len(episodes)} of one frame)"
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    shutil.move(episodes[0], target)
    return target


def _natural_key(path: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def _frame_count(path: str) -> int | None:
    """Frames of a video, None when unknown (imageio-ffmpeg comes with moviepy, which wrote it)."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.count_frames_and_secs(path)[0]
    except (ImportError, OSError, RuntimeError):
        return None


# ----- plot, list -----


def cmd_plot(args: argparse.Namespace) -> int:
    from ding_ray.entry.plot import plot_runs

    out = args.out
    if out is None:
        out = (
            os.path.join(args.exp_dirs[0], "learning_curve.png")
            if len(args.exp_dirs) == 1
            else "learning_curve.png"
        )
    for line in plot_runs(args.exp_dirs, out, x_axis=args.x, spread=args.spread, title=args.title):
        print(line)
    print(f"{PROG}: plot written to {out}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    import importlib

    from ding_ray.configs import list_configs, load_config
    from ding_ray.utils.registry import BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY

    for package in ("ding_ray.envs", "ding_ray.policy", "ding_ray.data", "ding_ray.worker"):
        importlib.import_module(package)  # components register themselves on import
    sections = [
        ("policies", POLICY_REGISTRY),
        ("buffers", BUFFER_REGISTRY),
        ("env managers", ENV_MANAGER_REGISTRY),
        ("envs", ENV_REGISTRY),
    ]
    for title, registry in sections:
        print(f"{title}: {', '.join(registry.names())}")
    print("bundled configs (ding-ray train NAME):")
    for name in list_configs():
        bundled = load_config(name)
        print(f"  {name:<14} [{bundled.mode}] {bundled.description}")
    return 0
