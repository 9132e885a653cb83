import json
import os

import pytest

from ding_ray.config import (
    ConfigError,
    compile_config,
    deep_merge_dicts,
    merge_config,
    read_config,
    save_config,
)

MAIN = dict(
    exp_name="cfgtest",
    env=dict(
        env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=195
    ),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2),
        learn=dict(batch_size=32),
        collect=dict(n_sample=16),
        other=dict(eps=dict(decay=1000)),
    ),
)
CREATE = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def test_deep_merge_is_recursive_and_does_not_mutate():
    a = {"x": {"y": 1, "z": 2}, "w": 0}
    b = {"x": {"y": 5}, "v": 1}
    merged = deep_merge_dicts(a, b)
    assert merged == {"x": {"y": 5, "z": 2}, "w": 0, "v": 1}
    assert a == {"x": {"y": 1, "z": 2}, "w": 0}


def test_merge_config_rejects_unknown_key_with_path_and_hint():
    defaults = {"learn": {"batch_size": 64, "learning_rate": 1e-3}}
    with pytest.raises(ConfigError) as e:
        merge_config(defaults, {"learn": {"learning_rat": 0.1}}, "policy")
    msg = str(e.value)
    assert "policy.learn.learning_rat" in msg and "policy.learn.learning_rate" in msg


def test_merge_config_type_checks_and_converts():
    defaults = {"n": 10, "lr": 0.1, "flag": True, "name": "a", "free": None}
    merged = merge_config(defaults, {"n": 1e4, "lr": 1, "free": [1, 2]})
    assert merged.n == 10000 and isinstance(merged.n, int)
    assert merged.lr == 1.0 and isinstance(merged.lr, float)
    for bad in ({"n": 0.5}, {"flag": 1}, {"name": 3}, {"lr": "fast"}):
        with pytest.raises(ConfigError, match="expects"):
            merge_config(defaults, bad)


def test_compile_config_merges_all_component_defaults(tmp_path):
    os.chdir(tmp_path)
    cfg = compile_config(MAIN, seed=3, auto=True, create_cfg=CREATE, save_cfg=True)
    assert cfg.seed == 3 and cfg.policy.type == "dqn" and cfg.env.manager.type == "base"
    assert cfg.policy.learn.batch_size == 32 and cfg.policy.learn.learning_rate == 0.001
    assert cfg.policy.learn.learner.hook.save_ckpt_after_run is True
    assert cfg.policy.collect.collector.n_sample == 16
    assert cfg.policy.eval.evaluator.stop_value == 195 and cfg.policy.eval.evaluator.n_episode == 2
    assert cfg.policy.other.replay_buffer.type == "advanced"  # DI-engine's default
    assert cfg.policy.other.eps.decay == 1000 and cfg.policy.other.eps.start == 0.95
    saved = json.load(open(tmp_path / "cfgtest" / "total_config.json"))
    assert saved["policy"]["learn"]["batch_size"] == 32


def test_compile_config_unknown_key_anywhere_names_the_full_path(tmp_path):
    os.chdir(tmp_path)
    bad = deep_merge_dicts(MAIN, {"policy": {"learn": {"updat_per_collect": 3}}})
    with pytest.raises(ConfigError, match=r"policy\.learn\.updat_per_collect.*update_per_collect"):
        compile_config(bad, create_cfg=CREATE, save_cfg=False)
    bad = deep_merge_dicts(MAIN, {"env": {"collector_env_nums": 3}})
    with pytest.raises(ConfigError, match=r"env\.collector_env_num"):
        compile_config(bad, create_cfg=CREATE, save_cfg=False)


def test_compile_config_unknown_policy_type():
    with pytest.raises(KeyError, match="Unknown policy type 'dqm'.*'dqn'"):
        compile_config(MAIN, create_cfg=dict(CREATE, policy=dict(type="dqm")), save_cfg=False)


def test_save_config_writes_di_engine_s_python_form_that_read_config_reads_back(tmp_path):
    from ding_ray.configs.cartpole_dqn import create_config, main_config

    main = dict(main_config, exp_name=str(tmp_path / "exp"))
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create_config, save_cfg=False)
    path = str(tmp_path / "total_config.py")
    save_config(cfg, path, save_formatted=True)
    main_back, create_back = read_config(path)
    assert main_back == json.loads(json.dumps(cfg)) and create_back == {}
    assert (tmp_path / "formatted_total_config.py").read_text() == (tmp_path / "total_config.py").read_text()
    assert "exp_config = {" in (tmp_path / "total_config.py").read_text()  # DI-engine's name for it
    # the compiled tree read back compiles again to the same config
    again = compile_config(main_back, seed=0, auto=True, create_cfg=create_back, save_cfg=False)
    assert again == cfg


def test_save_config_writes_json_by_default_python_and_yaml_by_suffix(tmp_path):
    import yaml

    cfg = {"exp_name": "x", "policy": {"lr": 1e-3, "max_use": float("inf"), "layers": (64, 64)}}
    save_config(cfg, str(tmp_path / "c.json"))
    assert read_config(str(tmp_path / "c.json")) == {**cfg, "policy": {**cfg["policy"], "layers": [64, 64]}}
    save_config(cfg, str(tmp_path / "c.py"))  # inf: a value Python's literals lack
    assert read_config(str(tmp_path / "c.py"))[0]["policy"]["max_use"] == float("inf")
    save_config(cfg, str(tmp_path / "c.yaml"))
    assert yaml.safe_load((tmp_path / "c.yaml").read_text())["policy"]["layers"] == [64, 64]
    with pytest.raises(ConfigError, match="type_ must be 'py', 'yaml' or 'json', got 'toml'"):
        save_config(cfg, str(tmp_path / "c.toml"), type_="toml")
