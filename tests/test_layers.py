"""Imports point down the layers: read from the source (``ast``), so a function-level import counts too."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "ding_ray"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, package: str) -> set[str]:
    """Every module ``source`` (a module of ``package``) imports, absolute; ``from x import y`` also
    counts as ``x.y``, since ``y`` may be a module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def offenders(layer: str, forbidden: tuple[str, ...], exempt: tuple[str, ...] = ()) -> dict[str, list[str]]:
    bad = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        name = module_name(path)
        if name in exempt:
            continue
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        imported = imported_modules(path.read_text(), package)
        hits = sorted(m for m in imported if any(m == f or m.startswith(f + ".") for f in forbidden))
        if hits:
            bad[name] = hits
    return bad


def test_imported_modules_resolves_relative_and_function_level_imports():
    source = "def f():\n    from ding_ray.entry import cli\n\nfrom .config import RayConfig\nimport ray\n"
    assert imported_modules(source, "ding_ray.distributed") == {
        "ding_ray.entry",
        "ding_ray.entry.cli",
        "ding_ray.distributed.config",
        "ding_ray.distributed.config.RayConfig",
        "ray",
    }


def test_nothing_in_distributed_reaches_up_into_entry():
    assert offenders("distributed", ("ding_ray.entry",)) == {}


@pytest.mark.parametrize("upper", ["worker", "distributed", "entry", "policy"])
def test_config_sits_below_the_workers_policies_ray_and_entry_points(upper):
    # reference.py writes docs/config_reference.md from every layer's defaults: a reader of them all
    assert offenders("config", (f"ding_ray.{upper}",), exempt=("ding_ray.config.reference",)) == {}


# The public facades that give DI-engine's names (each says so in its docstring), the two
# modules at DI-engine's own paths of its file loaders, and the command lines that read dizoo's
# config files (the ding command, ding-ray's config reading); no other module of the core imports
# ding_ray.compat.
COMPAT_FACADES = (
    "ding_ray.envs",
    "ding_ray.framework",
    "ding_ray.framework.middleware",
    "ding_ray.model",
    "ding_ray.data.model_loader",
    "ding_ray.data.storage_loader",
    "ding_ray.entry.ding_command",
    "ding_ray.entry.cli_commands",
)


def test_only_the_named_facades_import_the_di_engine_shims():
    importers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name == "ding_ray.compat" or name.startswith("ding_ray.compat."):
            continue
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        source = path.read_text()
        # a lazy export names its module as a string: count those too
        strings = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)}
        named = imported_modules(source, package) | {s for s in strings if isinstance(s, str)}
        hits = sorted(m for m in named if m == "ding_ray.compat" or m.startswith("ding_ray.compat."))
        if hits and name not in COMPAT_FACADES:
            importers[name] = hits
    assert importers == {}
