"""State dicts saved under another library's parameter names, renamed as they load.

Every ding_ray model registers ``rename_foreign_state`` as its ``load_state_dict`` pre-hook, and
``Policy.load_state_dict`` passes a learn state through ``translate_learn_state``. What they rename
is up to the translators installed with ``install_translator``: importing ``ding_ray.model``
installs DI-engine's names (``ding_ray.compat.di_engine_names``). With none installed, a state
loads as torch loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import torch
from torch import nn


class StateTranslator(Protocol):
    def rename_model_state(self, model: nn.Module, state_dict: dict, prefix: str) -> None:
        """Rename, in place, the keys of ``state_dict`` under ``prefix`` written in this translator's
        names to ``model``'s own; leave any other state dict alone."""

    def translate_learn_state(
        self, model: nn.Module, state: Mapping[str, Any], optimizers: Mapping[str, torch.optim.Optimizer]
    ) -> Mapping[str, Any]:
        """A policy's learn state (models and optimizer states) for ``model`` and ``optimizers``."""


_translators: list[StateTranslator] = []


def install_translator(translator: StateTranslator) -> None:
    if translator not in _translators:
        _translators.append(translator)


def rename_foreign_state(module: nn.Module, state_dict: dict, prefix: str, *args: Any) -> None:
    """``load_state_dict`` pre-hook: every installed translator renames what it recognises."""
    for translator in _translators:
        translator.rename_model_state(module, state_dict, prefix)


def translate_learn_state(
    model: nn.Module, state: Mapping[str, Any], optimizers: Mapping[str, torch.optim.Optimizer]
) -> Mapping[str, Any]:
    for translator in _translators:
        state = translator.translate_learn_state(model, state, optimizers)
    return state
