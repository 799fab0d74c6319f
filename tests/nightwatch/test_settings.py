"""Settings are validated at start: a bad value stops the process with the variable's name."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(**env):
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG", "SECRET_KEY")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=ROOT, env={**full, "DJANGO_SETTINGS_MODULE": "nightwatch.settings"},
        capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize(
    "env, message",
    [
        ({"DEBUG": "maybe"}, "DEBUG must be a boolean"),
        ({"MEMORY_MAX_LINES": "lots"}, "MEMORY_MAX_LINES must be a whole number"),
        ({"MEMORY_PROMOTION_THRESHOLD": "1"}, "MEMORY_PROMOTION_THRESHOLD must be at least 2"),
        ({"LLM_DEFAULT_PROVIDER": "llama"}, "LLM_DEFAULT_PROVIDER must be one of"),
        ({"LLM_TIMEOUT_SECONDS": "fast"}, "LLM_TIMEOUT_SECONDS must be a number"),
        ({"DATABASE_URL": "nosuchdb://x"}, "DATABASE_URL is not a valid database URL"),
        ({"DEBUG": "0"}, "SECRET_KEY must be set"),
    ],
)
def test_bad_setting_fails_at_start_naming_the_variable(env, message):
    result = start(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_production_settings_start_with_a_real_secret():
    result = start(DEBUG="0", SECRET_KEY="a-long-private-value-for-this-deployment")
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout
