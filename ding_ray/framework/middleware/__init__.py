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
    "buffer_saver": "ding_ray.framework.middleware.data",
    "data_pusher": "ding_ray.framework.middleware.data",
    "offpolicy_data_fetcher": "ding_ray.framework.middleware.data",
    "priority_calculator": "ding_ray.framework.middleware.data",
    "sqil_data_pusher": "ding_ray.framework.middleware.data",
    "her_data_enhancer": "ding_ray.framework.middleware.her",
    "HERLearner": "ding_ray.framework.middleware.her",
    "nstep_reward_enhancer": "ding_ray.framework.middleware.enhancer",
    "offline_data_fetcher": "ding_ray.framework.middleware.offline",
    "offline_data_saver": "ding_ray.framework.middleware.offline",
    "HDF5Dataset": "ding_ray.framework.middleware.offline_dataset",
    "NaiveRLDataset": "ding_ray.framework.middleware.offline_dataset",
    # collect / train / evaluate / control stages
    "EpisodeCollector": "ding_ray.framework.middleware.collect",
    "StepCollector": "ding_ray.framework.middleware.collect",
    "TransitionList": "ding_ray.framework.middleware.collect",
    "collector": "ding_ray.framework.middleware.collect",
    "random_collector": "ding_ray.framework.middleware.collect",
    "inferencer": "ding_ray.framework.middleware.collect",
    "rolloutor": "ding_ray.framework.middleware.collect",
    "CkptSaver": "ding_ray.framework.middleware.control",
    "ckpt_saver": "ding_ray.framework.middleware.control",
    "epoch_timer": "ding_ray.framework.middleware.control",
    "eps_greedy_handler": "ding_ray.framework.middleware.control",
    "eps_greedy_masker": "ding_ray.framework.middleware.control",
    "final_ctx_saver": "ding_ray.framework.middleware.control",
    "termination_checker": "ding_ray.framework.middleware.control",
    "interaction_evaluator": "ding_ray.framework.middleware.evaluate",
    "interaction_evaluator_ttorch": "ding_ray.framework.middleware.evaluate",
    "OffPolicyLearner": "ding_ray.framework.middleware.train",
    "PolicyLearner": "ding_ray.framework.middleware.train",
    "gae_estimator": "ding_ray.framework.middleware.train",
    "montecarlo_return_estimator": "ding_ray.framework.middleware.montecarlo",
    "multistep_trainer": "ding_ray.framework.middleware.train",
    "reward_estimator": "ding_ray.framework.middleware.train",
    "trainer": "ding_ray.framework.middleware.train",
    "weights_publisher": "ding_ray.framework.middleware.train",
    # DI-engine's exchangers between processes: no-op stages here (a facade may import ding_ray.compat),
    # but PeriodicalModelExchanger, which hands weights between the models of one pipeline
    "PeriodicalModelExchanger": "ding_ray.framework.middleware.model_exchange",
    "ContextExchanger": "ding_ray.compat.exchange",
    "ModelExchanger": "ding_ray.compat.exchange",
    # loggers (logger.py, wandb_logger.py)
    "offline_logger": "ding_ray.framework.middleware.logger",
    "online_logger": "ding_ray.framework.middleware.logger",
    "wandb_offline_logger": "ding_ray.framework.middleware.wandb_logger",
    "wandb_online_logger": "ding_ray.framework.middleware.wandb_logger",
}

__all__ = sorted(_EXPORTS)


# Lazy: importing every stage module (torch and TensorBoard with the loggers) takes about 1.3 s more
def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ding_ray.framework.middleware' has no attribute '{name}'")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return __all__
