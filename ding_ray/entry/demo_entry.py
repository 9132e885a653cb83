"""``collect_demo_data``: roll out a trained policy and save its transitions as offline data."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import torch

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.entry.serial_entry import check_env_setting, env_class
from ding_ray.entry.trained_policy import load_weights_of
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError
from ding_ray.framework.middleware.offline_dataset import check_data_type, import_h5py, save_offline_data
from ding_ray.policy import create_policy
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import SampleSerialCollector
from ding_ray.worker.learner import load_checkpoint

logger = logging.getLogger(__name__)


def collect_demo_data(
    input_cfg: str | tuple[dict, dict],
    seed: int,
    collect_count: int,
    expert_data_path: str | None = None,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    state_dict: dict | None = None,
    state_dict_path: str | None = None,
) -> None:
    """Collect ``collect_count`` transitions with the weights in ``state_dict`` (or the checkpoint at
    ``state_dict_path``) and write them to ``expert_data_path`` (default ``policy.collect.save_path``)
    in ``policy.collect.data_type``'s format: ``'naive'``, ding_ray's checksummed msgpack file (not
    DI-engine's pickle), or ``'hdf5'``.

    DI-engine's signature and semantics: the config is the expert's (its policy type and model),
    the collector envs are seeded with ``seed``, and a policy with an epsilon schedule
    (``policy.other.eps``) collects greedily (``eps=0``), others with their own collect mode. Read
    the file back with ``NaiveRLDataset`` / ``HDF5Dataset`` or train on it with
    ``serial_pipeline_offline`` (``policy.collect.data_path``) or ``serial_pipeline_bc``.
    """
    setup_logging()
    if not isinstance(collect_count, int) or isinstance(collect_count, bool) or collect_count < 1:
        raise ConfigError(
            f"collect_count must be a positive int (transitions to collect), got {collect_count!r}."
        )
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    env_cls = env_class(env_setting)
    cfg = compile_config(
        main_cfg,
        seed=seed,
        env=env_cls,
        auto=True,
        create_cfg=create_cfg,
        save_cfg=True,
        save_path="collect_demo_data_config.json",
    )
    path = expert_data_path or cfg.policy.collect.save_path
    if not path:
        raise ConfigError(
            "collect_demo_data needs a file to write: pass expert_data_path or set policy.collect.save_path."
        )
    data_type = cfg.policy.collect.data_type
    check_data_type(data_type)
    if data_type == "hdf5":
        import_h5py()  # a missing extra is reported before collecting
    if state_dict is None:
        if state_dict_path is None:
            raise ConfigError(
                "collect_demo_data needs the expert's weights: pass state_dict or state_dict_path."
            )
        state_dict = load_checkpoint(state_dict_path)
    source = state_dict_path or "the state_dict given"

    set_torch_threads(cfg.policy.learn.get("num_threads", 1))
    if env_setting is None:
        env_fn, collector_env_cfg, _ = get_vec_env_setting(cfg.env)
    else:
        env_fn, collector_env_cfg, _ = check_env_setting(env_setting)
    env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg])
    env.seed(seed)
    set_pkg_seed(seed, use_cuda=cfg.policy.cuda)
    collector = None
    try:
        fill_model_shapes(cfg, env.observation_space, env.action_space)
        policy = create_policy(cfg.policy, model=model, enable_field=["collect", "eval"])
        policy.check_spaces(env.observation_space.shape, *space_info(env.action_space))
        load_weights_of(policy.collect_mode, state_dict, source, cfg.policy.type)
        collector = SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode)
        policy_kwargs = {"eps": 0.0} if "eps" in cfg.policy.other else None
        transitions = collector.collect(n_sample=collect_count, policy_kwargs=policy_kwargs)
    finally:
        if collector is not None:
            collector.close()
        else:
            env.close()
    save_offline_data(transitions, path, data_type)
    logger.info("collect_demo_data: %d transitions written to %s (%s)", len(transitions), path, data_type)
