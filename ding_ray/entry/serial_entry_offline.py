"""``serial_pipeline_offline``: train a policy on an offline dataset, evaluating in the env after each
pass over it (BC, CQL, any policy whose learn mode takes batches of transitions)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from easydict import EasyDict
from torch.utils.data import DataLoader, Dataset

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.entry.serial_entry import check_env_setting, env_class
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError
from ding_ray.framework.middleware.offline_dataset import load_offline_data
from ding_ray.policy import Policy, create_policy
from ding_ray.utils.result import write_result
from ding_ray.utils.run_dir import discard_unstarted, events_writer
from ding_ray.utils.runtime import error_text, set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import BaseLearner, InteractionSerialEvaluator

logger = logging.getLogger(__name__)


def serial_pipeline_offline(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = int(1e10),
) -> tuple[Policy, bool]:
    """Train on the dataset at ``policy.collect.data_path`` (``data_type`` 'naive' or 'hdf5') for
    ``policy.learn.train_epoch`` shuffled passes in batches of ``learn.batch_size``; after each pass,
    evaluate when ``eval_freq`` says so. Stop at the stop value, after the epoch in which
    ``max_train_iter`` is reached, or after the last epoch. Returns ``(policy, stop)``, as DI-engine's
    entry does (``stop``: the stop value was reached or the budget ran out).

    ``input_cfg`` and ``env_setting`` as in ``serial_pipeline``; only evaluator envs are built.
    Writes ``<exp_name>/total_config.json``, TensorBoard logs under ``<exp_name>/log/serial``, the
    learner's checkpoints under ``<exp_name>/ckpt`` and ``<exp_name>/result.json`` at the end.
    """
    setup_logging()
    cfg = compile_offline_config(input_cfg, seed, env_setting)
    load = partial(load_offline_data, cfg.policy.collect.data_path, cfg.policy.collect.data_type)
    run, dataset, epochs = start_offline_run(cfg, env_setting, model, load)
    loader = DataLoader(dataset, cfg.policy.learn.batch_size, shuffle=True, collate_fn=as_list)
    with run:
        for _ in range(epochs):
            for batch in loader:
                run.learner.train(batch)
            if run.evaluator.should_eval(run.learner.train_iter):
                run.evaluate()
            if run.stop or run.learner.train_iter >= max_train_iter:
                run.stop = True
                break
    return run.policy, run.stop


def as_list(items: list) -> list:
    """The batch as the list of its transitions: the policy's learn mode stacks them."""
    return items


def compile_offline_config(
    input_cfg: Any, seed: int, env_setting: Any, data_path: str | None = None
) -> EasyDict:
    """The compiled config of an offline run; ``data_path`` (``serial_pipeline_bc``'s argument)
    becomes ``policy.collect.data_path``, which must name the dataset."""
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    collect = main_cfg.setdefault("policy", EasyDict()).setdefault("collect", EasyDict())
    if data_path is not None:
        collect["data_path"] = data_path
    if not isinstance(collect, dict) or not collect.get("data_path"):
        raise ConfigError(
            "An offline run trains on the file at policy.collect.data_path: set it to the file that "
            "collect_demo_data wrote."
        )
    env_cls = env_class(env_setting)
    return compile_config(main_cfg, seed=seed, env=env_cls, auto=True, create_cfg=create_cfg)


def start_offline_run(
    cfg: EasyDict, env_setting: Any, model: torch.nn.Module | None, load_dataset: Callable[[], Dataset]
) -> tuple[OfflineRun, Dataset, int]:
    """``(run, its dataset, train epochs)`` of a compiled offline config; a run that fails before it
    starts (a bad ``train_epoch``, dataset or model) leaves no run folder behind."""
    try:
        epochs = train_epochs(cfg)
        dataset = load_dataset()
        return OfflineRun(cfg, env_setting, model, dataset), dataset, epochs
    except BaseException:
        discard_unstarted(cfg.exp_name)
        raise


def train_epochs(cfg: EasyDict) -> int:
    epochs = cfg.policy.learn.get("train_epoch")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ConfigError(
            f"policy.learn.train_epoch is {epochs!r}: the offline entries train that many passes over the "
            "dataset, so set it to a positive int (dizoo's cartpole_bc_config: 20)."
        )
    return epochs


