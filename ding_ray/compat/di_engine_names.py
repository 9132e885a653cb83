"""DI-engine's parameter names for ding_ray's models, so that a checkpoint DI-engine saved loads here.

DI-engine 0.5.3's ``DQN``, ``VAC``, ``ContinuousQAC``, ``C51DQN``, ``QRDQN``, ``IQN``,
``RainbowDQN``, ``DRQN`` and ``ContinuousBC`` (``DiscreteBC`` is DQN's network) compute the same
functions as ding_ray's models of those names (DQN and VAC for image observations too), with other
module names: its ``FCEncoder`` calls the first layer ``init`` and the rest ``main.<i>`` (a
Sequential with the activations in between), its ``ConvEncoder`` keeps the convolutions in
``main.<2i>`` (activations between) and the linear layer in ``mid``, its heads wrap their layers in
``MLP`` Sequentials (``head.A.0.0``, ``critic_head.last``, ``actor_head.2.mu``), ``VAC`` and
``ContinuousQAC`` repeat every tensor under ``actor.*`` / ``critic.*`` aliases, and ding_ray's
``DuelingHead`` stacks the first advantage and value layers into one. ``layout`` lists, for a
ding_ray model, the DI-engine tensors each of its tensors is made of. Importing ``ding_ray.model``
installs ``DIEngineNames`` as a translator of ``ding_ray.model.foreign_state``, whose pre-hook every
model registers, so ``model.load_state_dict(di_engine_state)`` works wherever a state dict is
loaded, and ``learn_state_from_di_engine`` re-indexes the optimizer states of a DI-engine learn
checkpoint.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ding_ray.errors import DataFormatError, ShapeError
from ding_ray.model.bc import ContinuousBC
from ding_ray.model.distributional import C51DQN, IQN, QRDQN, QuantileHead, RainbowDQN, RainbowHead
from ding_ray.model.drqn import DRQN
from ding_ray.model.foreign_state import install_translator
from ding_ray.model.q_network import DQN
from ding_ray.model.qac import ContinuousQAC
from ding_ray.model.vac import VAC

# param-group keys that say how torch runs the update, not what it computes: this process keeps its own
_RUNTIME_KEYS = ("fused", "foreach", "capturable", "differentiable")


@dataclass
class Layout:
    """``sources``: ding_ray key -> the DI-engine keys it is made of (stacked along dim 0 when
    several); ``aliases``: DI-engine key -> the DI-engine key it repeats; ``model``: DI-engine's
    class name, for messages."""

    sources: dict[str, tuple[str, ...]]
    aliases: dict[str, str]
    model: str

    @property
    def canonical(self) -> set[str]:
        return {k for keys in self.sources.values() for k in keys}


def layout(model: nn.Module) -> Layout | None:
    """DI-engine's names for ``model``'s tensors; None for a model DI-engine has no counterpart of."""
    rules = [(DQN, _dqn_pairs), (VAC, _vac_pairs), (ContinuousQAC, _qac_pairs)]
    rules += [(cls, _distributional_pairs) for cls in (C51DQN, QRDQN, IQN, RainbowDQN)]
    rules += [(DRQN, _drqn_pairs), (ContinuousBC, _continuous_bc_pairs)]
    for cls, pairs_of in rules:
        if isinstance(model, cls):
            pairs, alias_prefixes = pairs_of(model)
            return _expand(model, pairs, alias_prefixes, cls.__name__)
    return None


# ----- the rules, one function per model: (ding_ray module, DI-engine module(s)) pairs ----------------
def _di_mlp(prefix: str, n: int, norm: bool, dropout: bool) -> list[str]:
    """The Linear modules of DI-engine's ``MLP`` Sequential of ``n`` layers at ``prefix``: each layer
    is Linear, [norm], activation, [dropout]."""
    stride = 2 + int(norm) + int(dropout)
    return [f"{prefix}{i * stride}" for i in range(n)]


def _encoder(model: nn.Module, dr: str, di: str) -> list[tuple[str, tuple[str, ...]]]:
    encoder = model.get_submodule(dr)
    if hasattr(encoder, "convs"):  # ConvEncoder: DI-engine's main = (Conv2d, activation) * K, Flatten
        pairs = [(f"{dr}.convs.{i}", (f"{di}main.{2 * i}",)) for i in range(len(encoder.convs))]
        return pairs + [(f"{dr}.fc", (f"{di}mid",))]
    n = len(encoder.mlp.layers)
    di_layers = [f"{di}init"] + _di_mlp(f"{di}main.", n - 1, False, bool(encoder.mlp.dropout))
    return _mlp(f"{dr}.mlp", encoder.mlp, di_layers)


def _mlp(dr: str, mlp: nn.Module, di_layers: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Pair each Linear of a ding_ray ``MLP`` with DI-engine's, and each norm with the module after
    DI-engine's Linear (its norm comes right after it in the Sequential)."""
    pairs = [(f"{dr}.layers.{j}", (name,)) for j, name in enumerate(di_layers)]
    for i in range(len(mlp.norms) if mlp.norms is not None else 0):
        parent, index = di_layers[i + mlp.plain_first].rsplit(".", 1)
        pairs.append((f"{dr}.norms.{i}", (f"{parent}.{int(index) + 1}",)))
    return pairs


