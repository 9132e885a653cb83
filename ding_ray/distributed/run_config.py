"""``compile_ray_config``: a run's config with the ``ray`` section's defaults and the model's sizes
read from the env, ready for ``start_run`` and ``ray_pipeline``."""

from __future__ import annotations

from typing import Any

from easydict import EasyDict

from ding_ray.config import compile_config
from ding_ray.config.compile import check_priority_buffer, split_input_cfg
from ding_ray.distributed.config import RayConfig
from ding_ray.envs import get_vec_env_setting
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError


def compile_ray_config(
    input_cfg: Any, seed: int = 0, save_cfg: bool = True, renew_dir: bool = True
) -> EasyDict:
    """``compile_config`` with the ``ray`` section's defaults, and model shapes read from the env.
    ``renew_dir=False``: write into ``exp_name`` even if it exists (a resumed run)."""
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    cfg = compile_config(
        main_cfg,
        seed=seed,
        create_cfg=create_cfg,
        save_cfg=save_cfg,
        renew_dir=renew_dir,
        # A run into an existing experiment folder gets a fresh <exp_name>_<yymmdd_HHMMSS> one, as
        # serial runs do; its actors' namespace is named after it, so two runs never share names.
        extra_defaults={"ray": RayConfig.default_config()},
    )
    check_priority_buffer(cfg)
    if cfg.policy.get("multi_gpu"):
        # DI-engine's data-parallel switch is a learner group here; the group averages the gradients
        if cfg.ray.num_learners < 2:
            raise ConfigError(
                "policy.multi_gpu=True trains with a learner group: set ray.num_learners to the number of "
                "learners (2 or more; each gets ray.learner_num_gpus GPUs)."
            )
        cfg.policy.multi_gpu = False

    model = cfg.policy.model
    if model.get("obs_shape") is None or model.get("action_shape") is None:
        env_fn, env_cfgs, _ = get_vec_env_setting(cfg.env)
        env = env_fn(cfg=env_cfgs[0])
        fill_model_shapes(cfg, env.observation_space, env.action_space)
        env.close()
    return cfg
