"""``ding-ray export``: a trained policy as one file that acts without ding_ray.

TorchScript (``torch.jit.load``) or ONNX (``onnxruntime``; ``pip install "ding_ray[onnx]"``). The
file holds what ``load_policy(...).act`` computes (``ActingModule``): float32 observations
``obs`` of shape ``(batch, *obs_shape)`` in, the env's actions ``action`` out (int64 indices, or
float32 ``(batch, action_dim)`` already scaled onto the env's bounds); PPO's observation
normalisation is inside. Each export is read back and its actions checked against ``act``'s.
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

import numpy as np
import torch

from ding_ray.entry.trained_policy import TrainedPolicy, load_policy
from ding_ray.errors import ConfigError, DingRayError

FORMATS = ("torchscript", "onnx")
EXTRA_FILE = "ding_ray.json"  # TorchScript extra file / ONNX metadata key: what goes in and out


def export_policy(source: str, out: str, config: Any = None, fmt: str | None = None) -> dict[str, Any]:
    """Write the policy of ``source`` (a run folder or a checkpoint file, as ``load_policy``) to
    ``out``; ``fmt`` defaults to ONNX for a ``.onnx`` file, else TorchScript. Returns what the
    file holds (the ``ding_ray.json`` it carries)."""
    fmt = fmt or ("onnx" if str(out).endswith(".onnx") else "torchscript")
    if fmt not in FORMATS:
        raise ConfigError(f"Export format '{fmt}' is not one of {', '.join(FORMATS)}.")
    if fmt == "onnx":
        _require_onnx()
    trained = load_policy(source, config)
    info = describe(trained)
    example = torch.zeros(2, *trained.obs_shape)  # batch 2: the batch size stays a free axis
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with torch.no_grad():
        if fmt == "torchscript":
            traced = torch.jit.trace(trained.module, example)
            torch.jit.save(traced, out, _extra_files={EXTRA_FILE: json.dumps(info)})
        else:
            _export_onnx(trained, example, out, info)
    check_export(trained, out, fmt)
    return info


def describe(trained: TrainedPolicy) -> dict[str, Any]:
    cfg = trained.cfg
    discrete = trained.policy.action_space == "discrete"
    return {
        "policy": cfg.policy.type,
        "env_id": cfg.env.get("env_id"),
        "source": trained.source,
        "obs": {"dtype": "float32", "shape": ["batch", *trained.obs_shape]},
        "action": {
            "dtype": "int64" if discrete else "float32",
            "shape": ["batch"] if discrete else ["batch", int(cfg.policy.model.action_shape)],
            "scaled_onto_env_bounds": bool(trained.module.scaled),
        },
        "obs_norm": bool(cfg.policy.get("obs_norm")),
    }


def load_exported(path: str, fmt: str):
    """A function ``obs (numpy) -> actions (numpy)`` of an exported file."""
    if fmt == "torchscript":
        module = torch.jit.load(path)

        def run(obs: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return module(torch.as_tensor(obs, dtype=torch.float32)).numpy()

        return run
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return lambda obs: session.run(["action"], {"obs": np.asarray(obs, dtype=np.float32)})[0]


def check_export(trained: TrainedPolicy, path: str, fmt: str, obs: np.ndarray | None = None) -> None:
    """The exported file's actions on ``obs`` (default: a few random observations) must be ``act``'s."""
    if obs is None:
        obs = np.random.default_rng(0).normal(size=(7, *trained.obs_shape)).astype(np.float32)
    want, got = trained.act(obs), load_exported(path, fmt)(obs)
    if want.shape != got.shape or not np.allclose(want, got, atol=1e-5):
        raise DingRayError(
            f"The {fmt} export in {path} does not act as the policy does (on {len(obs)} observations); "
            "this is a bug: please report it with the run's total_config.json."
        )


def _export_onnx(trained: TrainedPolicy, example: torch.Tensor, out: str, info: dict[str, Any]) -> None:
    import onnx

    # The TorchScript-based exporter: the dynamo one needs onnxscript as well, for the same graph.
    torch.onnx.export(
        trained.module,
        (example,),
        out,
        input_names=["obs"],
        output_names=["action"],
        dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}},
        dynamo=False,
    )
    model = onnx.load(out)
    onnx.helper.set_model_props(model, {EXTRA_FILE: json.dumps(info)})
    onnx.save(model, out)


def _require_onnx() -> None:
    missing = [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]
    if missing:
        raise DingRayError(
            f'ONNX export needs {" and ".join(missing)}: pip install "ding_ray[onnx]" (or export '
            "TorchScript: an output file not ending in .onnx)."
        )
