"""After a compaction: the page says when working memory is still over its limits and why, and the
memory's "Compacted <date>" follows reverts."""

import pytest
from django.urls import reverse

from memory.compaction.services import compaction_apply, compaction_propose, compaction_revert
from memory.models import Memory
from memory.services import batch_revert
from tests.compaction.helpers import ScriptedEngine

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(memory, lessons, good_output, actor):
    return compaction_propose(memory=memory, actor=actor, engine=ScriptedEngine(good_output))


def test_still_over_budget_after_apply_is_said_with_the_reasons(client_for, approver, proposal, memory):
    Memory.objects.filter(pk=memory.pk).update(working_char_budget=150)
    response = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True)
    html = response.content.decode()
    assert "Compaction applied as" in html
    notice = html[html.index('id="still-over"') :]
    notice = notice[: notice.index("</p>")]
    assert "Working memory is still over its limits: working.md is " in notice
    assert "over the budget of 150. Why: a compaction aims at 4 lines" in notice
    assert "2 protected or critical lessons (" in notice and "characters) are never dropped." in notice
    assert html.count("still over its limits") == 2  # the message after applying, and on the page itself


def test_within_budget_after_apply_says_nothing(client_for, approver, proposal):
    html = client_for(approver).post(reverse("compaction-apply", args=[proposal.pk]), follow=True).content.decode()
    assert "Compaction applied as" in html and "still over its limits" not in html


def test_compacted_date_follows_reverts(memory, proposal, actor, lessons):
    compaction_apply(proposal=proposal, actor=actor)
    memory.refresh_from_db()
    assert memory.last_compacted_at is not None
    revert = compaction_revert(proposal=proposal, actor=actor)
    memory.refresh_from_db()
    assert memory.last_compacted_at is None  # no compaction is in force any more
    again = batch_revert(batch=revert, actor=actor)  # reverting the revert applies it again
    memory.refresh_from_db()
    assert memory.last_compacted_at == again.created_at


def test_summary_shows_the_date_of_the_compaction_still_in_force(client_for, approver, memory, proposal, actor):
    compaction_apply(proposal=proposal, actor=actor)
    compaction_revert(proposal=proposal, actor=actor)
    html = client_for(approver).get(memory.get_absolute_url()).content.decode()
    assert "<dt>Compacted</dt><dd>never</dd>" in html
