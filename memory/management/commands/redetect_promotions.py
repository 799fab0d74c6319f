"""python manage.py redetect_promotions — re-evaluate pending candidates of an earlier detector, once."""

from django.core.management.base import BaseCommand

from memory.models import PromotionCandidate
from memory.promotions.candidates import DETECTOR, REFLECTOR
from memory.promotions.detection_runs import promotion_detect_run


class Command(BaseCommand):
    help = ("Run detection on every memory that still has pending candidates of an earlier detector: those that "
            "are no longer a group found now are superseded; decided candidates are left alone. Run by `make run`; "
            "does nothing once every pending candidate is current.")

    def handle(self, *args, **options):
        def outdated():
            # The source is checked in Python: a JSON key lookup is NULL where the key is missing.
            return [memory_id for memory_id, evidence in
                    PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING)
                    .exclude(detector__in=(DETECTOR, REFLECTOR)).values_list("memory_id", "evidence")
                    if evidence.get("source") != REFLECTOR]

        memory_ids = sorted(set(outdated()))
        for memory_id in memory_ids:
            promotion_detect_run(memory_id=memory_id)
        left = len(outdated())
        self.stdout.write(f"promotions: re-evaluated {len(memory_ids)} memor{'y' if len(memory_ids) == 1 else 'ies'}"
                          f"; {left} pending candidate{'s' if left != 1 else ''} of an earlier detector left")
