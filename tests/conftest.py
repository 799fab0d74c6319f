import os
import shutil
import tempfile
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings as django_settings

from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory

pytest_plugins = ["tests.fakes.plugin"]


def pytest_collection_modifyitems(config, items):
    # On the real-services run, the PostgreSQL-only tests must run rather than skip.
    pass


def _worker_index():
    """0 in a serial run and on pytest-xdist's first worker (gw0), n on worker gwn."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker.startswith("gw") else 0


def _redis_db_of_worker(url):
    """CACHE_URL for this worker: the same Redis, its own database.

    Workers each have a test database of their own (ids overlap), so they must not share cache
    keys, and one worker emptying its cache must not empty another's. Worker n takes the n-th
    database from the configured one upwards, wrapping at 16 and passing over the brokers' databases.
    """
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    brokers = set()
    for name in ("NW_E2E_BROKER_URL", "CELERY_BROKER_URL"):
        broker = urlsplit(os.environ.get(name, ""))
        if broker.scheme.startswith("redis") and broker.netloc == parts.netloc:
            brokers.add(int(broker.path.strip("/") or 0))
    free = [db for db in ((base + k) % 16 for k in range(16)) if db == base or db not in brokers]
    if _worker_index() >= len(free):
        raise pytest.UsageError(f"{len(free)} Redis databases for the cache: run at most {len(free)} test workers")
    return urlunsplit(parts._replace(path=f"/{free[_worker_index()]}"))


def pytest_configure(config):
    # Under pytest-xdist each worker caches in a Redis database of its own; subprocesses the tests
    # start (MCP over stdio, Celery workers) inherit it through CACHE_URL.
    url = os.environ.get("CACHE_URL", "")
    if url.startswith("redis") and _worker_index():
        os.environ["CACHE_URL"] = url = _redis_db_of_worker(url)
        for alias in django_settings.CACHES.values():
            if alias.get("BACKEND", "").endswith("RedisCache"):
                alias["LOCATION"] = url

    # Hundreds of tests create users and log in: with Django's default hasher (PBKDF2, a million
    # rounds) each password costs a fifth of a second of CPU. No test is about the hash itself; the
    # configured hashers stay listed, so a password stored with one of them still checks.
    django_settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        *django_settings.PASSWORD_HASHERS,
    ]

    # Memory versions cached in files must not outlive a test database (ids start again each run).
    versions = django_settings.CACHES.get("versions", {})
    if versions.get("BACKEND", "").endswith(("FileBasedCache", "SharedFileCache")):
        versions["LOCATION"] = tempfile.mkdtemp(prefix="nw-test-versions-")


def pytest_unconfigure(config):
    location = django_settings.CACHES.get("versions", {}).get("LOCATION", "")
    if os.path.basename(location).startswith("nw-test-versions-"):
        shutil.rmtree(location, ignore_errors=True)


def _empty(cache):
    from django.core.cache.backends.redis import RedisCache

    from memory.cache_backends import TrackedRedisCache

    if not isinstance(cache, RedisCache):
        cache.clear()
        return
    if isinstance(cache, TrackedRedisCache):
        cache._tracker().forget_all()
    # Key by key rather than FLUSHDB: Redis tells every client that tracks keys (the versions cache
    # of every process, other workers' included) that a flush dropped all of them.
    client = cache._cache.get_client(write=True)
    keys = list(client.scan_iter(count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import caches

    for cache in caches.all(initialized_only=True):
        _empty(cache)
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


def examples(n):
    """max_examples for a property test: all n where NW_PROPERTY_EXAMPLES=full (CI's runs), else a third
    of them but at least 20 (`make test`): still every kind of step, in fewer combinations."""
    if os.environ.get("NW_PROPERTY_EXAMPLES") == "full":
        return n
    return min(n, max(20, n // 3))


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
