"""The Content-Security-Policy holds on every main page: Chromium reports no violation.

Every page is visited with a listener for `securitypolicyviolation` events installed before any
script of the page runs; console errors mentioning the policy are collected too.
"""

from memory.models import Lesson
from tests.browser.dashboard_data import seed

COLLECT = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _pages(main, lesson):
    persona = main.persona
    return [
        "/",
        f"/memories/{main.pk}/",
        f"/memories/{main.pk}/history/",
        f"/memories/{main.pk}/prompt/",
        f"/lessons/{lesson.pk}/edit/",
        f"/lessons/{lesson.pk}/history/",
        "/promotions/",
        "/compactions/",
        "/refinement/",
        f"/refinement/personas/{persona.pk}/prompt/",
        f"/pipeline/?memory={main.pk}",
        "/llm/",
        "/admin/",
        "/admin/personas/persona/",
        f"/admin/personas/persona/{persona.pk}/change/",
        "/admin/memory/lesson/",
        f"/admin/memory/lesson/{lesson.pk}/change/",
        "/admin/axes/accessattempt/",
        "/api/v1/docs",
    ]


def test_main_pages_raise_no_csp_violation(page, login, make_user, live_server):
    main = seed()
    lesson = Lesson.objects.filter(memory=main).first()
    user = make_user("lead", role="approver")
    user.is_staff = user.is_superuser = True
    user.save()
    page.add_init_script(COLLECT)
    console = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    login("lead")
    violations = {}
    for path in _pages(main, lesson):
        response = page.goto(path)
        assert response.status < 400, path
        assert (
            "Content-Security-Policy" in {k.title(): v for k, v in response.headers.items()}
            or "content-security-policy" in response.headers
        ), path
        page.wait_for_load_state("networkidle")
        found = page.evaluate("window.__cspViolations")
        if found:
            violations[path] = found
    assert violations == {}
    assert console == []


def test_the_memory_picker_still_submits_without_inline_script(page, login, make_user, live_server):
    main = seed()
    make_user("lead", role="approver")
    page.add_init_script(COLLECT)
    login("lead")
    page.goto("/pipeline/")
    page.select_option("#pl-memory", str(main.pk))
    page.wait_for_url(lambda url: f"memory={main.pk}" in url)
    assert page.evaluate("window.__cspViolations") == []
