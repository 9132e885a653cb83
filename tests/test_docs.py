"""The README is a front page and the documentation site builds.

- README.md has at most 250 lines, and each of its relative links names a file that exists.
- No dated figure or history in the README, the docs, the package or the examples: dates belong in
  git, CHANGELOG.md and the generated result files (``benchmarks/results``).
- ``mkdocs build --strict`` succeeds (broken links and anchors fail it). It needs the ``docs``
  extra: without it the test is skipped, unless ``DING_RAY_REQUIRE_SYSTEM_TESTS=1`` (CI).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.system_binaries import REQUIRE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATE = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}")
DATE_PATHS = ("README.md", "docs", "ding_ray", "examples")
NOT_PROSE = ("CHANGELOG.md", os.path.join("benchmarks", "results"))  # history and generated figures
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def read_readme() -> str:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        return f.read()


def dated_lines(paths=DATE_PATHS) -> list[str]:
    """``path:line: text`` of each line with a date, as ``grep -rnE`` over ``paths`` finds them."""
    found = []
    for top in paths:
        full = os.path.join(REPO, top)
        files = [full] if os.path.isfile(full) else []
        for folder, dirs, names in os.walk(full):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            files += [os.path.join(folder, name) for name in names]
        for path in sorted(files):
            rel = os.path.relpath(path, REPO)
            if rel.endswith(NOT_PROSE[0]) or rel.startswith(NOT_PROSE[1]):
                continue
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", errors="ignore")
            for number, line in enumerate(text.splitlines(), 1):
                if DATE.search(line):
                    found.append(f"{rel}:{number}: {line.strip()[:120]}")
    return found


def test_the_readme_is_a_front_page():
    lines = read_readme().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the details into docs/"


def test_no_dated_figures_or_history():
    found = dated_lines()
    assert not found, (
        "dates belong in git, CHANGELOG.md and benchmarks/results, not in prose; say what is true now:\n"
        + "\n".join(found)
    )


def test_the_date_check_finds_a_date(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", str(tmp_path))
    (tmp_path / "notes.md").write_text("measured on 2026-11-27\nno date here\n")
    assert dated_lines(("notes.md",)) == ["notes.md:1: measured on 2026-11-27"]


def test_every_relative_link_of_the_readme_exists():
    broken = []
    for target in LINK.findall(read_readme()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the page itself
        path = target.split("#", 1)[0]
        if not os.path.exists(os.path.join(REPO, path)):
            broken.append(target)
    assert not broken, f"README.md links to files that do not exist: {broken}"


def test_the_readme_install_puts_the_cpu_torch_line_first():
    readme = read_readme()
    cpu = readme.index("--index-url https://download.pytorch.org/whl/cpu")
    assert cpu < readme.index("pip install torch==2.13.0 -e . && python examples/apex_dqn.py")
    assert cpu < readme.index('pip install torch==2.13.0 -e ".[test]" && python -m pytest -q')


def test_the_docs_never_advise_ray_stop():
    """``ray stop`` stops every Ray of the user on the machine, other people's runs included."""
    pages = [os.path.join(REPO, "README.md")] + [
        os.path.join(folder, name)
        for folder, _, names in os.walk(os.path.join(REPO, "docs"))
        for name in names
        if name.endswith(".md")
    ]
    advice = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            for block in re.findall(r"^```(?:bash|sh|console)?\n(.*?)^```", f.read(), re.S | re.M):
                advice += [line for line in block.splitlines() if line.strip().startswith("ray stop")]
    assert not advice, advice


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        message = 'needs the docs extra: pip install -e ".[docs]"'
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{message} ({REQUIRE}=1 makes its absence a failure)")
        pytest.skip(message)
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    assert os.path.isfile(tmp_path / "site" / "benchmarks" / "index.html")
