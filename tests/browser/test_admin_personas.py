"""The persona admin in a real browser: demo data, counts, a bad JSON edit, the prompt preview,
and a permanent delete that only happens after typing the name."""

import io

from django.core.management import call_command

from personas.models import Persona


def test_persona_admin_end_to_end(page, login, make_user, screenshot):
    call_command("seed_demo", stdout=io.StringIO())
    user = make_user("boss")
    user.is_staff = user.is_superuser = True
    user.save()
    login("boss")

    page.goto("/admin/personas/persona/")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 4
    felix = page.locator("#result_list tbody tr", has_text="Felix")
    assert "Implementer" in felix.inner_text()
    working = int(felix.locator("td.field-working_lessons").inner_text())
    assert working > 150
    screenshot("changelist")

    # a broken edit of the soul is an error next to the field, and the page stays usable
    felix.locator("th a").click()
    page.fill("#id_soul", '{"whoIAm": ["not", "a", "string"]}')
    page.click("input[name=_save]")
    assert "soul.whoIAm must be a string, not a list." in page.locator(".errorlist").first.inner_text()
    screenshot("json-error")

    page.click("text=Preview prompt")
    page.wait_for_selector("#compiled-prompt")
    prompt = page.locator("#compiled-prompt").inner_text()
    assert prompt.startswith("You are Felix, Implementer.")
    assert "## Core Lessons" in prompt and "## Working Memory" in prompt
    screenshot("preview")

    page.goto("/admin/memory/lesson/?q=right-to-left")
    assert "⟦U+202E⟧" in page.locator("#result_list").inner_text()
    screenshot("lessons")

    # delete archives; permanent delete needs the typed name
    persona = Persona.objects.get(name="Noor")
    page.goto(f"/admin/personas/persona/{persona.pk}/delete/")
    page.click("input[value='Yes, archive']")
    page.wait_for_url("**/admin/personas/persona/")
    assert page.locator("#result_list tbody tr").count() == 3
    page.goto(f"/admin/personas/persona/{persona.pk}/hard-delete/")
    page.fill("#id_confirm_name", "noor")
    page.click("input[value='Delete permanently']")
    assert "did not match" in page.locator(".errornote").inner_text()
    screenshot("hard-delete-refused")
    assert Persona.objects.filter(pk=persona.pk).exists()
    page.fill("#id_confirm_name", "Noor")
    page.click("input[value='Delete permanently']")
    page.wait_for_url("**/admin/personas/persona/")
    assert not Persona.objects.filter(pk=persona.pk).exists()
