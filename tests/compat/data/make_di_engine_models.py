"""Record DI-engine 0.5.3's Q models (DQN, DRQN, C51DQN, QRDQN, IQN, RainbowDQN) and behaviour-cloning
models (DiscreteBC, ContinuousBC) on a fixed seed.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_models.py     # writes di_engine_models.json

For each case of ``CASES`` it builds the model after ``torch.manual_seed(BUILD_SEED)`` and records
its state dict's names, shapes and sums, and its outputs on ``observations(case)`` (DRQN's on a
two-step sequence and on one step): in eval mode, and for RainbowDQN also in train mode with the
noise drawn at construction and again after ``reset_noise`` under ``NOISE_SEED``. IQN draws its
quantile fractions in the forward, so every forward runs right after
``torch.manual_seed(FORWARD_SEED)``. It also records the constructor parameters and defaults of the
classes in ``SAME_SIGNATURE``, and for ``ENCODER_CASES`` what ``run_encoder`` gives (``ConvEncoder``
alone). ding_ray's compat test imports ``CASES``, ``run_case``, ``ENCODER_CASES``, ``run_encoder`` and
``signature`` from here, so both sides make the same calls.
"""

from __future__ import annotations

import inspect
import json
import os

import torch
from torch import nn

BUILD_SEED, INPUT_SEED, FORWARD_SEED, NOISE_SEED = 0, 1, 2, 3
BATCH = 3
# case -> (DI-engine class, model.type, constructor arguments)
# DQN has ding_ray extras; DiscreteBC, DQN's network, its default widths by observation kind
SAME_SIGNATURE = ("C51DQN", "QRDQN", "IQN", "RainbowDQN", "DRQN", "ConvEncoder", "ContinuousBC")
CASES = {
    # DQN: its dueling head's first advantage and value layers are one stacked layer in ding_ray
    "dqn": ("DQN", "dqn", dict(obs_shape=4, action_shape=2)),
    "dqn_two_head_layers": (
        "DQN",
        "dqn",
        dict(obs_shape=6, action_shape=3, encoder_hidden_size_list=[32, 16], head_layer_num=2),
    ),
    "dqn_init_bias": ("DQN", "dqn", dict(obs_shape=4, action_shape=2, init_bias=0.5)),
    "dqn_conv": (
        "DQN",
        "dqn",
        dict(obs_shape=[4, 64, 64], action_shape=3, encoder_hidden_size_list=[16, 32, 32, 64]),
    ),
    "c51dqn": ("C51DQN", "c51dqn", dict(obs_shape=4, action_shape=2)),
    "c51dqn_ln": (
        "C51DQN",
        "c51dqn",
        dict(
            obs_shape=[6],
            action_shape=3,
            encoder_hidden_size_list=[32, 16],
            head_layer_num=2,
            norm_type="LN",
            v_min=-5,
            v_max=15,
            n_atom=11,
        ),
    ),
    "c51dqn_conv": (
        "C51DQN",
        "c51dqn",
        dict(obs_shape=[4, 64, 64], action_shape=3, encoder_hidden_size_list=[16, 32, 32, 64], n_atom=11),
    ),
    "qrdqn": ("QRDQN", "qrdqn", dict(obs_shape=4, action_shape=2)),
    "qrdqn_small": (
        "QRDQN",
        "qrdqn",
        dict(
            obs_shape=6, action_shape=3, encoder_hidden_size_list=[32, 16], head_layer_num=2, num_quantiles=8
        ),
    ),
    "iqn": ("IQN", "iqn", dict(obs_shape=4, action_shape=2)),
    "iqn_small": (
        "IQN",
        "iqn",
        dict(
            obs_shape=6,
            action_shape=3,
            encoder_hidden_size_list=[32, 16],
            head_layer_num=2,
            num_quantiles=8,
            quantile_embedding_size=16,
        ),
    ),
    "rainbowdqn": ("RainbowDQN", "rainbowdqn", dict(obs_shape=4, action_shape=2)),
    "rainbowdqn_small": (
        "RainbowDQN",
        "rainbowdqn",
        dict(
            obs_shape=6,
            action_shape=3,
            encoder_hidden_size_list=[32, 16],
            head_layer_num=2,
            v_min=-1,
            v_max=1,
            n_atom=21,
        ),
    ),
    # BC: dizoo's cartpole_bc_config model; a regression actor with two hidden layers
    "discrete_bc": (
        "DiscreteBC",
        "discrete_bc",
        dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64, 128]),
    ),
    "continuous_bc": (
        "ContinuousBC",
        "continuous_bc",
        dict(obs_shape=5, action_shape=2, action_space="regression", actor_head_layer_num=2),
    ),
    "drqn": ("DRQN", "drqn", dict(obs_shape=4, action_shape=2)),
    "drqn_plain_head": (
        "DRQN",
        "drqn",
        dict(obs_shape=6, action_shape=3, encoder_hidden_size_list=[32, 16], dueling=False, res_link=True),
    ),
}


