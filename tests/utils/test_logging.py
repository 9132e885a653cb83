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
