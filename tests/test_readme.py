"""The docs' Task snippets (docs/pipelines.md) are excerpts of the examples they name: drift fails here.

A snippet's statements (comments and layout ignored: compared as ``ast.unparse`` gives them, a
``with`` by its header) must appear in the example in the same order, and its ``task.use(...)``
stages must be the example's stages, none left out.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (the README text just before the snippet, the example it is taken from)
SNIPPETS = [
    ("is the serial DQN written as a `Task`", "examples/task_dqn.py"),
    ("On Ray the same stages take the actors.", "examples/apex_dqn.py"),
]


PAGE = "docs/pipelines.md"


def readme_block(after: str) -> str:
    """The first ```python block of the page after the text ``after``."""
    with open(os.path.join(REPO, PAGE)) as f:
        readme = f.read()
    start = readme.index(after)
    block = re.compile(r"^```python\n(.*?)^```", re.S | re.M).search(readme, start)
    assert block is not None, f"no python block after {after!r} in {PAGE}"
    return block.group(1)


def statements(body: list[ast.stmt]) -> list[str]:
    """Each statement as one normalized line; a ``with`` as its header, then its body's."""
    lines = []
    for stmt in body:
        if isinstance(stmt, ast.With):
            lines.append("with " + ", ".join(ast.unparse(item) for item in stmt.items))
            lines.extend(statements(stmt.body))
        else:
            lines.append(ast.unparse(stmt))
    return lines


def example_statements(path: str) -> list[str]:
    """The statements of every function in the example, in file order."""
    with open(os.path.join(REPO, path)) as f:
        tree = ast.parse(f.read())
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    return [line for fn in functions for line in statements(fn.body)]


def stages(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("task.use(")]


@pytest.mark.parametrize("after, example", SNIPPETS)
def test_the_readme_snippet_is_an_excerpt_of_the_example(after, example):
    snippet = statements(ast.parse(readme_block(after)).body)
    assert stages(snippet), "the snippet has no task.use(...) line"
    in_file = example_statements(example)
    # Each snippet line in the example, in the snippet's order.
    position = 0
    for line in snippet:
        assert line in in_file[position:], (
            f"{PAGE}'s snippet line {line!r} is not in {example} (in this order); "
            f"the example has:\n" + "\n".join(in_file)
        )
        position = in_file.index(line, position) + 1
    assert stages(snippet) == stages(in_file), f"{PAGE}'s stages differ from {example}'s"


def test_statements_ignore_comments_and_layout_but_not_arguments():
    written = "with a(x,\n       y) as b:  # why\n    task.use(s( cfg ))  # a stage\n"
    assert statements(ast.parse(written).body) == ["with a(x, y) as b", "task.use(s(cfg))"]
    changed = "with a(x, y, z=1) as b:\n    task.use(s(cfg))\n"
    assert statements(ast.parse(changed).body)[0] != "with a(x, y) as b"
