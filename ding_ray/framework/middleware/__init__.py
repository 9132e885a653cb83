"""DI-engine's middleware: factories that return stages (``def _stage(ctx)``) for ``Task.use``.

Each stage calls only the plain interface of the component it is given (``collect``, ``push``,
``sample``, ``update``, ``train``, ``eval``), so a local object and a Ray actor of the same class
fit the same stage.
"""

# --- data stages (data.py, offline.py, her.py) ---
# --- collect / train / evaluate / control stages (collect.py, train.py, evaluate.py, control.py) ---
# --- loggers (logger.py) ---

__all__: list[str] = []
