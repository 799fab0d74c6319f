"""Fixtures the hardening tests share with other folders."""

from tests.formats.conftest import run_command  # noqa: F401 -- the import command runner, for the names tests
