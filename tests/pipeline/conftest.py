"""Fixtures the pipeline tests share with other folders."""

from tests.api.conftest import agent, make_agent  # noqa: F401 -- the API's agent client, for the recall tests