class OfflineRun:
    """The evaluator envs, policy (learn and eval modes), learner and evaluator of an offline run, as
    DI-engine's offline entries build them, closed together when the run ends. Entering calls the
    learner's ``before_run`` hooks; leaving calls its ``after_run`` hooks (on a clean end), writes
    ``<exp_name>/result.json`` (with the error of a failed run) and closes all."""

    def __init__(
        self, cfg: EasyDict, env_setting: Any, model: torch.nn.Module | None, dataset: Dataset
    ) -> None:
        self.cfg = cfg
        self.stop, self.last_return = False, None
        self._start = time.perf_counter()
        set_torch_threads(cfg.policy.learn.get("num_threads", 1))
        if env_setting is None:
            env_fn, _, evaluator_env_cfg = get_vec_env_setting(cfg.env)
        else:
            env_fn, _, evaluator_env_cfg = check_env_setting(env_setting)
        env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
        env.seed(cfg.seed, dynamic_seed=False)
        set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
        try:
            fill_model_shapes(cfg, env.observation_space, env.action_space)
            self.policy = create_policy(cfg.policy, model=model, enable_field=["learn", "eval"])
            self.policy.check_spaces(env.observation_space.shape, *space_info(env.action_space))
            check_dataset(dataset, cfg)
        except BaseException:
            env.close()
            raise
        self.tb_logger = events_writer(cfg.exp_name, "serial")
        self.learner = BaseLearner(
            cfg.policy.learn.learner, self.policy.learn_mode, self.tb_logger, exp_name=cfg.exp_name
        )
        self.evaluator = InteractionSerialEvaluator(
            cfg.policy.eval.evaluator, env, self.policy.eval_mode, self.tb_logger, exp_name=cfg.exp_name
        )

    def __enter__(self) -> OfflineRun:
        try:
            self.learner.call_hook("before_run")
        except BaseException:
            self.close()
            raise
        return self

    def evaluate(self) -> None:
        """One evaluation; ``stop`` and ``last_return`` take its outcome."""
        self.stop, info = self.evaluator.eval(self.learner.save_checkpoint, self.learner.train_iter)
        self.last_return = float(info["eval_episode_return_mean"])

    def __exit__(self, exc_type: Any, error: BaseException | None, *_: Any) -> None:
        try:
            if error is None:
                self.learner.call_hook("after_run")
                if self.last_return is not None:
                    logger.info("final reward is: %.3f", self.last_return)
        finally:
            try:
                self.write_result(error)
            finally:
                self.close()

    def write_result(self, error: BaseException | None) -> None:
        extra = dict(seed=self.cfg.seed, pipeline="serial_offline")
        if error is not None:
            extra["error"] = error_text(error)
        write_result(
            self.cfg.exp_name,
            env_steps=0,  # an offline run takes no env steps but its evaluations'
            train_iter=self.learner.train_iter,
            best_eval_return=self.evaluator.best_return,
            last_eval_return=self.last_return,
            stop=self.stop,
            wall_s=time.perf_counter() - self._start,
            **extra,
        )

    def close(self) -> None:
        try:
            self.evaluator.close()
            self.learner.close()
        finally:
            self.tb_logger.close()


def check_dataset(dataset: Dataset, cfg: EasyDict) -> None:
    """The dataset has transitions, and its observations have the shape the policy's model takes."""
    if len(dataset) == 0:
        raise ConfigError(f"The offline dataset {cfg.policy.collect.data_path} holds no transitions.")
    first = dataset[0]
    if "obs" not in first:
        raise ConfigError(
            f"The offline dataset {cfg.policy.collect.data_path} has no 'obs' field "
            f"(fields: {sorted(first)})."
        )
    want = cfg.policy.model.get("obs_shape")
    shape = tuple(getattr(first["obs"], "shape", ()))
    if want is not None and not isinstance(first["obs"], dict):
        want_shape = (want,) if isinstance(want, int) else tuple(want)
        if shape != want_shape:
            raise ConfigError(
                f"The offline dataset's observations have shape {shape}, the policy's model takes "
                f"{want_shape} (policy.model.obs_shape): the data was collected in another env."
            )
