"""MkDocs hooks: the pages' generated parts, filled in at build time.

- ``<!-- benchmarks -->``: the tables ``docs/gen_benchmarks.py`` renders from
  ``benchmarks/results/*.json``.
- ``<!-- config: policy NAME -->``: the ``config = dict(...)`` of the policy registered as NAME,
  with its comments, as ``ding_ray.config.reference`` prints it for the config reference.
- ``<!-- api: PACKAGE -->``: a mkdocstrings block for each name a package exports lazily (its
  ``_EXPORTS`` table, which mkdocstrings' static reading cannot follow), grouped by module.

So a default or a measured figure on those pages is always what the code and the result files say.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
MARKER = re.compile(r"<!-- (benchmarks|config: (\w+) (\w+)|api: ([\w.]+)) -->")
REGISTRIES = {"policy": "POLICY_REGISTRY", "buffer": "BUFFER_REGISTRY", "env_manager": "ENV_MANAGER_REGISTRY"}


def _gen_benchmarks():
    spec = importlib.util.spec_from_file_location("gen_benchmarks", DOCS / "gen_benchmarks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config_block(kind: str, name: str) -> str:
    import ding_ray.data  # noqa: F401 - components register themselves on import
    import ding_ray.envs  # noqa: F401
    import ding_ray.policy  # noqa: F401
    from ding_ray.config.reference import config_source
    from ding_ray.utils import registry

    cls = getattr(registry, REGISTRIES[kind]).get(name)
    parts = [
        f"`{cls.__module__}.{cls.__name__}`:",
        "",
        "```python",
        config_source(cls) or "config = {}",
        "```",
    ]
    for base in cls.__mro__[1:]:
        source = config_source(base)
        if source is not None:
            parts += ["", f"and the keys it takes from `{base.__name__}`:", "", "```python", source, "```"]
    return "\n".join(parts)


def _lazy_exports(package: str) -> str:
    """``::: module.name`` for each entry of the package's ``_EXPORTS``, read from its source."""
    init = REPO / package.replace(".", "/") / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            exports = ast.literal_eval(node.value)
            break
    else:
        raise ValueError(f"{init} has no _EXPORTS table")
    by_module: dict[str, list[str]] = {}
    for name, module in exports.items():
        module = module if module.startswith("ding_ray.") else f"{package}.{module}"
        by_module.setdefault(module, []).append(name)
    parts = []
    for module in sorted(by_module):
        parts += [f"## `{module}`", ""]
        parts += [
            f"::: {module}.{name}\n    options:\n      heading_level: 3\n" for name in by_module[module]
        ]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    def fill(match: re.Match) -> str:
        if match.group(1) == "benchmarks":
            return _gen_benchmarks().render()
        if match.group(4):
            return _lazy_exports(match.group(4))
        return _config_block(match.group(2), match.group(3))

    return MARKER.sub(fill, markdown)
