"""How compaction shows up elsewhere in the product: pending proposals wait for review."""

from django.db.models import Count

from memory.review_queue import register_review_source


@register_review_source("compactions")
def pending_compactions_per_memory(memory_ids):
    from memory.models import CompactionProposal

    qs = CompactionProposal.objects.filter(status=CompactionProposal.Status.PENDING)
    if memory_ids is not None:
        qs = qs.filter(memory_id__in=memory_ids)
    return dict(qs.values_list("memory_id").annotate(n=Count("id")).values_list("memory_id", "n"))
