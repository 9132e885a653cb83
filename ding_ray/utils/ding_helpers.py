"""Small helpers of DI-engine's ``ding.utils`` that dizoo scripts import: ``EasyTimer`` and
``build_logger`` (``set_pkg_seed`` and ``deep_merge_dicts`` live in ``runtime`` and ``config``)."""

from __future__ import annotations

import logging
import os
import time
from typing import Any


class EasyTimer:
    """Wall seconds of the latest ``with`` block, in ``value``::

    timer = EasyTimer()
    with timer:
        work()
    print(timer.value)

    ``cuda``: DI-engine times with CUDA events when a GPU is there; this timer waits for the GPU's
    queued work (``torch.cuda.synchronize``) at both ends instead, which measures the same span.
    """

    def __init__(self, cuda: bool = True) -> None:
        self._cuda = cuda
        self.value = 0.0

    def _sync(self) -> None:
        if self._cuda:
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()

    def __enter__(self) -> EasyTimer:
        self._sync()
        self.value = 0.0
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._sync()
        self.value = time.perf_counter() - self._start


def build_logger(
    path: str,
    name: str | None = None,
    need_tb: bool = True,
    need_text: bool = True,
    text_level: int | str = logging.INFO,
) -> tuple[logging.Logger | None, Any]:
    """``(text logger, TensorBoard writer)``: a logger named ``<name>_logger`` that also writes to
    ``<path>/<name>_logger.txt``, and a ``SummaryWriter`` in ``<path>/<name>_tb_logger`` (each None
    when not asked for). ``name`` defaults to ``'default'``."""
    name = name or "default"
    text_logger = None
    if need_text:
        os.makedirs(path, exist_ok=True)
        text_logger = logging.getLogger(f"{name}_logger")
        text_logger.setLevel(text_level)
        file_path = os.path.abspath(os.path.join(path, f"{name}_logger.txt"))
        if not any(getattr(h, "baseFilename", None) == file_path for h in text_logger.handlers):
            handler = logging.FileHandler(file_path)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            text_logger.addHandler(handler)
    tb_logger = None
    if need_tb:
        from tensorboardX import SummaryWriter

        tb_logger = SummaryWriter(os.path.join(path, f"{name}_tb_logger"))
    return text_logger, tb_logger