def _dqn_pairs(model: nn.Module) -> tuple[list, dict]:
    if isinstance(model.encoder, nn.Sequential):
        raise DataFormatError(
            "ding_ray's DQN with head_hidden_size other than the last encoder width has a layer between "
            "encoder and head ('encoder.1') that DI-engine's DQN does not have (DI-engine's runs only "
            "when they are equal), so no DI-engine checkpoint fits it. Leave head_hidden_size unset."
        )
    pairs = _encoder(model, "encoder", "encoder.")
    head = model.head
    if hasattr(head, "mlp"):  # DiscreteHead
        return pairs + _head_stream("head.mlp", head.mlp, "head.Q."), {}
    streams = {"advantage": "head.A.", "value": "head.V."}
    if head.first is not None:  # the first advantage and value layers, stacked
        dropout = bool(head.first.dropout)
        n = len(head.advantage.layers)  # layer_num - 1 hidden layers and the output
        pairs.append(("head.first.layers.0", ("head.A.0.0", "head.V.0.0")))
        for name, di in streams.items():
            hidden = _di_mlp(f"{di}0.", n, False, dropout)[1:]
            pairs += _mlp(f"head.{name}", getattr(head, name), hidden + [f"{di}1.0"])
        return pairs, {}
    for name, di in streams.items():
        pairs += _head_stream(f"head.{name}", getattr(head, name), di)
    return pairs, {}


def _head_stream(dr: str, mlp: nn.Module, di: str) -> list[tuple[str, tuple[str, ...]]]:
    """A head's ``MLP`` of ``layer_num`` hidden layers and its output layer, which DI-engine's heads
    keep as ``<di>0`` (its MLP Sequential) and ``<di>1.0`` (the output block)."""
    hidden = _di_mlp(f"{di}0.", len(mlp.layers) - 1, mlp.norms is not None, bool(mlp.dropout))
    return _mlp(dr, mlp, hidden + [f"{di}1.0"])


def _drqn_pairs(model: nn.Module) -> tuple[list, dict]:
    """DQN's encoder and head; the recurrent cell has DI-engine's names (``ding_ray.torch_utils``)."""
    pairs, aliases = _dqn_pairs(model)
    return pairs + [(key, (key,)) for key in model.state_dict() if key.startswith("rnn.")], aliases


def _distributional_pairs(model: nn.Module) -> tuple[list, dict]:
    """C51DQN, QRDQN, IQN (head.Q, head.iqn_fc) and RainbowDQN (head.A, head.Q: advantage, value)."""
    pairs = _encoder(model, "encoder", "encoder.")
    head = model.head
    if isinstance(head, RainbowHead):
        pairs += _head_stream("head.advantage", head.advantage, "head.A.")
        return pairs + _head_stream("head.value", head.value, "head.Q."), {}
    pairs += _head_stream("head.mlp", head.mlp, "head.Q.")
    if isinstance(head, QuantileHead):
        pairs.append(("head.iqn_fc", ("head.iqn_fc",)))
    return pairs, {}


def _vac_pairs(model: nn.Module) -> tuple[list, dict]:
    if model.share_encoder:
        pairs = _encoder(model, "encoder", "encoder.")
        aliases = {"actor.0.": "encoder.", "critic.0.": "encoder."}
    else:
        pairs = _encoder(model, "actor_encoder", "actor_encoder.") + _encoder(
            model, "critic_encoder", "critic_encoder."
        )
        aliases = {"actor.0.": "actor_encoder.", "critic.0.": "critic_encoder."}
    aliases.update({"actor.1.": "actor_head.", "critic.1.": "critic_head."})
    critic = model.critic_head
    hidden = _di_mlp("critic_head.main.", len(critic.layers) - 1, critic.norms is not None, False)
    pairs += _mlp("critic_head", critic, hidden + ["critic_head.last"])
    actor = model.actor_head
    if model.action_space == "discrete":
        hidden = _di_mlp("actor_head.Q.0.", len(actor.layers) - 1, actor.norms is not None, False)
        return pairs + _mlp("actor_head", actor, hidden + ["actor_head.Q.1.0"]), aliases
    if actor.main is not None:
        main = actor.main
        pairs += _mlp(
            "actor_head.main",
            main,
            _di_mlp("actor_head.main.", len(main.layers), main.norms is not None, False),
        )
    pairs += [("actor_head.mu", ("actor_head.mu",))]
    if actor.sigma_type == "independent":
        pairs.append(("actor_head.log_sigma_param", ("actor_head.log_sigma_param",)))
    elif actor.sigma_type == "conditioned":
        pairs.append(("actor_head.log_sigma_layer", ("actor_head.log_sigma_layer",)))
    return pairs, aliases


