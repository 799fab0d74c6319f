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
        cwd=ROOT,
        env={**full, "DJANGO_SETTINGS_MODULE": "nightwatch.settings"},
        capture_output=True,
        text=True,
        timeout=60,
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
        ({"DEBUG": "0", "SECRET_KEY": "short-but-private"}, "SECRET_KEY must be at least 50 characters"),
        ({"DEBUG": "0", "SECRET_KEY": "ab" * 40}, "at least 5 different ones"),
        ({"SECURE_PROXY_SSL_HEADER": "https"}, "SECURE_PROXY_SSL_HEADER must look like"),
        ({"SECURE_HSTS_SECONDS": "forever"}, "SECURE_HSTS_SECONDS must be a whole number"),
        ({"SQLITE_CACHE_MB": "1"}, "SQLITE_CACHE_MB must be at least 2"),
    ],
)
def test_bad_setting_fails_at_start_naming_the_variable(env, message):
    result = start(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_production_settings_start_with_a_real_secret():
    result = start(DEBUG="0", SECRET_KEY="a-long-private-value-for-this-deployment-0123456789")
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


# The production settings the README documents; `check --deploy` must find nothing to warn about.
PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "Xk2-" + "production-secret-for-the-deploy-check-" + "9f8e7d6c5b4a",
    "ALLOWED_HOSTS": "memory.example.com",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto=https",
}


def test_deploy_check_is_clean_with_the_documented_production_settings():
    # The browser tests allow async-unsafe ORM calls for themselves; a deployment never does.
    leave_out = ("DATABASE_URL", "DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE")
    full = {k: v for k, v in os.environ.items() if k not in leave_out}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**full, **PRODUCTION_ENV, "DJANGO_SETTINGS_MODULE": "nightwatch.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_static_files_are_served_with_debug_off(client, settings):
    settings.DEBUG = False
    response = client.get("/static/css/app.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content)


def test_postgresql_connections_turn_jit_off_and_let_the_url_override():
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['OPTIONS']['options'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG", "SECRET_KEY")}
    for url, expected in [
        ("postgres://u@127.0.0.1:5432/nw", "-c jit=off -c work_mem=32MB"),
        ("postgres://u@127.0.0.1:5432/nw?options=-c%20jit%3Don", "-c jit=off -c work_mem=32MB -c jit=on"),
    ]:
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**env, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "nightwatch.settings"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout.strip() == expected, out.stderr[-2000:]


def test_sqlite_connections_keep_the_page_cache_asked_for(db):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("a SQLite setting")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        assert cursor.fetchone()[0] == -64 * 1024  # SQLITE_CACHE_MB's default, in KiB
