from memory.engines.recorder import CallRecorder
from tests.factories import MemoryFactory, PersonaFactory


def test_llm_call_log_filters_in_the_browser(page, login, make_user, screenshot):
    reviewer = MemoryFactory(persona=PersonaFactory(name="Security Reviewer"))
    lead = MemoryFactory(persona=PersonaFactory(name="Tech Lead"))
    for memory, purpose, outcome, error in [
        (reviewer, "reflection", "ok", ""),
        (reviewer, "reflection", "error", "Anthropic rate limit (HTTP 429) persisted after 3 attempts"),
        (lead, "refinement", "ok", ""),
        (lead, "compaction", "ok", ""),
    ]:
        CallRecorder(memory=memory).record(
            purpose=purpose,
            provider="anthropic",
            model="claude-sonnet-4-6",
            tokens_in=1200,
            tokens_out=180,
            latency_ms=850,
            outcome=outcome,
            error=error,
        )
    make_user("lead", role="viewer")
    login("lead")

    page.click("nav >> text=LLM calls")
    page.wait_for_selector("text=Totals per persona")
    assert page.locator(".llm-calls tbody tr").count() == 4
    screenshot("all")

    page.select_option("#id_outcome", "error")
    # A function, not a bare expression: the page's Content-Security-Policy refuses eval of a string.
    page.wait_for_function("() => document.querySelectorAll('.llm-calls tbody tr').length === 1")
    assert "outcome=error" in page.url
    assert "rate limit" in page.locator(".llm-calls tbody").inner_text()
    screenshot("errors")
