"""Name -> class registries, one per component kind, as DI-engine has them.

They live at the bottom of the package so that ``compile_config`` can look a class up by the
``type`` string of a config without importing the layer that defines it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any

from ding_ray.errors import RegistryError


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates that look most like ``name`` (for "did you mean" messages), compared
    ignoring case, so that 'DQN' finds 'dqn'."""
    by_lower: dict[str, list[str]] = {}
    for candidate in candidates:
        by_lower.setdefault(str(candidate).lower(), []).append(candidate)
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=n, cutoff=0.5)
    return [candidate for lower in close for candidate in by_lower[lower]][:n]


class Registry:
    """A small dict of named classes with a ``register`` decorator."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Any] = {}

    def register(self, name: str) -> Callable[[Any], Any]:
        def _register(obj: Any) -> Any:
            if name in self._items and self._items[name] is not obj:
                raise RegistryError(f"{self.kind} '{name}' is already registered as {self._items[name]}")
            self._items[name] = obj
            return obj

        return _register

    def get(self, name: str) -> Any:
        if name not in self._items:
            hint = close_matches(name, self._items)
            did_you_mean = f" Did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
            raise RegistryError(
                f"Unknown {self.kind} type '{name}'.{did_you_mean} Registered: {sorted(self._items)}."
            )
        return self._items[name]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def name_of(self, obj: Any) -> str | None:
        """The name ``obj`` is registered under, or None."""
        return next((name for name, item in self._items.items() if item is obj), None)

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        return sorted(self._items)


POLICY_REGISTRY = Registry("policy")
MODEL_REGISTRY = Registry("model")
ENV_REGISTRY = Registry("env")
ENV_MANAGER_REGISTRY = Registry("env_manager")
BUFFER_REGISTRY = Registry("buffer")
SERIAL_COLLECTOR_REGISTRY = Registry("serial_collector")
SERIAL_EVALUATOR_REGISTRY = Registry("serial_evaluator")
LEARNER_REGISTRY = Registry("learner")
