"""No test reads a private attribute (``x._name``, one leading underscore) of an object that is not
its own (``self``/``cls``): tests go through the public API, so that they keep passing while the
internals change and say what a user can rely on."""

from __future__ import annotations

import ast
import pathlib
import re

TESTS = pathlib.Path(__file__).parent

# (file, attribute access as ast.unparse writes it): why it is allowed
ALLOWED = {
    ("envs/test_subprocess_env_manager.py", "os._exit"): "os._exit is public: a process that dies at once",
    ("distributed/test_cluster_yaml.py", "from ray.autoscaler._private.util import prepare_config"): (
        "Ray has no public check of a cluster YAML short of launching it"
    ),
    ("distributed/test_cluster_yaml.py", "from ray.autoscaler._private.util import validate_config"): (
        "Ray has no public check of a cluster YAML short of launching it"
    ),
}
NAMEDTUPLE = {"_asdict", "_replace", "_fields", "_make"}  # namedtuple's public API
PRIVATE = re.compile(r"_[^_]")  # one leading underscore: not a dunder


def private_reads(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, access)`` of each ``x._name`` in the file, ``x`` not ``self`` or ``cls``, and of each
    import of a private name or from a private module (``from m._private import f``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if parts[0] == "tests":  # the tests' own helpers
                continue
            private_module = any(PRIVATE.match(part) for part in parts)
            found += [
                (node.lineno, f"from {node.module} import {alias.name}")
                for alias in node.names
                if private_module or PRIVATE.match(alias.name)
            ]
        if not isinstance(node, ast.Attribute) or not PRIVATE.match(node.attr) or node.attr in NAMEDTUPLE:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_test_reads_a_private_attribute():
    found = [
        f"{rel}:{line}: {access}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, access in private_reads(path)
        if ((rel := path.relative_to(TESTS).as_posix()), access) not in ALLOWED
    ]
    assert not found, "tests read private attributes; use the public API:\n" + "\n".join(found)


def test_the_allow_list_holds_only_what_is_still_there():
    present = {
        (path.relative_to(TESTS).as_posix(), access)
        for path in TESTS.rglob("*.py")
        for _, access in private_reads(path)
    }
    assert set(ALLOWED) <= present, set(ALLOWED) - present


def test_the_check_finds_what_it_is_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "policy._model.eval()\n"  # found
        "self._t += 1\n"  # the test's own object
        "row._asdict()\n"  # namedtuple API
        "x.__class__\n"  # dunder
        "a.b._c\n"  # found
        "from m._private import f\n"  # found
        "from m import _f, g\n"  # _f found
    )
    found = [(1, "policy._model"), (5, "a.b._c"), (6, "from m._private import f"), (7, "from m import _f")]
    assert private_reads(sample) == found
