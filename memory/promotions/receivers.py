"""What the promotion feature does when other parts of the product act."""

from django.db import transaction
from django.db.models import Count
from django.dispatch import receiver

from memory.services import batch_reverted
from memory.review_queue import register_review_source
from memory.signals import working_lessons_added


@receiver(working_lessons_added, dispatch_uid="promotions.detect_after_new_lessons")
def detect_after_new_lessons(sender, memory_id, lesson_ids=(), **kwargs):
    from memory.promotions.tasks import detect_promotions

    transaction.on_commit(lambda: detect_promotions.delay(memory_id))


@receiver(batch_reverted, dispatch_uid="promotions.follow_reverted_approval")
def follow_reverted_approval(sender, batch, revert_batch, **kwargs):
    from memory.promotions.services import on_batch_reverted

    on_batch_reverted(sender, batch=batch, revert_batch=revert_batch)


@register_review_source("promotions")
def pending_promotions_per_memory(memory_ids):
    from memory.models import PromotionCandidate

    qs = PromotionCandidate.objects.filter(status=PromotionCandidate.Status.PENDING)
    if memory_ids is not None:
        qs = qs.filter(memory_id__in=memory_ids)
    return dict(qs.values_list("memory_id").annotate(n=Count("id")).values_list("memory_id", "n"))
