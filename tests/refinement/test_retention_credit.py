"""Retention counts what a session keeps: a merge that keeps the merged text is not a loss; a delete is."""

import pytest
from django.urls import reverse

from memory.models import RefinementRun
from memory.refinement.prompts import SAFETY_RULES
from memory.refinement.session import kept_share

from .helpers import core, run_with, state
from .scripted import ScriptedEngine

pytestmark = pytest.mark.django_db

S = RefinementRun.Status


def _small_memory(memory):
    """Four core lessons; two of them say the same thing, the issue's shape (72.5% by plain mass)."""
    a = core(memory, "Use UTC everywhere in the API and convert to local time only in the client.")
    b = core(memory, "Use UTC everywhere in the API; convert to local time only in the client.")
    c = core(memory, "Payments go through the ledger service only.")
    d = core(memory, "Sessions expire after 30 minutes of inactivity.")
    return a, b, c, d


def test_merging_two_near_identical_lessons_of_four_completes(memory):
    a, b, c, d = _small_memory(memory)
    plain_share = (len(a.text) + len(c.text) + len(d.text)) / sum(len(x.text) for x in (a, b, c, d))
    assert plain_share < 0.9  # by plain mass the breaker would roll this de-duplication back
    run = run_with(memory, ScriptedEngine([("consolidate", {"ids": [a.pk, b.pk], "text": a.text})]))
    assert run.status == S.COMPLETED, run.error
    assert run.retention >= 0.99
    assert run.mass_counted == run.mass_before
    assert run.mass_after < run.mass_before  # the memory itself did get smaller


def test_a_merge_that_drops_details_and_a_delete_still_trip_the_breaker(memory):
    a, b, c, d = _small_memory(memory)
    before = state(memory)
    run = run_with(memory, ScriptedEngine([("consolidate", {"ids": [a.pk, b.pk], "text": "Use UTC."})]))
    assert run.status == S.TERMINATED
    assert state(memory) == before
    assert run.mass_counted < 0.9 * run.mass_before
    assert run.retention == pytest.approx(run.mass_counted / run.mass_before, abs=0.02)

    run = run_with(memory, ScriptedEngine([("delete", {"id": c.pk}), ("delete", {"id": d.pk})]))
    assert run.status == S.TERMINATED and state(memory) == before


def test_the_threshold_is_the_personas(memory, client_for, approver):
    a, b, _c, _d = _small_memory(memory)
    client = client_for(approver)
    response = client.post(reverse("refinement:threshold", args=[memory.persona_id]), {"threshold": "99"})
    assert response.status_code == 302
    memory.persona.refresh_from_db()
    assert memory.persona.refinement_threshold == pytest.approx(0.99)
    # The merged text misses one word of the other lesson: fine at 90%, too much loss at 99%.
    run = run_with(memory, ScriptedEngine([("consolidate", {"ids": [a.pk, b.pk], "text": b.text})]))
    assert run.threshold == pytest.approx(0.99)
    assert run.status == S.TERMINATED

    for bad in ("20", "101", "ninety"):
        client.post(reverse("refinement:threshold", args=[memory.persona_id]), {"threshold": bad})
        memory.persona.refresh_from_db()
        assert memory.persona.refinement_threshold == pytest.approx(0.99), bad
    page = client.get(reverse("refinement:prompt", args=[memory.persona_id])).content.decode()
    assert 'id="threshold" name="threshold" type="number" min="50" max="100" step="1" value="99"' in page


def test_viewers_cannot_change_the_threshold(memory, client_for, viewer):
    response = client_for(viewer).post(reverse("refinement:threshold", args=[memory.persona_id]), {"threshold": "60"})
    assert response.status_code == 403
    memory.persona.refresh_from_db()
    assert memory.persona.refinement_threshold == pytest.approx(0.90)


def test_kept_share_counts_words():
    assert kept_share("Use UTC in the API", "In the API, use UTC everywhere") == 1.0
    assert kept_share("Use UTC in the API", "Use UTC") == pytest.approx(0.4)


def test_run_page_shows_the_breakers_figures_and_the_timeline_of_a_finished_run(memory, client_for, viewer):
    a, b, _c, _d = _small_memory(memory)
    run = run_with(memory, ScriptedEngine([("consolidate", {"ids": [a.pk, b.pk], "text": "Use UTC."})]))
    html = client_for(viewer).get(reverse("refinement:run", args=[run.pk])).content.decode()
    assert f"kept {run.mass_counted} of {run.mass_before} tokens · threshold 90.0%" in html
    assert f"left at {run.mass_before} tokens" in html  # rolled back: the memory did not change
    timeline = html[html.index('data-testid="timeline"') : html.index("</ol>", html.index('data-testid="timeline"'))]
    assert "Started" in timeline and "#1 consolidate" in timeline and "Rolled back (terminated)" in timeline
    assert "retention" in timeline and "+0.0 s" in timeline


def test_ground_rules_speak_of_code_not_voices():
    rules = SAFETY_RULES.lower()
    for word in ("voice", "body", "emotional"):
        assert word not in rules
    for phrase in ("error messages", "file paths", "decisions"):
        assert phrase in rules
