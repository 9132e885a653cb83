"""``cluster.yaml`` (AWS), ``cluster-gcp.yaml`` (GCP) and ``cluster-local.yaml`` (machines of one's own)
are valid Ray cluster-launcher configs (checked against Ray's schema offline: nothing is launched)
that share every line not about the provider, with the properties that make them boot: a pinned
image with Python >= 3.10, CPU torch on CPU nodes and CUDA torch on the GPU node, no port but SSH
open to the world, and the buffer placed on the head by a resource the code requests.
tests/hosts/test_cluster_launch.py launches ``cluster-local.yaml`` for real."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import ray
import torch
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from ding_ray.distributed import ClusterError, RayRun, check_resources, make_plan
from ding_ray.distributed.config import RayConfig
from ding_ray.distributed.placement import actor_demands
from ding_ray.entry import compile_ray_config
from tests.distributed.configs import small_config
from tests.distributed.conftest import REPO

FILES = ["cluster.yaml", "cluster-gcp.yaml"]  # the cloud's
ALL_FILES = [*FILES, "cluster-local.yaml"]
# The top-level sections about the provider; every other one is the same, line for line, in all files.
PROVIDER_SECTIONS = {
    "provider",
    "auth",
    "docker",
    "available_node_types",
    "head_node_type",
    "max_workers",  # the on-premise provider: as many as worker_ips
    "head_setup_commands",  # the storage's filesystem package (s3fs, gcsfs)
    "worker_setup_commands",
}
STORAGE_PACKAGE = {"aws": "s3fs", "gcp": "gcsfs", "local": None}  # a local cluster mounts its storage
TORCH = torch.__version__.split("+")[0]  # the torch the project is tested with, e.g. 2.13.0
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def load(name: str) -> dict[str, Any]:
    with open(os.path.join(REPO, name)) as f:
        return yaml.safe_load(f)


def sections(name: str) -> dict[str, list[str]]:
    """The lines of each top-level section of the file ``name``, with the comment lines right above it."""
    found: dict[str, list[str]] = {}
    current, comments = None, []
    with open(os.path.join(REPO, name)) as f:
        for line in f.read().splitlines():
            key = re.match(r"([a-z_]+):", line)
            if key:
                current = key[1]
                found[current] = comments + [line]
                comments = []
            elif line.startswith("#"):
                comments.append(line)
            elif not line.strip():
                comments = []
            elif current is not None:
                found[current].append(line)
    return found


def strings(node: Any) -> Iterator[str]:
    """Every string value anywhere in a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def setup_of(config: dict[str, Any], node_type: str) -> list[str]:
    """The setup commands the launcher runs on a node of ``node_type``: a worker type's own
    ``worker_setup_commands`` replace the global ``setup_commands`` + ``worker_setup_commands``."""
    if node_type == config["head_node_type"]:
        return config["setup_commands"] + config.get("head_setup_commands", [])
    own = config["available_node_types"][node_type].get("worker_setup_commands")
    return own if own is not None else config["setup_commands"] + config.get("worker_setup_commands", [])


def image_of(config: dict[str, Any], node_type: str) -> str:
    own = config["available_node_types"][node_type].get("docker", {}).get("worker_image")
    return own or config["docker"]["image"]


@pytest.mark.parametrize("name", ALL_FILES)
def test_file_passes_rays_schema_offline(name):
    config = load(name)
    validate_config(prepare_config(copy.deepcopy(config)))  # offline: no cloud call
    # the check is real: a misspelt key or a wrong type fails it
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config({**copy.deepcopy(config), "max_worker": 5}))
    bad = copy.deepcopy(config)
    bad["file_mounts_sync_continuously"] = "no"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(bad))


def test_the_files_share_every_line_that_is_not_about_the_provider():
    texts = {name: sections(name) for name in ALL_FILES}
    shared = set().union(*texts.values()) - PROVIDER_SECTIONS
    assert {"setup_commands", "head_start_ray_commands", "worker_start_ray_commands"} <= shared
    for key in sorted(shared):
        first, *others = [(name, texts[name].get(key)) for name in ALL_FILES]
        for name, lines in others:
            assert lines == first[1], f"{key}: {name} differs from {first[0]}"
    assert load("cluster-local.yaml")["provider"]["type"] == "local"


@pytest.mark.parametrize("name", FILES)
def test_every_node_runs_a_pinned_image_with_python_3_10_or_newer(name):
    config = load(name)
    for node_type in config["available_node_types"]:
        image = image_of(config, node_type)
        match = re.fullmatch(r"rayproject/ray:(\d+\.\d+\.\d+)-py3(\d+)-(cpu|gpu|cu\d+)", image)
        assert match, f"{node_type}: {image} is not a pinned rayproject/ray:<version>-py3XX-<device> tag"
        assert match[1] == ray.__version__  # the Ray the project is tested with
        assert int(match[2]) >= 10
        gpu_node = "GPU" in node_type.upper()
        assert (match[3] != "cpu") == gpu_node, f"{node_type}: {image}"
    with open(os.path.join(REPO, name)) as f:
        assert "NEVER launched for real" in f.read(2000)  # the header says what was not tried


