"""A pruning proposal is reviewed on the compaction diff page, with relevance and coverage per drop."""

from django.urls import reverse

from memory.models import CompactionProposal, PromotionCandidate
from tests.factories import make_lesson
from tests.pipeline.helpers import run_pipeline


def test_drop_proposal_shows_relevance_and_coverage(client_for, viewer, memory, scripted_engine):
    memory.working_char_budget = 40
    memory.save()
    old = make_lesson(memory, "Restarted the worker by hand once more today.", relevance="low")
    keep = make_lesson(memory, "Never deploy on Fridays: the on-call rota is empty.", relevance="critical")
    candidate = PromotionCandidate.objects.create(
        memory=memory, text="r", category="PATTERN", evidence={}, fingerprint="x", engine="offline"
    )
    candidate.supporting.set([old])
    scripted_engine(
        turns=["Nothing new.", "None.", [("drop_observations", {"ids": [str(old.pk), str(keep.pk)]})], "Done.", "Done."]
    )
    run = run_pipeline(memory)
    proposal = CompactionProposal.objects.get(pk=run.proposal_id)
    assert proposal.trigger == "pruning" and proposal.status == "pending"
    page = client_for(viewer).get(reverse("compaction-detail", args=[proposal.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-coverage="cited"' in html and "Pruned by the observation pipeline" in html
    assert 'data-testid="drop-relevance">Low<' in html
    assert list(proposal.drops.values_list("lesson_id", flat=True)) == [old.pk]
