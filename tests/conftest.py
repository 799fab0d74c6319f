import os

import pytest

from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory


def pytest_collection_modifyitems(config, items):
    # On the real-services run, the PostgreSQL-only tests must run rather than skip.
    pass


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def persona(db):
    return PersonaFactory()


@pytest.fixture
def project(db):
    return ProjectFactory()


@pytest.fixture
def memory(db, persona, project):
    return MemoryFactory(persona=persona, project=project)


@pytest.fixture
def on_postgres(settings):
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def requires_services():
    return os.environ.get("NW_REQUIRE_SERVICES") == "1"
