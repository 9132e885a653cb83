"""``cluster.yaml`` is a valid Ray cluster-launcher config (checked against Ray's schema offline)."""

import os

import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from tests.distributed.conftest import REPO


def test_cluster_yaml_is_a_valid_launcher_config():
    with open(os.path.join(REPO, "cluster.yaml")) as f:
        config = yaml.safe_load(f)
    validate_config(prepare_config(config))
    types = config["available_node_types"]
    assert config["head_node_type"] == "head" and types["cpu_worker"]["min_workers"] >= 1
    assert types["gpu_worker"]["min_workers"] == 0  # optional GPU learner node
    assert any("pip install" in cmd and "ding_ray" in cmd for cmd in config["setup_commands"])
    assert any("--dashboard-host=127.0.0.1" in cmd for cmd in config["head_start_ray_commands"])
