"""A ding_ray checkpoint in DI-engine's names, so that DI-engine 0.5.3 loads it::

    from ding_ray.compat.to_di_engine import save_for_di_engine
    save_for_di_engine("cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar", "for_di_engine.pth.tar")

and in DI-engine, with the same config: ``policy.learn_mode.load_state_dict(torch.load(path))`` (the
model, target model and optimizers: training goes on where it stopped) or
``policy.eval_mode.load_state_dict(...)``. This is the other direction of ``di_engine_names``: each
tensor goes back to DI-engine's name (a stacked one split into the tensors it was made of, shared
ones repeated under each of DI-engine's aliases), and each optimizer's per-parameter state goes to
the index DI-engine's optimizer gives that parameter. DI-engine's parameter order is rebuilt from the
module tree of its names (a module's own tensors before its children's, the children in the order
the layout names them), the order torch registers them in.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_ray.compat.di_engine_names import Layout, layout
from ding_ray.errors import DataFormatError


def di_engine_order(found: Layout) -> list[str]:
    """DI-engine's tensors (``found.canonical``) in the order its model's ``state_dict`` lists them."""
    tree: dict = {}
    for keys in found.sources.values():
        for key in keys:
            node = tree
            *path, leaf = key.split(".")
            for part in path:
                node = node.setdefault(part, {})
            node.setdefault(leaf, None)

    def walk(node: dict, prefix: str) -> list[str]:
        own = [prefix + name for name, child in node.items() if child is None]
        children = [walk(child, f"{prefix}{name}.") for name, child in node.items() if child is not None]
        return own + [key for keys in children for key in keys]

    return walk(tree, "")


def to_di_engine(model: nn.Module, state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``model``'s state dict ``state`` under DI-engine's names (aliases included), in DI-engine's order."""
    found = _layout(model)
    extra = sorted(set(state) - set(found.sources))
    if extra:
        raise DataFormatError(
            f"The checkpoint's {type(model).__name__} holds {extra[:4]}, which DI-engine's {found.model} has "
            "no place for (observation normalisation statistics, for one): DI-engine cannot load it."
        )
    named = {}
    for key, sources in found.sources.items():
        parts = state[key].chunk(len(sources), dim=0) if len(sources) > 1 else (state[key],)
        named.update(zip(sources, (p.clone() for p in parts)))
    out = {key: named[key] for key in di_engine_order(found)}
    out.update({alias: out[canonical] for alias, canonical in found.aliases.items()})
    return out


def learn_state_to_di_engine(
    model: nn.Module, state: Mapping[str, Any], optimizers: Mapping[str, torch.optim.Optimizer]
) -> dict[str, Any]:
    """A ding_ray policy's learn state (``model``'s policy, ``optimizers`` by state key) with its
    models renamed and its optimizers' states re-indexed for DI-engine's model; other keys as they are."""
    found = _layout(model)
    out = dict(state)
    for key in ("model", "target_model"):
        if isinstance(state.get(key), Mapping):
            out[key] = to_di_engine(model, state[key])
    names = {id(p): name for name, p in model.named_parameters()}
    parameters = set(dict(model.named_parameters()))
    order = [key for key in di_engine_order(found) if any(key in found.sources[n] for n in parameters)]
    for key, optimizer in optimizers.items():
        if isinstance(state.get(key), Mapping):
            out[key] = _optimizer_state(optimizer, state[key], names, found, order)
    return out


def _optimizer_state(optimizer, saved: Mapping, names: dict, found: Layout, order: list[str]) -> Mapping:
    """``saved`` (ding_ray's order) with each parameter's state at DI-engine's index of it."""
    params = [names.get(id(p)) for group in optimizer.param_groups for p in group["params"]]
    if None in params:  # not the model's parameters (SAC's alpha): the same on both sides
        return copy.deepcopy(saved)
    covered = {s: name for name in params for s in found.sources[name]}
    di_params = [key for key in order if key in covered]
    state = {}
    for i, name in enumerate(params):
        sources = found.sources[name]
        own = saved["state"].get(i)
        if own is None:
            continue
        for j, source in enumerate(sources):
            state[di_params.index(source)] = {
                k: v.chunk(len(sources), dim=0)[j].clone() if _per_element(v, len(sources)) else copy.copy(v)
                for k, v in own.items()
            }
    group = {k: v for k, v in saved["param_groups"][0].items() if k != "params"}
    group["params"] = list(range(len(di_params)))
    return {"state": dict(sorted(state.items())), "param_groups": [group]}


def _per_element(value: Any, parts: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() > 0 and parts > 1


def _layout(model: nn.Module) -> Layout:
    found = layout(model)
    if found is None:
        raise DataFormatError(f"DI-engine has no model of ding_ray's {type(model).__name__}.")
    return found


def save_for_di_engine(checkpoint: str | os.PathLike, out: str | os.PathLike, config: Any = None) -> str:
    """Write the learn state in ``checkpoint`` (a ding_ray run folder or learn checkpoint: the
    learner's ``ckpt/*.pth.tar``, ``CkptSaver``'s, a run checkpoint's ``learner.pth``) to ``out`` in
    DI-engine's names, and return ``out``. The config is the run folder's, or ``config`` as
    ``load_policy`` takes it; the state is checked by loading it into a policy built from it."""
    from ding_ray.entry.trained_policy import find_weights, run_config
    from ding_ray.policy import create_policy

    path = os.fspath(checkpoint)
    cfg, env = run_config(path, config)
    if env is not None:
        env.close()
    state, source = find_weights(path, cfg)
    if "optimizer" not in state and not any(key.startswith("optimizer_") for key in state):
        raise DataFormatError(
            f"{source} holds no optimizer state: it is not a learn checkpoint (an evaluation one has only "
            "the model). Convert the learner's checkpoint (ckpt/ckpt_best.pth.tar, iteration_*.pth.tar)."
        )
    policy = create_policy(cfg.policy, enable_field=["learn"])
    policy.learn_mode.load_state_dict(state)  # the file fits this config
    learn_state = policy.learn_mode.state_dict()
    optimizers = {k: v for k, v in policy._learn_optimizers().items() if k in learn_state}
    converted = learn_state_to_di_engine(policy.learn_mode.get_attribute("model"), learn_state, optimizers)
    for key in ("last_iter", "last_step"):  # the learner's counters, DI-engine's keys already
        if key in state:
            converted[key] = state[key]
    torch.save(converted, out)
    return os.fspath(out)
