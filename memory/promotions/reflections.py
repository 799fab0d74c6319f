"""The observation pipeline's reflections, proposed as promotion candidates backed by their observations."""

from django.utils import timezone

from memory.models import Lesson
from memory.promotions import wording
from memory.promotions.candidates import REFLECTOR, insert_candidates, new_candidate
from memory.refs import parse_ref


def reflection_propose(*, memory, text, category, lessons, refs, engine, run_id):
    """A pending candidate for a reflection of the observation pipeline, backed by its observations.

    Call inside the pipeline's transaction. The candidate is labelled as a reflection (evidence
    source and run), so the inbox does not present it as a lesson recurring on distinct dates.
    """
    evidence = {"lessons": sorted(l.pk for l in lessons), "confirmations": [], "source": REFLECTOR, "run": run_id}
    proposal = wording.Proposal(text=text, category=category, refs=[parse_ref(r) for r in refs],
                                engine=str(engine)[:40])
    candidate = new_candidate(memory, proposal, evidence, [(l, ()) for l in lessons],
                           len({l.lesson_date for l in lessons}), timezone.now(), detector=REFLECTOR)
    (created,) = insert_candidates(memory, [candidate], candidate.created_at)
    return created


def reflection_support(*, candidate, lessons):
    """More observations back a pending reflection: its evidence, supporting lessons and date count follow."""
    have = set(candidate.evidence.get("lessons", []))
    added = [l for l in lessons if l.pk not in have]
    if not added:
        return candidate
    candidate.evidence = {**candidate.evidence, "lessons": sorted(have | {l.pk for l in added})}
    candidate.supporting_state = {**candidate.supporting_state,
                                  **{str(l.pk): {"hash": l.content_hash} for l in added}}
    candidate.supporting.add(*added)
    candidate.distinct_dates = len(set(
        Lesson.objects.filter(pk__in=candidate.evidence["lessons"]).values_list("lesson_date", flat=True)))
    candidate.save(update_fields=["evidence", "supporting_state", "distinct_dates"])
    return candidate
