"""No text widens a page on a 390 px phone: long unbroken strings in batch titles, persona and project
names, project slugs, refs and lesson text wrap inside their boxes on every page that shows them."""

from datetime import date

from django.contrib.auth.models import User

from memory import services
from memory.models import ChangeBatch, PromotionCandidate
from tests.browser.audit import horizontal_overflow
from tests.browser.conftest import ARTIFACTS
from tests.factories import SYSTEM, MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

PHONE = {"width": 390, "height": 844}
FOLDER = "/srv/night-watch/imports/very-long-path-without-breaks-" + "x" * 40 + "/nightwatch-agents"
PATH = "src/payments/clients/generated/" + "ResponseSchemaValidatorForTheWholePaymentsApi" * 2 + ".ts"
WORD = "refreshTokenExpiryCheckSkippedInTheAuthMiddlewareBecauseTheClockSkewWasNeverConfigured"


def _memory_with_long_strings():
    memory = MemoryFactory(
        persona=PersonaFactory(name="PersonaWithAVeryLongNameWithoutAnySpacesAtAll" + "Z" * 40),
        project=ProjectFactory(
            slug="project-slug-without-breaks-" + "y" * 60, name="ProjectNameWithoutBreaks" + "Q" * 60
        ),
    )
    batch = services.batch_create(
        memory=memory, kind=ChangeBatch.Kind.IMPORT, actor=SYSTEM, label=f"Import of {FOLDER} #2"
    )
    lessons = [
        make_lesson(
            memory, f"{WORD} in {PATH} (day {day})", refs=f"{PATH}#L1{day}-L2{day}", day=date(2026, 1, day), batch=batch
        )
        for day in (1, 2, 3)
    ]
    candidate = PromotionCandidate.objects.create(
        memory=memory,
        text=f"Core: {WORD} {PATH}",
        category="PATTERN",
        evidence={},
        fingerprint="long",
        engine="offline",
        refs=[f"{PATH}#L12-L30"],
    )
    candidate.supporting.add(*lessons)
    return memory


def test_long_unbroken_text_never_widens_a_page_on_a_phone(page, login, transactional_db):
    memory = _memory_with_long_strings()
    User.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-1")
    login("boss")
    page.set_viewport_size(PHONE)
    ARTIFACTS.mkdir(exist_ok=True)
    problems = []
    for name, url in (
        ("history", memory.history_url()),
        ("memory", memory.get_absolute_url()),
        ("home", "/"),
        ("promotions", "/promotions/"),
    ):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}-long-text.png"), full_page=True)
        width = page.evaluate("window.innerWidth")
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width:
            problems.append(f"{name} ({url}) is {scroll}px wide on a {width}px phone: {horizontal_overflow(page)}")
    assert not problems, "\n".join(problems)
