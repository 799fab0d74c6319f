import os
import shutil
import tempfile

import pytest
from django.conf import settings as django_settings

from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory

pytest_plugins = ["tests.fakes.plugin"]


def pytest_collection_modifyitems(config, items):
    # On the real-services run, the PostgreSQL-only tests must run rather than skip.
    pass


def pytest_configure(config):
    # Memory versions cached in files must not outlive a test database (ids start again each run).
    versions = django_settings.CACHES.get("versions", {})
    if versions.get("BACKEND", "").endswith(("FileBasedCache", "SharedFileCache")):
        versions["LOCATION"] = tempfile.mkdtemp(prefix="nw-test-versions-")


def pytest_unconfigure(config):
    location = django_settings.CACHES.get("versions", {}).get("LOCATION", "")
    if os.path.basename(location).startswith("nw-test-versions-"):
        shutil.rmtree(location, ignore_errors=True)


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import caches

    for cache in caches.all(initialized_only=True):
        cache.clear()
    yield


@pytest.fixture(autouse=True)
def _demo_checkouts(settings, tmp_path_factory):
    # seed_demo writes a git repository for the demo project: keep it out of the source tree.
    settings.DEMO_CHECKOUT_DIR = str(tmp_path_factory.getbasetemp() / "demo-checkouts")


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
def other_persona(db):
    return PersonaFactory(name="Maya", role="Security Reviewer")


@pytest.fixture
def other_project(db):
    return ProjectFactory(slug="other-app", name="Other app")


@pytest.fixture
def on_postgres(settings):
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def requires_services():
    return os.environ.get("NW_REQUIRE_SERVICES") == "1"


def race_needs_postgres():
    """For tests that race threads on separate connections: SQLite serialises every writer, so the
    threads would not race at all and the test would prove nothing. They run wherever DATABASE_URL
    points at PostgreSQL (CI sets NW_REQUIRE_SERVICES=1, where SQLite is a failure)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return
    if requires_services():
        pytest.fail("NW_REQUIRE_SERVICES=1 but the database is not PostgreSQL")
    pytest.skip("needs PostgreSQL row locks; set DATABASE_URL=postgres://…")


def _user_in_role(django_user_model, username, role):
    from django.contrib.auth.models import Group

    from memory.roles import ensure_role_groups

    ensure_role_groups()
    user = django_user_model.objects.create_user(username=username, password="pw-for-tests-1")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def viewer(db, django_user_model):
    return _user_in_role(django_user_model, "viewer", "viewer")


@pytest.fixture
def curator(db, django_user_model):
    return _user_in_role(django_user_model, "curator", "curator")


@pytest.fixture
def approver(db, django_user_model):
    return _user_in_role(django_user_model, "approver", "approver")


@pytest.fixture
def client_for(client):
    """client_for(user) -> a test client logged in as that user."""

    def make(user):
        client.force_login(user)
        return client

    return make


@pytest.fixture
def team_memory(db):
    """make(label) -> a memory of a team of its own."""

    from personas.models import Team

    def make(label):
        team = Team.objects.create(name=f"Team {label}", slug=label)
        persona = PersonaFactory(name=f"Persona-{label}", team=team)
        project = ProjectFactory(name=f"Project {label}", slug=f"project-{label}", team=team)
        return MemoryFactory(persona=persona, project=project)

    return make
