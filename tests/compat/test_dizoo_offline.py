"""dizoo's offline configs (classic_control, box2d, mujoco), changed only in env type and id:
``cartpole_bc_config`` and the CQL configs compile for the offline entries, and the classic-control
CQL configs train on a small dataset; the BCO configs, which belong to DI-engine's BCO entry
(behaviour cloning from observation, ``serial_pipeline_bco``), are refused by name. The online
sweep (``test_dizoo_sweep.py``) leaves these out: their runs train on a file, not on collection."""

from __future__ import annotations

import copy
import math

import pytest

from ding_ray.config import compile_config
from ding_ray.entry import collect_demo_data, serial_pipeline_offline
from ding_ray.entry.result import read_result
from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
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


CQL = [
    "classic_control/cartpole/config/cartpole_cql_config.py",
    "classic_control/pendulum/config/pendulum_cql_config.py",
    "mujoco/config/hopper_cql_config.py",
]


@pytest.mark.parametrize("path", CQL)
def test_cql_configs_compile_with_their_keys(path):
    main, create = read_dizoo_config(path)
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    assert cfg.policy.type == create.policy.type and cfg.policy.type in ("cql", "discrete_cql")
    assert cfg.policy.learn.train_epoch == main.policy.learn.train_epoch
    assert cfg.policy.learn.min_q_weight == main.policy.learn.min_q_weight
    assert cfg.policy.collect.data_path == main.policy.collect.data_path


@pytest.mark.parametrize("path", CQL[:2])
def test_a_cql_config_trains_offline_on_data_of_its_own_policy(path, tmp_path, monkeypatch):
    """Two batches collected by the config's own untrained policy (collect_demo_data: discrete CQL's
    3-step rewards, SAC's squashed actions), one epoch of serial_pipeline_offline on them, evaluated
    in one episode: the data its collect mode writes is the data its learn mode takes."""
    monkeypatch.chdir(tmp_path)
    main, create = read_dizoo_config(path)
    main.policy.collect.update(data_type="naive", data_path="demo.msgpack")
    main.policy.learn.train_epoch = 1
    main.env.evaluator_env_num = main.env.n_evaluator_episode = 1
    main.policy.eval.evaluator.eval_freq = 1  # dizoo's 100 or 500 iterations: after the epoch too
    cfg = compile_config(copy.deepcopy(main), seed=0, auto=True, create_cfg=create, save_cfg=False)
    untrained = create_policy(cfg.policy, enable_field=["learn"]).learn_mode.state_dict()
    batch_size = cfg.policy.learn.batch_size
    collect_demo_data(
        (main, create),
        seed=0,
        collect_count=2 * batch_size,
        state_dict=untrained,
        expert_data_path="demo.msgpack",
    )
    serial_pipeline_offline((main, create), seed=0)
    result = read_result(main.exp_name)
    assert "error" not in result and result["train_iter"] == 2, result
    assert math.isfinite(result["last_eval_return"]), result
