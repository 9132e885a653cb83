"""The benchmarks page's tables, rendered from ``benchmarks/results/*.json``.

``python docs/gen_benchmarks.py`` prints them as Markdown; the MkDocs hook (``docs/hooks.py``) puts
them into ``docs/benchmarks.md`` at build time, so no figure on that page is typed by hand. Any JSON
file renders: its scalars become a two-column table, a list of records or a mapping of records a
table with one row per record, and nested mappings a heading each. Every table names the command
that made it (the file's ``command`` field, else the script that writes the file); a bench script
with no file in ``benchmarks/results`` is listed as having no recorded result.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"


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
        if data and all(_is_record(v) for v in data):
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
    """Each script in benchmarks/ and the first paragraph of its docstring."""
    scripts = {}
    for path in sorted(BENCHMARKS.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        scripts[path.name] = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    return scripts


def writer_of(stem: str) -> str | None:
    """The bench script whose source names the result file (or, for ``name_<part>``, its prefix)."""
    parts = stem.split("_")
    for n in range(len(parts), 0, -1):
        name = "_".join(parts[:n])
        if n < len(parts):
            name_forms = (name + "_", name + ".json")
        else:
            name_forms = (name + ".json", name)
        for path in sorted(BENCHMARKS.glob("*.py")):
            source = path.read_text()
            if any(form in source for form in name_forms) and len(name) >= 8:
                return path.name
    return None


def render() -> str:
    out: list[str] = []
    files = sorted(RESULTS.glob("*.json")) if RESULTS.is_dir() else []
    written_by: dict[str, list[str]] = {}
    out += ["## Recorded results", ""]
    if not files:
        out += ["No result is recorded in `benchmarks/results/` yet.", ""]
    for path in files:
        data = json.loads(path.read_text())
        script = writer_of(path.stem)
        if script:
            written_by.setdefault(script, []).append(path.name)
        command = data.get("command") if isinstance(data, Mapping) else None
        out += [f"### `{path.name}`", ""]
        if command:
            out += [f"Made by `{command}`.", ""]
        elif script:
            out += [f"Made by `python benchmarks/{script}` (the file does not record its options).", ""]
        else:
            out += ["The file does not say which command made it.", ""]
        if isinstance(data, Mapping) and isinstance(data.get("reference"), str):
            out += [f"Reference: {data['reference']}", ""]
        shown = (
            {k: v for k, v in data.items() if k not in ("command", "reference")}
            if isinstance(data, Mapping)
            else data
        )
        out += render_data(shown)
    out += ["## Every benchmark script", ""]
    rows = []
    for name, summary in bench_scripts().items():
        recorded = ", ".join(f"`{f}`" for f in written_by.get(name, [])) or "none recorded yet"
        rows.append([f"`python benchmarks/{name}`", summary, recorded])
    header = ["command", "what it measures", "result in benchmarks/results"]
    out += ["| " + " | ".join(header) + " |", "|---|---|---|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    os.chdir(REPO)
    print(render(), end="")
