"""Browser tests: Playwright drives Debian's Chromium against the live test server.

Without Chromium the browser tests are skipped, unless NW_REQUIRE_BROWSER=1 (set by .ci/run),
where a missing browser is a failure.
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("NW_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]

# How long an action or an expect() assertion waits before it fails. The test workers run side by side
# (pytest-xdist), each with its browser and live server, so a request can take seconds on a busy machine.
TIMEOUT_MS = 15_000

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# to set up data are ordinary synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    browser_items = [i for i in items if "tests/browser/" in str(i.fspath)]
    for item in browser_items:
        item.add_marker(pytest.mark.browser)
    if Path(CHROMIUM).exists() or shutil.which("chromium"):
        return
    if os.environ.get("NW_REQUIRE_BROWSER") == "1":
        return  # the launch fixture fails loudly
    skip = pytest.mark.skip(reason=f"Chromium not found at {CHROMIUM}; set NW_REQUIRE_BROWSER=1 to fail instead")
    for item in browser_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)

    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not executable:
        pytest.fail(f"Chromium is required (NW_REQUIRE_BROWSER=1) but was not found at {CHROMIUM}")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server, transactional_db):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    context.close()


@pytest.fixture
def screenshot(page, request):
    """screenshot("name") saves test-artifacts/<test>-<name>.png."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name):
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def login(page):
    """login(user, password) logs in through the real form."""

    def do(username, password="pw-for-tests-1"):
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

    return do


@pytest.fixture
def make_user(transactional_db):
    """make_user("name", role="curator") creates a user in that role's group."""
    from django.contrib.auth.models import Group, User

    from memory.roles import ensure_role_groups

    def make(username, role="approver", password="pw-for-tests-1"):
        ensure_role_groups()
        user = User.objects.create_user(username=username, password=password)
        user.groups.add(Group.objects.get(name=role))
        return user

    return make
