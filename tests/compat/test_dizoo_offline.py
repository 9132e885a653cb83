"""dizoo's behaviour-cloning configs (classic_control, box2d, mujoco), changed only in env type and id:
``cartpole_bc_config`` compiles for the offline entries; the BCO configs, which belong to DI-engine's
BCO entry (behaviour cloning from observation, ``serial_pipeline_bco``), are refused by name."""

from __future__ import annotations

import pytest

from ding_ray.config import compile_config
from ding_ray.errors import ConfigError
from tests.compat.dizoo import read_dizoo_config

BCO = [
    "classic_control/cartpole/config/cartpole_bco_config.py",
    "box2d/lunarlander/config/lunarlander_bco_config.py",
    "box2d/bipedalwalker/config/bipedalwalker_bco_config.py",
    "mujoco/config/halfcheetah_bco_config.py",
    "mujoco/config/hopper_bco_config.py",
]


def test_cartpole_bc_config_compiles_with_its_keys():
    main, create = read_dizoo_config("classic_control/cartpole/config/cartpole_bc_config.py")
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    assert cfg.policy.type == "bc" and cfg.policy.learn.train_epoch == 20
    assert (cfg.policy.learn.optimizer, cfg.policy.learn.learning_rate) == ("SGD", 0.01)
    assert cfg.policy.model.encoder_hidden_size_list == [64, 64, 128]


@pytest.mark.parametrize("path", BCO)
def test_bco_configs_are_refused_by_name(path):
    main, create = read_dizoo_config(path)
    with pytest.raises(ConfigError, match=r"belongs to DI-engine's BCO entry \(serial_pipeline_bco\)"):
        compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
