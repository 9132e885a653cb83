"""Benchmark results: every bench script records its figures through ``benchmarks/results_io.py``,
every file in ``benchmarks/results`` is such a record, and ``docs/gen_benchmarks.py`` renders each.
"""

from __future__ import annotations

import ast
import datetime
import importlib.util
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"
# Scripts in benchmarks/ that measure nothing themselves, and why.
HELPERS = {
    "results_io.py": "the writer itself",
    "di_engine_runner.py": "DI-engine's side of bench_dizoo_parity.py, run in DI-engine's venv",
    "di_engine_bc_runner.py": "DI-engine's side of bench_offline_bc.py, run in DI-engine's venv",
    "di_engine_cql_runner.py": "DI-engine's side of bench_offline_cql.py, run in DI-engine's venv",
    "sb3_runner.py": "Stable-Baselines3's side of bench_dizoo_parity.py, run in its own venv",
    "minatar_dqn_plain.py": "the plain side of bench_minatar.py, which records both sides",
}


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results_io = load(BENCHMARKS / "results_io.py")
gen_benchmarks = load(REPO / "docs" / "gen_benchmarks.py")


def bench_scripts() -> list[Path]:
    return sorted(p for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS)


def recorded() -> list[tuple[Path, dict]]:
    return [(path, json.loads(path.read_text())) for path in sorted(RESULTS.glob("*.json"))]


def test_every_bench_script_writes_through_results_io():
    scripts = bench_scripts()
    assert len(scripts) >= 20, [p.name for p in scripts]
    missing = [p.name for p in scripts if not gen_benchmarks.writes_results(ast.parse(p.read_text()))]
    assert not missing, (
        f"{missing} do not call results_io.write_result: record the figures with it (or, for a script "
        "that measures nothing itself, add it to HELPERS with the reason)"
    )


def test_no_bench_script_stamps_its_own_record():
    """Date, commit and machine come from the one writer, not from each script."""
    own = {
        p.name: [s for s in ("datetime.date", "rev-parse", "platform.machine") if s in p.read_text()]
        for p in bench_scripts()
    }
    assert not {name: found for name, found in own.items() if found}


def test_every_recorded_result_has_the_fields():
    files = recorded()
    assert files, "benchmarks/results holds no result"
    for path, data in files:
        assert results_io.problems(data) == [], path.name
        assert data["name"] == path.stem, path.name
        assert (REPO / data["script"]).is_file(), f"{path.name}: {data['script']} does not exist"
        assert Path(data["script"]).name not in HELPERS, path.name
        assert data["command"].startswith(f"python {data['script']}"), path.name
        datetime.date.fromisoformat(data["date"])
        assert data["commit"] and data["machine"]["cpus"], path.name


def test_the_benchmarks_page_renders_every_result_and_script():
    page = gen_benchmarks.render()
    for path, data in recorded():
        assert f"### `{data['name']}`" in page, path.name
        assert f"`{data['command']}`" in page, path.name
        assert data["reference"] in page, path.name
        for key in data["ratio"]:
            assert f"`{key}`" in page, f"{path.name}: ratio {key}"
    for script in bench_scripts():
        assert f"`python benchmarks/{script.name}`" in page, script.name


def test_a_written_result_is_complete_and_rendered(tmp_path, monkeypatch):
    monkeypatch.setenv(results_io.FOLDER_VARIABLE, str(tmp_path))
    argv = [str(BENCHMARKS / "bench_collect.py"), "--seconds", "0.5"]
    path = results_io.write_result(
        "collect_trial",
        {"loop_steps_per_s": 250.0},
        reference="a bare loop",
        ratio={"ours/loop": 0.5},
        argv=argv,
    )
    assert path == tmp_path / "collect_trial.json"
    data = json.loads(path.read_text())
    assert list(data) == list(results_io.FIELDS)
    assert data["script"] == "benchmarks/bench_collect.py"
    assert data["command"] == "python benchmarks/bench_collect.py --seconds 0.5"
    assert data["date"] == datetime.date.today().isoformat()
    assert data["machine"]["cpus"] == os.cpu_count()
    assert data["machine"]["torch"] == metadata.version("torch")
    assert data["machine"]["ray"] == metadata.version("ray")
    page = gen_benchmarks.render(tmp_path)
    assert "`python benchmarks/bench_collect.py --seconds 0.5`" in page
    assert "| `ours/loop` | 0.5 |" in page
    assert "| `loop_steps_per_s` | 250 |" in page
    assert "Reference: a bare loop" in page
    assert "`collect_trial`" in page  # in the table of scripts, beside bench_collect.py


def test_write_result_refuses_an_incomplete_result(tmp_path, monkeypatch):
    monkeypatch.setenv(results_io.FOLDER_VARIABLE, str(tmp_path))
    argv = [str(BENCHMARKS / "bench_collect.py")]
    with pytest.raises(ValueError, match="reference"):
        results_io.write_result("trial", {"a": 1}, reference=" ", ratio={}, argv=argv)
    with pytest.raises(ValueError, match="figures"):
        results_io.write_result("trial", {}, reference="a loop", ratio={}, argv=argv)
    with pytest.raises(ValueError, match="ratio"):
        results_io.write_result("trial", {"a": 1}, reference="a loop", ratio={"a/b": "fast"}, argv=argv)
    with pytest.raises(ValueError, match="lowercase"):
        results_io.write_result("Trial run", {"a": 1}, reference="a loop", ratio={}, argv=argv)
    assert not list(tmp_path.iterdir())


def test_the_page_refuses_a_file_that_is_not_a_result(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"figures": {"steps": 1}}))
    with pytest.raises(ValueError, match=r"old\.json is not a result: no 'name'.*no 'command'"):
        gen_benchmarks.render(tmp_path)


def test_a_bench_script_run_writes_its_result(tmp_path):
    """bench_final_save.py at its smallest, end to end: the script, the writer, the page."""
    env = {**os.environ, results_io.FOLDER_VARIABLE: str(tmp_path)}
    cmd = [sys.executable, "benchmarks/bench_final_save.py", "--rows", "2000", "--since-flush", "1000"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "final_save.json").read_text())
    assert results_io.problems(data) == []
    assert data["command"] == "python benchmarks/bench_final_save.py --rows 2000 --since-flush 1000"
    assert data["figures"]["rows"] == 2000
    assert set(data["ratio"]) == {"whole_file_s/incremental_s"}
    assert f"`{data['command']}`" in gen_benchmarks.render(tmp_path)
