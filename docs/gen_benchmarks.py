"""The benchmarks page's tables, rendered from ``benchmarks/results/*.json``.

``python docs/gen_benchmarks.py`` prints them as Markdown; the MkDocs hook (``docs/hooks.py``) puts
them into ``docs/benchmarks.md`` at build time, so no figure on that page is typed by hand. Every
file is a result as ``benchmarks/results_io.py`` writes it: its command, date, commit and machine
head its section, then its reference and ratios, then its figures (a mapping becomes a two-column
table, a list of records or a mapping of records a table with one row per record, nested mappings a
heading each). A file that is not such a result fails the build. The bench scripts (those that call
``write_result``) are listed last, each with the results it has recorded.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"


def _load_results_io():
    spec = importlib.util.spec_from_file_location("results_io", BENCHMARKS / "results_io.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results_io = _load_results_io()


def _cell(value) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    elif isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list)) for v in value):
        text = ", ".join(_cell(v) for v in value)
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(", ", ": "))
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _is_scalar(value) -> bool:
    return not isinstance(value, (dict, list)) or (
        isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)
    )


def _is_record(value) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(_is_scalar(v) for v in value.values())


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return out + [""]


def _records_table(records: list[Mapping], names: list[str] | None = None) -> list[str]:
    columns: list[str] = []
    for record in records:
        columns += [key for key in record if key not in columns]
    header = (["run"] if names is not None else []) + columns
    rows = [
        ([names[i]] if names is not None else []) + [record.get(c, "") for c in columns]
        for i, record in enumerate(records)
    ]
    return _table(header, rows)


def render_data(data, level: int = 4) -> list[str]:
    """Markdown tables for one JSON value, whatever its shape."""
    heading = "#" * min(level, 6)
    if isinstance(data, list):
        if data and all(isinstance(v, Mapping) for v in data):  # one row each; nested values as JSON
            return _records_table(data)
        return _table(["value"], [[v] for v in data])
    if not isinstance(data, Mapping):
        return _table(["value"], [[data]])
    out: list[str] = []
    scalars = {k: v for k, v in data.items() if _is_scalar(v)}
    if scalars:
        out += _table(["key", "value"], [[f"`{k}`", v] for k, v in scalars.items()])
    rest = {k: v for k, v in data.items() if k not in scalars}
    if rest and all(_is_record(v) for v in rest.values()):  # a mapping of records: one row each
        return out + _records_table(list(rest.values()), names=[f"`{k}`" for k in rest])
    for key, value in rest.items():
        out += [f"{heading} `{key}`", ""] + render_data(value, level + 1)
    return out


def bench_scripts() -> dict[str, str]:
    """Each bench script (one that writes results) and the first paragraph of its docstring."""
    scripts = {}
    for path in sorted(BENCHMARKS.glob("*.py")):
        tree = ast.parse(path.read_text())
        if not writes_results(tree):
            continue
        doc = ast.get_docstring(tree) or ""
        scripts[path.name] = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    return scripts


def writes_results(tree: ast.Module) -> bool:
    """Whether a script's source calls ``results_io.write_result``: what makes it a bench script."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "results_io"
        and "write_result" in {a.name for a in node.names}
        for node in ast.walk(tree)
    ) and any(
        isinstance(node, ast.Call) and getattr(node.func, "id", None) == "write_result"
        for node in ast.walk(tree)
    )


def _machine(machine: Mapping) -> str:
    known = {k: v for k, v in machine.items() if v not in (None, "", "not recorded")}
    cpu = f"{known.get('cpus', 'unrecorded')} CPUs" + (
        f" ({known['cpu_model']})" if "cpu_model" in known else ""
    )
    parts = [cpu] + ([f"GPU {known['gpu']}"] if known.get("gpu", "none") != "none" else [])
    parts += [f"{key} {known[key]}" for key in ("python", "torch", "ray") if key in known]
    return ", ".join(parts)


def render_result(data: Mapping, filename: str) -> list[str]:
    """One result file: where and how it was made, its reference and ratios, then its figures."""
    found = results_io.problems(data)
    if found:
        raise ValueError(f"benchmarks/results/{filename} is not a result: {'; '.join(found)}")
    out = [f"### `{data['name']}`", "", f"`{data['command']}`", ""]
    out += [f"Measured {data['date']} at commit `{data['commit']}` on {_machine(data['machine'])}.", ""]
    if data.get("note"):
        out += [f"Note: {data['note']}", ""]
    out += [f"Reference: {data['reference']}", ""]
    if data["ratio"]:
        out += _table(
            ["ratio", "value"], [[f"`{k}`", "n/a" if v is None else v] for k, v in data["ratio"].items()]
        )
    return out + render_data(data["figures"])


def render(results: Path = RESULTS) -> str:
    out: list[str] = []
    files = sorted(results.glob("*.json")) if results.is_dir() else []
    written_by: dict[str, list[str]] = {}
    out += ["## Recorded results", ""]
    if not files:
        out += ["No result is recorded in `benchmarks/results/` yet.", ""]
    for path in files:
        data = json.loads(path.read_text())
        out += render_result(data, path.name)
        written_by.setdefault(Path(data["script"]).name, []).append(f"`{data['name']}`")
    out += ["## Every benchmark script", ""]
    rows = []
    for name, summary in bench_scripts().items():
        recorded = ", ".join(written_by.get(name, [])) or "none recorded yet"
        rows.append([f"`python benchmarks/{name}`", summary, recorded])
    header = ["command", "what it measures", "recorded results"]
    out += ["| " + " | ".join(header) + " |", "|---|---|---|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    os.chdir(REPO)
    print(render(), end="")
