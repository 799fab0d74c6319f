import pytest

from memory.refs.scratch import ScratchRepo, numbered_source
from tests.factories import MemoryFactory, ProjectFactory


@pytest.fixture
def repo(tmp_path):
    """A real git repository with two 40-line files, committed on main."""
    r = ScratchRepo(tmp_path / "checkout")
    r.write("src/auth/middleware.py", numbered_source("auth", 40))
    r.write("src/billing/invoice.py", numbered_source("invoice", 40))
    r.commit("first")
    return r


@pytest.fixture
def checked_project(db, repo):
    return ProjectFactory(checkout_path=str(repo.path), repository_url="https://github.com/example/app")


@pytest.fixture
def checked_memory(checked_project):
    return MemoryFactory(project=checked_project)
