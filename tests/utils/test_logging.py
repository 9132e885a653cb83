"""ding_ray's log lines reach the terminal as an application asks for them, never twice.

Each case runs in a fresh interpreter: pytest puts handlers on the root logger, which is exactly
what the fallback handler must step aside for.
"""

import subprocess
import sys

import pytest

LINE = "ContextExchanger does nothing here"


def stderr_of(setup: str) -> str:
    code = (
        "import logging\n"
        f"{setup}\n"
        "from ding_ray.framework.middleware import ContextExchanger\n"
        "ContextExchanger()\n"
        "logging.getLogger('ding_ray.test').warning('a warning')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr


@pytest.mark.parametrize(
    "setup, info_lines",
    [
        ("", 0),  # Python's default: warnings only
        ("logging.getLogger().setLevel(logging.INFO)", 1),  # DI-engine's idiom, no handler anywhere
        ("logging.basicConfig(level=logging.INFO)", 1),  # the application's handler, not a second line
        ("logging.basicConfig(level=logging.WARNING)", 0),  # its level rules
        ("logging.getLogger().setLevel(logging.INFO)\nlogging.getLogger('ding_ray').propagate = False", 1),
    ],
)
def test_info_lines_show_once_when_asked_for(setup, info_lines):
    err = stderr_of(setup)
    assert err.count(LINE) == info_lines, err
    assert err.count("a warning") == 1, err


def test_setup_logging_shows_info_unless_the_application_configured_logging():
    code = (
        "import logging\n"
        "from ding_ray.utils.runtime import setup_logging\n"
        "{}\n"
        "setup_logging()\n"
        "logging.getLogger('ding_ray.test').info('an info line')\n"
    )
    run = [sys.executable, "-c"]
    alone = subprocess.run(run + [code.format("")], capture_output=True, text=True, check=True).stderr
    assert alone.count("an info line") == 1, alone
    configured = subprocess.run(
        run + [code.format("logging.basicConfig(level=logging.WARNING)")],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "an info line" not in configured, configured


def test_a_line_logged_while_the_progress_bar_runs_starts_a_line_of_its_own():
    """The driver's tqdm bar shares stderr with the log lines: each line clears the bar first
    (before, a line was glued to the end of the bar's text) and the bar is drawn again after it."""
    code = (
        "import logging\n"
        "from tqdm import tqdm\n"
        "from ding_ray.utils.runtime import setup_logging\n"
        "setup_logging()\n"
        "bar = tqdm(total=100, unit=' env steps', mininterval=0)\n"  # on stderr, as RunMonitor's
        "bar.update(10)\n"
        "logging.getLogger('ding_ray.test').info('an info line')\n"
        "bar.update(10)\n"
        "bar.close()\n"
    )
    # bytes: text mode would turn the bar's carriage returns into newlines
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stderr.decode()
    before, line, after = err.partition("an info line")
    assert line, err
    text_before = before.split("\r")[-1]  # what the terminal's line holds when the message starts
    assert text_before.endswith(" I ding_ray.test: ") and "env steps" not in text_before, err
    assert "20/100" in after  # the bar goes on below the line
