import pytest

from memory import services
from tests.factories import make_lesson

LOGIN = "/accounts/login/"


@pytest.fixture
def lesson(memory):
    return make_lesson(
        memory,
        "Always check `session.user` in src/auth/login.py",
        category="PATTERN",
        tier="core",
        refs="src/auth/login.py#L42-L45",
    )


@pytest.fixture
def user_actor(curator):
    return services.Actor.for_user(curator)


def assert_login_redirect(response):
    assert response.status_code == 302
    assert response["Location"].startswith(LOGIN)
