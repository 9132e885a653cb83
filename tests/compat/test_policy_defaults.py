"""Each policy's default config against DI-engine 0.5.3's, read as data from its wheel.

A default is part of what a key means: a DI-engine user who leaves a key unset must get DI-engine's
value. DI-engine's policy classes are not imported (the wheel is not installed): the ``config =
dict(...)`` of each class is read from its source with ``ast``. Every key DI-engine's default has,
ding_ray's has too, with the same value, but for the differences listed here with their reason.
"""

from __future__ import annotations

import ast

import pytest

from ding_ray.policy import POLICY_REGISTRY
from tests.compat.dizoo import wheel_root

# ding_ray's type -> DI-engine's module under ding/policy and class
DI_ENGINE_CLASSES = {
    "a2c": ("a2c.py", "A2CPolicy"),
    "dqn": ("dqn.py", "DQNPolicy"),
    "ppo": ("ppo.py", "PPOPolicy"),
    "ppo_offpolicy": ("ppo.py", "PPOOffPolicy"),
    "sac": ("sac.py", "SACPolicy"),
    "discrete_sac": ("sac.py", "DiscreteSACPolicy"),
    "impala": ("impala.py", "IMPALAPolicy"),
    "c51": ("c51.py", "C51Policy"),
    "qrdqn": ("qrdqn.py", "QRDQNPolicy"),
    "iqn": ("iqn.py", "IQNPolicy"),
    "rainbow": ("rainbow.py", "RainbowDQNPolicy"),
    "ddpg": ("ddpg.py", "DDPGPolicy"),
    "td3": ("td3.py", "TD3Policy"),
    "cql": ("cql.py", "CQLPolicy"),
    "discrete_cql": ("cql.py", "DiscreteCQLPolicy"),
    "bc": ("bc.py", "BehaviourCloningPolicy"),
}
# DI-engine's key -> why ding_ray's default differs or is absent
DIFFERENCES = {
    ("ppo_offpolicy", "type"): "DI-engine registers its PPOOffPolicy as 'ppo' too; ding_ray names it",
    ("dqn", "model.encoder_hidden_size_list"): (
        "ding_ray's DQN model picks by observation: DI-engine's [128, 128, 64] for a vector, the Nature "
        "CNN (or MinAtar's small one) for frames, where DI-engine's default builds 128-channel convs"
    ),
}


def _value(node: ast.AST):
    """A literal of DI-engine's config source: constants, lists, ``dict(...)``, ``int(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "dict":
            return {kw.arg: _value(kw.value) for kw in node.keywords}
        if node.func.id in ("int", "float") and len(node.args) == 1:
            return {"int": int, "float": float}[node.func.id](_value(node.args[0]))
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    return ast.literal_eval(node)


def di_engine_config(module: str, cls: str) -> dict:
    tree = ast.parse((wheel_root() / "ding" / "policy" / module).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and [t.id for t in stmt.targets] == ["config"]:
                    return _value(stmt.value)
    raise AssertionError(f"no config = dict(...) in class {cls} of ding/policy/{module}")


def flat(cfg: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in cfg.items():
        if isinstance(value, dict):  # an empty section has no keys to compare
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("policy_type", sorted(DI_ENGINE_CLASSES))
def test_every_di_engine_default_is_ding_ray_s(policy_type):
    theirs = flat(di_engine_config(*DI_ENGINE_CLASSES[policy_type]))
    ours = flat(POLICY_REGISTRY.get(policy_type).default_config())
    assert len(theirs) > 10  # the source was read
    wrong = {
        key: (value, ours.get(key, "<absent>"))
        for key, value in theirs.items()
        if (policy_type, key) not in DIFFERENCES and ours.get(key, "<absent>") != value
    }
    assert not wrong, f"{policy_type}: DI-engine's default vs ding_ray's: {wrong}"


@pytest.mark.parametrize("policy_type,log_sigma", [("ppo", -0.5), ("ppo_offpolicy", -2.0)])
def test_a_gaussian_actor_starts_with_di_engine_s_log_sigma(policy_type, log_sigma):
    """DI-engine's ppo_param_init sets the log std of a continuous actor to -0.5 in PPO and to -2.0 in
    its off-policy PPO."""
    source = (wheel_root() / "ding" / "policy" / "ppo.py").read_text()
    assert f"log_sigma_param, {log_sigma})" in source
    policy = POLICY_REGISTRY.get(policy_type)(
        dict(action_space="continuous", model=dict(obs_shape=3, action_shape=2, action_space="continuous")),
        enable_field=["learn"],
    )
    assert policy.learn_mode.get_attribute("model").actor_head.log_sigma_param.detach().eq(log_sigma).all()
