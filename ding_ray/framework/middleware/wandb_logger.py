"""wandb loggers: ``wandb_online_logger`` and ``wandb_offline_logger``, DI-engine's stages of the same names.

A factory starts a wandb run (as DI-engine does, with the same arguments); its stage logs, once per
iteration, the learner's metrics, ``ctx.info_for_logging`` and, after an evaluation, the returns,
a histogram of them, the policy's action distribution and the videos the evaluation recorded. The
task finishes the run when it closes. Keys follow ding_ray's layout (``learner/...``,
``evaluator/...``, ``collector/...``) as the TensorBoard loggers do.

wandb is an optional dependency (``pip install "ding_ray[wandb]"``), imported by the factories only.
Matplotlib animations (DI-engine's gif of action probabilities and of the return distribution) are
replaced by wandb histograms, which need nothing else installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.errors import ConfigError, ShapeError
from ding_ray.framework.context import OfflineRLContext, OnlineRLContext
from ding_ray.framework.middleware.logger import episode_returns, eval_scalars, merge_train_output, to_numpy
from ding_ray.framework.task_runner import current_task
from ding_ray.utils.registry import close_matches
from ding_ray.worker import metrics

# DI-engine's default: the names its policies report (a policy of other names passes metric_list).
DEFAULT_METRIC_LIST = ["q_value", "target q_value", "loss", "lr", "entropy", "target_q_value", "td_error"]
CFG_KEYS = ("gradient_logger", "plot_logger", "video_logger", "action_logger", "return_logger", "vis_dataset")
EVAL_VIDEO = "evaluator/replay_video"
EVAL_RETURNS = "evaluator/episode_return"  # histogram of the evaluated episodes' returns


def wandb_online_logger(
    record_path: str | None = None,
    cfg: dict | EasyDict | None = None,
    exp_config: dict | EasyDict | None = None,
    metric_list: list[str] | None = None,
    env: Any = None,
    model: Any = None,
    anonymous: bool = False,
    project_name: str = "default-project",
    run_name: str | None = None,
    wandb_sweep: bool = False,
) -> Callable[[OnlineRLContext], None]:
    """Log an online run to wandb, against env steps.

    ``cfg`` switches the parts on (missing keys are off; no cfg: plot_logger only):
    ``plot_logger`` the learner's ``metric_list`` values (a list of outputs averaged),
    ``return_logger`` a histogram of the evaluated returns, ``action_logger`` histograms of the
    logits (q-values) and mean action probabilities of ``ctx.eval_output['output']`` and
    ``ctx.inference_output``, ``video_logger`` the new mp4 files under ``record_path`` after each
    evaluation (``env``: the evaluator's env manager, asked to save replays there),
    ``gradient_logger`` ``wandb.watch(model)``.

    Reads ctx: ``train_output``, ``info_for_logging``, ``eval_value``, ``eval_output``,
    ``inference_output``, ``env_step``, ``train_iter``.
    Writes ctx: ``wandb_url`` (first run).
    """
    plot = _wandb_logger(
        False, record_path, cfg, exp_config, metric_list, env, model, anonymous, project_name, run_name,
        wandb_sweep,
    )  # fmt: skip

    def _plot(ctx: OnlineRLContext) -> None:  # named here so that a failure names this factory
        plot(ctx)

    return _plot


def wandb_offline_logger(
    record_path: str | None = None,
    cfg: dict | EasyDict | None = None,
    exp_config: dict | EasyDict | None = None,
    metric_list: list[str] | None = None,
    env: Any = None,
    model: Any = None,
    anonymous: bool = False,
    project_name: str = "default-project",
    run_name: str | None = None,
    wandb_sweep: bool = False,
) -> Callable[[OfflineRLContext], None]:
    """Log an offline run to wandb, against ``trained_env_step`` (transitions trained on).

    Same parts as ``wandb_online_logger``. ``cfg.vis_dataset`` (DI-engine's t-SNE picture of the
    dataset) is not supported: it is off by default and refused when asked for.

    Reads ctx: ``train_output``, ``info_for_logging``, ``eval_value``, ``eval_output``,
    ``trained_env_step``, ``train_iter``, ``train_epoch``.
    Writes ctx: ``wandb_url`` (first run).
    """
    plot = _wandb_logger(
        True, record_path, cfg, exp_config, metric_list, env, model, anonymous, project_name, run_name,
        wandb_sweep,
    )  # fmt: skip

    def _plot(ctx: OfflineRLContext) -> None:  # named here so that a failure names this factory
        plot(ctx)

    return _plot


def _wandb_logger(
    offline: bool,
    record_path: str | None,
    cfg: dict | EasyDict | None,
    exp_config: dict | EasyDict | None,
    metric_list: list[str] | None,
    env: Any,
    model: Any,
    anonymous: bool,
    project_name: str,
    run_name: str | None,
    wandb_sweep: bool,
) -> Callable:
    wandb = _import_wandb()
    cfg = _logger_cfg(cfg, offline)
    metric_list = list(DEFAULT_METRIC_LIST if metric_list is None else metric_list)
    if cfg.video_logger and record_path is None:
        raise ConfigError(
            "cfg.video_logger uploads the evaluation videos found in record_path: pass record_path (the "
            "folder the evaluator's env saves replays to), or set video_logger=False."
        )
    if cfg.gradient_logger and model is None:
        raise ConfigError("cfg.gradient_logger watches the gradients of a model: pass model=policy's model.")

    run = _start_run(wandb, project_name, exp_config, run_name, anonymous, wandb_sweep)
    if env is not None and cfg.video_logger:
        env.enable_save_replay(record_path)
    if cfg.gradient_logger:
        wandb.watch(model, log="all", log_freq=100, log_graph=True)
    uploaded: set[str] = set()
    first = True

    def _plot(ctx: OnlineRLContext | OfflineRLContext) -> None:
        nonlocal first
        if first:
            first = False
            ctx.wandb_url = _project_url(run)
            current_task().on_close(run.finish)
        record: dict[str, Any] = {}
        if cfg.plot_logger and ctx.train_output is not None and len(ctx.train_output) > 0:
            output = merge_train_output(ctx.train_output)
            for metric in metric_list:
                if metric in output:
                    record[metrics.learner_key(metric)] = _wandb_value(wandb, output[metric])
        for key, value in ctx.info_for_logging.items():
            record[key] = _wandb_value(wandb, value)
        if cfg.action_logger and not offline and ctx.inference_output:
            record.update(_action_records(wandb, ctx.inference_output, "collector"))
        if not np.isinf(ctx.eval_value):
            record.update(eval_scalars(ctx.eval_value, ctx.eval_output))
            record[metrics.LEARNER_TRAIN_ITER] = ctx.train_iter
            if offline:
                record[metrics.learner_key("train_epoch")] = ctx.train_epoch
            else:
                record[metrics.COLLECTOR_ENV_STEPS] = ctx.env_step
            record.update(_eval_records(wandb, cfg, ctx.eval_output, record_path, uploaded))
        if record:
            run.log(record, step=ctx.trained_env_step if offline else ctx.env_step)

    return _plot


def _import_wandb() -> Any:
    try:
        import wandb
    except ImportError as e:
        raise ConfigError(f'The wandb loggers need wandb ({e}): pip install "ding_ray[wandb]"') from e
    return wandb


def _logger_cfg(cfg: dict | EasyDict | None, offline: bool) -> EasyDict:
    """DI-engine's switches: no cfg logs the metrics only; a cfg turns off what it does not name."""
    if cfg is None:
        return EasyDict({key: key == "plot_logger" for key in CFG_KEYS})
    unknown = [key for key in cfg if key not in CFG_KEYS]
    if unknown:
        hint = close_matches(unknown[0], CFG_KEYS)
        raise ConfigError(
            f"Unknown wandb logger cfg key {unknown[0]!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; the keys are {', '.join(CFG_KEYS)}."
        )
    cfg = EasyDict({key: bool(cfg.get(key, False)) for key in CFG_KEYS})
    if cfg.vis_dataset:
        raise ConfigError(
            "cfg.vis_dataset (a t-SNE picture of the dataset) is not supported by ding_ray's wandb loggers"
            + ("" if offline else " and only ever applied to the offline one")
            + ": set vis_dataset=False."
        )
    return cfg


def _start_run(
    wandb: Any,
    project_name: str,
    exp_config: dict | None,
    run_name: str | None,
    anonymous: bool,
    wandb_sweep: bool,
) -> Any:
    kwargs: dict[str, Any] = {"project": project_name}
    if exp_config:
        kwargs["config"] = dict(exp_config)
    if run_name is not None:
        kwargs["name"] = run_name
    if anonymous:
        kwargs["anonymous"] = "must"
    if not wandb_sweep:
        # a sweep agent owns its run; otherwise finish any run still open, as DI-engine's reinit=True
        kwargs["reinit"] = "finish_previous" if _version(wandb) >= (0, 19) else True
    return wandb.init(**kwargs)


def _version(wandb: Any) -> tuple[int, ...]:
    parts = []
    for part in str(getattr(wandb, "__version__", "0")).split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _project_url(run: Any) -> str:
    url = getattr(run, "project_url", None)
    if url is None and callable(getattr(run, "get_project_url", None)):  # wandb < 0.19
        url = run.get_project_url()
    return url or ""


def _wandb_value(wandb: Any, value: Any) -> Any:
    """A number as a float, an array as a histogram, anything else (wandb media) as it is."""
    if isinstance(value, (int, float, np.number, np.ndarray, list, tuple)) or hasattr(value, "detach"):
        array = to_numpy(value)
        if array.dtype.kind in "biuf":
            return float(array.reshape(())) if array.size == 1 else wandb.Histogram(array.reshape(-1))
    return value


def _eval_records(
    wandb: Any, cfg: EasyDict, eval_output: Any, record_path: str | None, uploaded: set[str]
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    eval_output = eval_output if isinstance(eval_output, Mapping) else {}
    if cfg.return_logger:
        returns = episode_returns(eval_output)
        if returns is None:
            raise ShapeError(
                "cfg.return_logger needs the returns of the evaluated episodes in "
                "ctx.eval_output['eval_episode_return'] (the evaluator's info) or ['episode_return']."
            )
        record[EVAL_RETURNS] = wandb.Histogram(returns)
    if cfg.action_logger and eval_output.get("output") is not None:
        record.update(_action_records(wandb, eval_output["output"], "evaluator"))
    if cfg.video_logger:
        videos = _new_videos([record_path, eval_output.get("replay_path")], uploaded)
        if videos:
            record[EVAL_VIDEO] = [wandb.Video(path, format="mp4") for path in videos]
    return record


def _new_videos(folders: list[str | None], uploaded: set[str]) -> list[str]:
    """The mp4 files under ``folders`` not uploaded yet, oldest first."""
    found = []
    for folder in dict.fromkeys(f for f in folders if f):
        if os.path.isdir(folder):
            found += [os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".mp4")]
    new = sorted((p for p in found if os.path.abspath(p) not in uploaded), key=os.path.getmtime)
    uploaded.update(os.path.abspath(p) for p in new)
    return new


def _action_records(wandb: Any, outputs: Any, section: str) -> dict[str, Any]:
    """Histograms of a batch of policy outputs ({env_id: output}, a list of outputs or of
    trajectories): all logits (q-values for DQN), the mean probability of each action, the actions."""
    flat = _flatten_outputs(outputs)
    record: dict[str, Any] = {}
    logits = [to_numpy(o["logit"]).astype(np.float64) for o in flat if o.get("logit") is not None]
    if logits:
        logits = np.stack(logits).reshape(len(logits), -1)
        record[f"{section}/logit"] = wandb.Histogram(logits.reshape(-1))
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = (shifted / shifted.sum(axis=-1, keepdims=True)).mean(axis=0)
        record[f"{section}/action_prob"] = wandb.Histogram(np_histogram=(probs, np.arange(probs.size + 1)))
    actions = [
        to_numpy(o["action"]).astype(np.float64).reshape(-1) for o in flat if o.get("action") is not None
    ]
    if actions:
        record[f"{section}/action"] = wandb.Histogram(np.concatenate(actions))
    return record


def _flatten_outputs(outputs: Any) -> list[Mapping]:
    """The policy outputs (dicts with 'logit' or 'action') found in nested dicts and lists."""
    if isinstance(outputs, Mapping):
        if "logit" in outputs or "action" in outputs:
            return [outputs]
        outputs = outputs.values()
    elif not isinstance(outputs, (list, tuple)):
        return []
    return [output for item in outputs for output in _flatten_outputs(item)]
