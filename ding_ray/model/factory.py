"""``create_model``: a model from its config section, with the kwargs checked against its signature."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping

from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import MODEL_REGISTRY, close_matches


def create_model(cfg: Mapping, path: str = "policy.model") -> nn.Module:
    """Build ``MODEL_REGISTRY[cfg.type](**kwargs)``; a kwarg the model does not take is a ConfigError."""
    cfg = dict(cfg)
    for module in cfg.pop("import_names", None) or []:
        importlib.import_module(module)
    model_cls = MODEL_REGISTRY.get(cfg.pop("type"))
    cfg.pop("cfg_type", None)
    params = inspect.signature(model_cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    valid = [name for name in params if name != "self"]
    for key in cfg:
        if key not in params and not takes_any:
            hint = close_matches(key, valid)
            did_you_mean = f" Did you mean '{path}.{hint[0]}'?" if hint else ""
            raise ConfigError(
                f"Unknown config key '{path}.{key}' for model {model_cls.__name__}.{did_you_mean} "
                f"Valid keys: {valid}."
            )
    missing = [
        name
        for name, p in params.items()
        if name != "self"
        and p.default is inspect.Parameter.empty
        and p.kind is p.POSITIONAL_OR_KEYWORD
        and name not in cfg
    ]
    if missing:
        raise ConfigError(f"Model {model_cls.__name__} needs '{path}.{missing[0]}' in the config.")
    return model_cls(**cfg)
