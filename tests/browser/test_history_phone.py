"""The history pages on a 390 px phone: a long ref in a change wraps inside its card."""

from django.contrib.auth.models import User

from memory import services
from tests.browser.audit import horizontal_overflow
from tests.browser.conftest import ARTIFACTS
from tests.factories import SYSTEM, MemoryFactory, make_lesson

PATH = "src/payments/clients/generated/ResponseSchemaValidator.ts"


def test_history_with_long_refs_fits_a_phone(page, login, transactional_db):
    memory = MemoryFactory()
    lesson = make_lesson(
        memory, f"Payments client: response schema is missing `updatedAt` in {PATH}", refs=f"{PATH}#L120-L168"
    )
    services.lesson_update(
        lesson=lesson,
        actor=SYSTEM,
        refs=PATH.replace(".ts", "V2.ts") + "#L12-L16",
        reason="The validator moved to its second generated version",
    )
    User.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-1")
    login("boss")
    page.set_viewport_size({"width": 390, "height": 844})
    ARTIFACTS.mkdir(exist_ok=True)
    for name, url in (("memory-history", memory.history_url()), ("lesson-history", f"/lessons/{lesson.pk}/history/")):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}-long-refs.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") == 390, horizontal_overflow(page)
        assert page.get_by_text("V2.ts#L12-L16").first.is_visible()
