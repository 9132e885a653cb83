"""``serial_pipeline_onpolicy``: collect ``n_sample``, train on exactly that data, evaluate (PPO).

No replay buffer: each learner call gets the samples of the collect call just made, with the
weights that produced them, and the data is dropped afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import torch

from ding_ray.config.compile import split_input_cfg
from ding_ray.entry.serial_entry import SerialRun, train
from ding_ray.policy import get_policy_cls
from ding_ray.utils.registry import POLICY_REGISTRY
from ding_ray.utils.runtime import setup_logging


def serial_pipeline_onpolicy(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = None,
    max_env_step: int | None = None,
    dynamic_seed: bool = True,
    resume: str | None = None,
) -> Any:
    """Train an on-policy policy until the evaluator reaches ``env.stop_value`` or a budget runs
    out; return the policy. Arguments and output folder as ``serial_pipeline``; ``result.json``
    says ``"pipeline": "serial_onpolicy"``. The run is the ``on_policy`` stage list of
    ``ding_ray.framework.pipelines`` on local components. Each learn call trains on one collect
    call's data; as in DI-engine, its iterations are the gradient steps it made (PPO: epochs x
    minibatches), which ``eval_freq`` counts. Run checkpoints and ``resume=`` as in
    ``serial_pipeline`` (there is no buffer to save).
    """
    start = time.perf_counter()
    setup_logging()
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    run = SerialRun(
        main_cfg, create_cfg, seed, env_setting, model, dynamic_seed, True, resume, start_at=start
    )
    return train(run, max_env_step, max_train_iter)


def is_on_policy(main_cfg: Mapping, create_cfg: Mapping) -> bool:
    """Whether the config names an on-policy policy (its ``on_policy`` key, else its class default)."""
    policy = main_cfg.get("policy") or {}
    if not isinstance(policy, Mapping):
        return False  # compile_config reports a policy section that is not a dict
    if "on_policy" in policy:
        return bool(policy["on_policy"])
    name = str((create_cfg.get("policy") or {}).get("type") or policy.get("type") or "")
    name = name.removesuffix("_command")  # DI-engine's entries ask for '<type>_command'
    if not name or name not in POLICY_REGISTRY:
        return False  # compile_config reports an unknown type with its own message
    return bool(get_policy_cls({"type": name}).default_config().get("on_policy", False))