# ConvEncoder on its own: its default, and DI-engine's layer_norm convs (same padding, stride 2)
ENCODER_CASES = {
    "conv_encoder_default": dict(obs_shape=[4, 84, 84]),
    "conv_encoder_layer_norm": dict(
        obs_shape=[3, 64, 64], hidden_size_list=[16, 32, 64], kernel_size=[4, 4, 4], layer_norm=True
    ),
    "conv_encoder_layer_norm_odd": dict(
        obs_shape=[2, 37, 45], hidden_size_list=[8, 8, 16, 24], kernel_size=[3, 5, 2], layer_norm=True
    ),
}


def run_encoder(encoder_cls: type, kwargs: dict) -> dict:
    """Build ``encoder_cls(**kwargs)`` on the build seed: its parameter count, parameter shapes (in
    sorted order) and output on ``observations(kwargs)``."""
    torch.manual_seed(BUILD_SEED)
    encoder = encoder_cls(**kwargs)
    with torch.no_grad():
        out = encoder(observations(kwargs))
    return {
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "shapes": sorted(list(p.shape) for p in encoder.parameters()),
        "output": {"shape": list(out.shape), "values": out.flatten().tolist()},
    }


def observations(kwargs: dict) -> torch.Tensor:
    obs_shape = kwargs["obs_shape"]
    torch.manual_seed(INPUT_SEED)
    return torch.randn(BATCH, *([obs_shape] if isinstance(obs_shape, int) else obs_shape))


def _forward(model: nn.Module, obs: torch.Tensor) -> dict:
    """The model's tensor outputs; DRQN's on the sequence (obs, obs reversed) from a zero state, and
    on one step (``inference``) as ``inference_logit``."""
    if type(model).__name__ != "DRQN":
        return model(obs)
    sequence = model({"obs": torch.stack([obs, obs.flip(0)]), "prev_state": None})
    step = model({"obs": obs, "prev_state": None}, inference=True)
    return {
        "logit": sequence["logit"],
        "hidden_state": sequence["hidden_state"],
        "inference_logit": step["logit"],
    }


def _outputs(model: nn.Module, obs: torch.Tensor) -> dict:
    torch.manual_seed(FORWARD_SEED)
    with torch.no_grad():
        out = _forward(model, obs)
    return {
        key: {"shape": list(value.shape), "values": value.flatten().tolist()} for key, value in out.items()
    }


def run_case(model_cls: type, kwargs: dict, reset_noise) -> dict:
    """Build ``model_cls(**kwargs)`` on the build seed; its state and outputs (``reset_noise(model)``
    draws new noise for the noisy layers, None for a model without)."""
    torch.manual_seed(BUILD_SEED)
    model = model_cls(**kwargs)
    obs = observations(kwargs)
    state = {
        key: {"shape": list(value.shape), "sum": float(value.double().sum())}
        for key, value in model.state_dict().items()
    }
    record = {"state": state, "eval": _outputs(model.eval(), obs)}
    if reset_noise is not None:
        record["train"] = _outputs(model.train(), obs)
        torch.manual_seed(NOISE_SEED)
        reset_noise(model)
        record["train_after_reset_noise"] = _outputs(model, obs)
    return record


def signature(model_cls: type) -> list:
    """``[name, default]`` of each constructor parameter; a module default as its class name."""
    params = list(inspect.signature(model_cls.__init__).parameters.values())[1:]
    out = []
    for p in params:
        default = p.default
        if default is inspect.Parameter.empty:
            default = "<required>"
        elif isinstance(default, nn.Module):
            default = type(default).__name__
        elif isinstance(default, tuple):
            default = list(default)
        out.append([p.name, default])
    return out


def main() -> None:
    import ding.model as ding_model

    def reset_noise(model: nn.Module) -> None:  # DI-engine's Rainbow policy's _reset_noise
        for module in model.modules():
            if hasattr(module, "reset_noise"):
                module.reset_noise()

    cases = {}
    for name, (cls_name, _, kwargs) in CASES.items():
        model_cls = getattr(ding_model, cls_name)
        cases[name] = run_case(model_cls, kwargs, reset_noise if cls_name == "RainbowDQN" else None)
    signatures = {cls_name: signature(getattr(ding_model, cls_name)) for cls_name in SAME_SIGNATURE}
    encoders = {name: run_encoder(ding_model.ConvEncoder, kwargs) for name, kwargs in ENCODER_CASES.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_models.json")
    with open(path, "w") as f:
        json.dump(
            {"torch": torch.__version__, "signatures": signatures, "cases": cases, "encoders": encoders}, f
        )
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
