"""``EnvRunner``: what serial collectors and evaluators share - an env manager and a policy mode
that are swapped, reset and closed together."""

from __future__ import annotations

from typing import Any


class EnvRunner:
    """Holds ``self._env`` (an env manager), ``self._policy`` (a policy mode) and ``self._tb_logger``.

    ``reset_env`` / ``reset_policy`` take a new env or policy when given one and reset what is
    held; subclasses extend them with their own bookkeeping. ``close`` is idempotent.
    """

    _env: Any = None
    _policy: Any = None
    _tb_logger: Any = None
    _end_flag = False

    def reset_env(self, _env: Any = None) -> None:
        if _env is not None:
            self._env = _env
        if self._env is not None:
            self._env.launch()

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None:
            self._policy = _policy
        if self._policy is not None:
            self._policy.reset()

    def close(self) -> None:
        if self._end_flag:
            return
        self._end_flag = True
        if self._env is not None:
            self._env.close()
        if self._tb_logger is not None:
            self._tb_logger.flush()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