def _actor_pairs(model: nn.Module, di: str) -> list:
    """ContinuousQAC's or ContinuousBC's actor (``model.actor``), DI-engine's at ``di``: the input layer
    ``<di>.0``, then the regression or reparameterization head ``<di>.2``."""
    trunk = model.actor.trunk
    hidden = _di_mlp(f"{di}.2.main.", len(trunk.layers) - 1, trunk.norms is not None, False)
    pairs = _mlp("actor.trunk", trunk, [f"{di}.0", *hidden])
    if model.action_space == "regression":  # DDPG/TD3: RegressionHead's output layer
        return [*pairs, ("actor.last", (f"{di}.2.last",))]
    return [*pairs, ("actor.mu", (f"{di}.2.mu",)), ("actor.log_sigma_layer", (f"{di}.2.log_sigma_layer",))]


def _continuous_bc_pairs(model: nn.Module) -> tuple[list, dict]:
    return _actor_pairs(model, "actor"), {}


def _qac_pairs(model: nn.Module) -> tuple[list, dict]:
    pairs = _actor_pairs(model, "actor_head")
    for i, critic in enumerate(model.critic):
        di = f"critic_head.{i}." if model.twin_critic else "critic_head."
        hidden = _di_mlp(f"{di}2.main.", len(critic.layers) - 2, critic.norms is not None, False)
        pairs += _mlp(f"critic.{i}", critic, [f"{di}0", *hidden, f"{di}2.last"])
    return pairs, {"actor.1.": "actor_head.", "critic.1.": "critic_head."}


def _expand(model: nn.Module, pairs: list, alias_prefixes: dict[str, str], name: str) -> Layout:
    """Module pairs -> tensor pairs: a module's tensors keep their names (weight, bias, running_mean,
    ...) on both sides; a tensor named directly (``log_sigma_param``) pairs as it is."""
    own = model.state_dict(keep_vars=True)
    sources = {}
    for dr, di in pairs:
        if dr in own:
            sources[dr] = di
            continue
        for key in own:
            rest = key[len(dr) + 1 :]
            if key.startswith(dr + ".") and "." not in rest:
                sources[key] = tuple(f"{d}.{rest}" for d in di)
    missing = sorted(set(own) - set(sources))
    if missing:  # a ding_ray option these rules do not cover: better refused than half-loaded
        raise DataFormatError(f"ding_ray's {name} has tensors {missing} with no DI-engine counterpart.")
    aliases = {}
    for key in {k for keys in sources.values() for k in keys}:
        for alias, canonical in alias_prefixes.items():
            if key.startswith(canonical):
                aliases[alias + key[len(canonical) :]] = key
    return Layout(sources, aliases, name)


# ----- renaming --------------------------------------------------------------------------------------
def is_di_engine_state(model: nn.Module, state: Mapping[str, Any], prefix: str = "") -> bool:
    """Whether ``state`` names ``model``'s tensors DI-engine's way: none of ding_ray's names, and
    at least one tensor DI-engine's model of this type has."""
    first = next(model.named_parameters(), (None,))[0]  # cheap: this runs on every load
    if first is None or prefix + first in state:
        return False
    found = layout(model)
    if found is None:
        return False
    names = found.canonical | set(found.aliases)
    return any(key[len(prefix) :] in names for key in state if key.startswith(prefix))


