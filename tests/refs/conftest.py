import pytest

from memory.refs.scratch import ScratchRepo, numbered_source
from memory.refs.services import refs_check_project
from tests.factories import MemoryFactory, ProjectFactory, make_lesson


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


@pytest.fixture
def drifted(checked_memory, repo, django_capture_on_commit_callbacks):
    """One moved ref, one changed ref, one valid ref, checked."""
    with django_capture_on_commit_callbacks(execute=True):
        lessons = {
            "moved": make_lesson(checked_memory, "Auth step ten", refs="src/auth/middleware.py#L10-L12"),
            "changed": make_lesson(checked_memory, "Invoice step four", refs="src/billing/invoice.py#L4"),
            "valid": make_lesson(checked_memory, "Invoice step thirty", refs="src/billing/invoice.py#L30"),
        }
    repo.insert_lines("src/auth/middleware.py", 1, ["# first", "# second"])
    repo.replace_line("src/billing/invoice.py", 4, "rounding = 'bankers'")
    repo.commit("drift")
    refs_check_project(project=checked_memory.project)
    return lessons
