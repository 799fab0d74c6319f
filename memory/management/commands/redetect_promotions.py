"""python manage.py redetect_promotions — re-evaluate pending candidates that break today's rules, once."""

from django.core.management.base import BaseCommand
from django.db import transaction

from memory.models import PromotionCandidate
from memory.promotions import detection
from memory.promotions.candidates import DETECTOR, REFLECTOR, _fingerprint
from memory.promotions.detection_runs import promotion_detect_run
from memory.promotions.reflections import ObservationGroups, reflections_reevaluate

# Stamped on a detection candidate that reflections grew past the group detection found: the next
# detection run treats it as an earlier detector's and keeps it only if it is still a group found now.
GROWN = "grown"


def _pending():
    return PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING)


def _grown_detection_candidates():
    """Detection's candidates whose lessons are no longer the group it stored: more than the cap, or
    evidence that changed after the candidate was made (its fingerprint is of the group as found)."""
    return [
        c
        for c in _pending().filter(detector=DETECTOR).only("pk", "memory_id", "evidence", "fingerprint")
        if c.evidence.get("source") != REFLECTOR
        and (len(c.evidence.get("lessons", ())) > detection.MAX_MEMBERS or c.fingerprint != _fingerprint(c.evidence))
    ]


def _outdated_memory_ids():
    # The source is checked in Python: a JSON key lookup is NULL where the key is missing.
    return {
        memory_id
        for memory_id, evidence in _pending()
        .exclude(detector__in=(DETECTOR, REFLECTOR))
        .values_list("memory_id", "evidence")
        if evidence.get("source") != REFLECTOR
    }


def _reflections_to_check():
    """Memories with a pending reflection that breaks the grouping rules."""
    by_memory = {}
    for candidate in _pending().select_related("memory").order_by("memory_id", "id"):
        if candidate.evidence.get("source") == REFLECTOR:
            by_memory.setdefault(candidate.memory_id, (candidate.memory, []))[1].append(candidate)
    result = []
    for memory, candidates in by_memory.values():
        groups = ObservationGroups.of_memory(memory)
        if any(not groups.passes(c.evidence.get("lessons", [])) for c in candidates):
            result.append(memory)
    return result


class Command(BaseCommand):
    help = (
        "Re-evaluate pending candidates that break today's rules, once: those of an earlier detector or "
        "grown past the group detection found are kept only if they are still a group found now; "
        "pipeline reflections holding more than 12 observations, or observations detection would not group, "
        "are replaced by the group that holds the observation each is about. Decided candidates are left "
        "alone. Run by `make run`; does nothing once every pending candidate is current."
    )

    def handle(self, *args, **options):
        # Reflections first: detection then sees what they hold now (a group a reflection holds is not
        # proposed again).
        replaced = []
        for memory in _reflections_to_check():
            replaced += reflections_reevaluate(memory=memory)
        grown = _grown_detection_candidates()
        with transaction.atomic():
            PromotionCandidate.objects.filter(pk__in=[c.pk for c in grown]).update(detector=GROWN)
        memory_ids = sorted(_outdated_memory_ids())
        for memory_id in memory_ids:
            promotion_detect_run(memory_id=memory_id)
        left = len(_outdated_memory_ids())
        self.stdout.write(
            f"promotions: re-evaluated {len(memory_ids)} memor{'y' if len(memory_ids) == 1 else 'ies'}"
            f"; {left} pending candidate{'s' if left != 1 else ''} of an earlier detector left"
            f"; {len(grown)} detection candidate{'s' if len(grown) != 1 else ''} had grown past {'its' if len(grown) == 1 else 'their'} group"
            f"; {len(replaced)} reflection{'s' if len(replaced) != 1 else ''} regrouped"
        )