def from_di_engine(model: nn.Module, state: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``state`` (DI-engine's names under ``prefix``) renamed for ``model``; the keys outside
    ``prefix`` are kept. A tensor that DI-engine's model built from the same config would not
    have, lacks, or has in another shape is a ``ShapeError`` naming it."""
    found = layout(model)
    if found is None:
        raise DataFormatError(
            f"DI-engine has no model of ding_ray's {type(model).__name__} to read names from."
        )
    keep = {k: v for k, v in state.items() if not k.startswith(prefix)}
    given = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    hint = (
        f"It is not the state of DI-engine's {found.model} built from this policy.model config: load it "
        "into a policy with the model config it was trained with (obs_shape, action_shape, hidden sizes, "
        "layer numbers, dueling, share_encoder, ...)."
    )
    unexpected = sorted(set(given) - found.canonical - set(found.aliases))
    if unexpected:
        raise ShapeError(
            f"The DI-engine checkpoint has {len(unexpected)} tensors this model has no place for, such "
            f"as {unexpected[:4]}. {hint}"
        )
    lacking = sorted(found.canonical - set(given))
    if lacking:
        raise ShapeError(f"The DI-engine checkpoint lacks {lacking[:4]}. {hint}")
    own = model.state_dict(keep_vars=True)
    out = dict(keep)
    for key, sources in found.sources.items():
        parts = [given[s] for s in sources]
        value = parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)
        if tuple(value.shape) != tuple(own[key].shape):
            shapes = ", ".join(f"'{s}' {tuple(given[s].shape)}" for s in sources)
            raise ShapeError(
                f"The DI-engine checkpoint has {shapes} where DI-engine's {found.model} built from this "
                f"config has {tuple(own[key].shape)} (ding_ray's '{key}'). {hint}"
            )
        out[prefix + key] = value
    return out


def accept_di_engine_names(module: nn.Module, state_dict: dict, prefix: str, *args: Any) -> None:
    """``load_state_dict`` pre-hook: a state dict in DI-engine's names is renamed in place."""
    if is_di_engine_state(module, state_dict, prefix):
        renamed = from_di_engine(module, state_dict, prefix)
        state_dict.clear()
        state_dict.update(renamed)


# ----- learn states: optimizers ---------------------------------------------------------------------
def learn_state_from_di_engine(
    model: nn.Module, state: Mapping[str, Any], optimizers: Mapping[str, torch.optim.Optimizer]
) -> Mapping[str, Any]:
    """A policy's learn state as DI-engine saved it, for a ding_ray policy with ``model`` and
    ``optimizers`` (by state key): models renamed, and each optimizer's per-parameter state moved
    from DI-engine's parameter order (VAC: critic head before actor head) to ding_ray's (stacked
    where ding_ray stacks the parameters). Any other state is returned as it is."""
    model_state = state.get("model")
    if not isinstance(model_state, Mapping) or not is_di_engine_state(model, model_state):
        return state
    found = layout(model)
    out = dict(state)
    for key in ("model", "target_model"):
        if isinstance(state.get(key), Mapping):
            out[key] = from_di_engine(model, state[key])
    params = {id(p): name for name, p in model.named_parameters()}
    # DI-engine's optimizers take model.parameters() (or a part), in its state dict's order
    order = [k for k in model_state if k in found.canonical]
    for key, optimizer in optimizers.items():
        if isinstance(state.get(key), Mapping):
            out[key] = _optimizer_state(optimizer, state[key], params, found, order, key)
    return out


def _optimizer_state(
    optimizer, saved: Mapping, params: dict, found: Layout, order: list, key: str
) -> Mapping:
    groups = optimizer.param_groups
    names = [params.get(id(p)) for group in groups for p in group["params"]]
    if None in names:  # not the model's parameters (SAC's alpha): nothing to rename
        return saved
    if len(groups) != 1 or len(saved.get("param_groups", ())) != 1:
        raise DataFormatError(
            f"'{key}': only single-group optimizers can be read from a DI-engine checkpoint."
        )
    covered = {s for n in names for s in found.sources[n]}
    di_index = {name: i for i, name in enumerate(k for k in order if k in covered)}
    saved_group = saved["param_groups"][0]
    if len(saved_group["params"]) != len(di_index):
        raise DataFormatError(
            f"'{key}' of the DI-engine checkpoint holds {len(saved_group['params'])} parameters; DI-engine's "
            f"{found.model} built from this config gives that optimizer {len(di_index)}."
        )
    saved_state = saved.get("state", {})
    state = {}
    for i, name in enumerate(names):
        parts = [saved_state.get(saved_group["params"][di_index[s]]) for s in found.sources[name]]
        if any(p is None for p in parts):
            continue  # no step taken yet
        state[i] = {
            k: torch.cat([p[k] for p in parts]) if _is_per_element(v) and len(parts) > 1 else copy.copy(v)
            for k, v in parts[0].items()
        }
    group = {k: v for k, v in groups[0].items() if k != "params"}
    group.update({k: v for k, v in saved_group.items() if k in group and k not in _RUNTIME_KEYS})
    group["params"] = list(range(len(names)))
    return {"state": state, "param_groups": [group]}


def _is_per_element(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() > 0


class DIEngineNames:
    """DI-engine's parameter names, as a translator of ``ding_ray.model.foreign_state``."""

    def rename_model_state(self, model: nn.Module, state_dict: dict, prefix: str) -> None:
        accept_di_engine_names(model, state_dict, prefix)

    def translate_learn_state(
        self, model: nn.Module, state: Mapping[str, Any], optimizers: Mapping[str, torch.optim.Optimizer]
    ) -> Mapping[str, Any]:
        return learn_state_from_di_engine(model, state, optimizers)


install_translator(DIEngineNames())
