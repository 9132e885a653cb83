"""DI-engine's middleware: factories that return stages (``def _stage(ctx)``) for ``Task.use``.

Each stage calls only the plain interface of the component it is given (``collect``, ``push``,
``sample``, ``update``, ``train``, ``eval``), so a local object and a Ray actor of the same class
fit the same stage. Names load on first use: a driver that imports a few stages does not pay
for torch (the datasets, checkpoints and GAE need it) before Ray has started.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # data stages (data.py, offline.py, offline_dataset.py, her.py, enhancer.py)
    "buffer_saver": "data",
    "data_pusher": "data",
    "offpolicy_data_fetcher": "data",
    "priority_calculator": "data",
    "sqil_data_pusher": "data",
    "her_data_enhancer": "her",
    "nstep_reward_enhancer": "enhancer",
    "offline_data_fetcher": "offline",
    "offline_data_saver": "offline",
    "HDF5Dataset": "offline_dataset",
    "NaiveRLDataset": "offline_dataset",
    # collect / train / evaluate / control stages
    "EpisodeCollector": "collect",
    "StepCollector": "collect",
    "TransitionList": "collect",
    "collector": "collect",
    "random_collector": "collect",
    "inferencer": "collect",
    "rolloutor": "collect",
    "CkptSaver": "control",
    "ckpt_saver": "control",
    "epoch_timer": "control",
    "eps_greedy_handler": "control",
    "eps_greedy_masker": "control",
    "final_ctx_saver": "control",
    "termination_checker": "control",
    "interaction_evaluator": "evaluate",
    "interaction_evaluator_ttorch": "evaluate",
    "OffPolicyLearner": "train",
    "PolicyLearner": "train",
    "gae_estimator": "train",
    "multistep_trainer": "train",
    "reward_estimator": "train",
    "trainer": "train",
    "weights_publisher": "train",
    # DI-engine's exchangers between processes: no-ops in one process (exchange.py)
    "ContextExchanger": "exchange",
    "ModelExchanger": "exchange",
    # loggers (logger.py, wandb_logger.py)
    "offline_logger": "logger",
    "online_logger": "logger",
    "wandb_offline_logger": "wandb_logger",
    "wandb_online_logger": "wandb_logger",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ding_ray.framework.middleware' has no attribute '{name}'")
    return getattr(importlib.import_module(f"ding_ray.framework.middleware.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return __all__