@pytest.mark.parametrize("name", ALL_FILES)
def test_cpu_nodes_get_cpu_torch_and_the_gpu_node_a_cuda_build(name):
    config = load(name)
    # the on-premise provider has one node type, the head's setup for every node
    types = config.get("available_node_types", {"head": {}})
    config.setdefault("head_node_type", "head")
    for node_type in types:
        commands = setup_of(config, node_type)
        torch_installs = [c for c in commands if re.search(r"pip install .*\btorch\b", c)]
        assert len(torch_installs) == 1 and f"torch=={TORCH}" in torch_installs[0], (node_type, commands)
        if "gpu" in node_type:
            # no CPU index: PyPI's Linux wheel is the CUDA build (or an explicit cuXXX index)
            assert "/whl/cpu" not in torch_installs[0]
        else:
            assert CPU_INDEX in torch_installs[0], (node_type, torch_installs)
        # the working copy, mounted on every node, installed after torch (so pip keeps that torch),
        # then the filesystem package of the checkpoint bucket (DING_RAY_STORAGE_PATH)
        assert commands.index(torch_installs[0]) < commands.index("python -m pip install -q -e ~/ding-ray")
        package = STORAGE_PACKAGE[config["provider"]["type"]]
        storage = [c for c in commands if package and c.startswith(f"python -m pip install -q {package}")]
        assert len(storage) == (1 if package else 0), (node_type, commands)
    assert config["file_mounts"] == {"~/ding-ray": "."}


@pytest.mark.parametrize("name", ALL_FILES)
def test_only_ssh_is_open_to_the_world_and_the_dashboard_is_local(name):
    config = load(name)
    # no rule, option or command anywhere names the whole internet or binds to every interface
    assert not [s for s in strings(config) if "0.0.0.0" in s]
    extra_rules = config["provider"].get("security_group", {}).get("IpPermissions", [])
    assert extra_rules == []  # the launcher's own group: SSH + intra-cluster traffic only
    head = " ".join(config["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head


@pytest.mark.parametrize("name", FILES)
def test_head_carries_the_buffer_resource_and_storage_is_shared(name):
    config = load(name)
    types = config["available_node_types"]
    assert types[config["head_node_type"]]["resources"].get("buffer_node") == 1
    assert """--resources='{"buffer_node": 1}'""" in config["head_start_ray_commands"][-1]  # also local
    assert all("buffer_node" not in t["resources"] for n, t in types.items() if n != config["head_node_type"])
    storage = [o for o in config["docker"]["run_options"] if "DING_RAY_STORAGE_PATH=" in o]
    scheme = "s3://" if config["provider"]["type"] == "aws" else "gs://"
    assert len(storage) == 1 and scheme in storage[0]
    assert not any(cmd.lstrip().startswith(("mount", "sudo mount")) for cmd in strings(config))


def test_the_buffer_resource_the_yaml_declares_is_one_the_code_requests():
    rc = RayConfig.default_config()
    assert rc.buffer_resources == {}  # a laptop run asks for nothing special
    rc.buffer_resources = {"buffer_node": 1}
    demands = dict(actor_demands(rc))
    assert demands["buffer"] == {"CPU": rc.buffer_num_cpus, "buffer_node": 1.0}
    config = load("cluster.yaml")
    cpus = {"head": 8.0, "cpu_worker": 16.0, "gpu_worker": 8.0}
    nodes = [
        {"CPU": cpus[name], **{k: float(v) for k, v in t["resources"].items()}}
        for name, t in config["available_node_types"].items()
    ]
    check_resources(list(demands.items()), nodes)  # fits the cluster the yaml describes
    workers_only = [n for n in nodes if "buffer_node" not in n]
    with pytest.raises(ClusterError, match="buffer_node"):
        check_resources(list(demands.items()), workers_only)


def test_create_actors_asks_ray_for_the_buffer_resource(ray_session, tmp_path):
    """On a Ray without a buffer_node, the buffer actor cannot be placed: the request reached Ray."""
    main, create = small_config(
        str(tmp_path / "pinned"),
        buffer_resources={"no_such_node": 1},
        actor_start_timeout_s=3.0,
        check_resources=False,  # as with an autoscaler that never delivers the node
    )
    cfg = compile_ray_config((main, create), save_cfg=False)
    with pytest.raises(ClusterError, match=r"No node had room for the slot of buffer within 3 s") as err:
        with RayRun(cfg, make_plan(cfg), max_env_step=1000):
            pass
    assert "buffer 0.25 CPU, 1 no_such_node (ray.buffer_num_cpus / buffer_resources)" in str(err.value)
