"""How many items wait for a human in each memory, for the home grid.

Features that add review items (promotion candidates, compaction proposals, …) register a
callable returning {memory_id: count}; each should cost one query however many memories exist.

    from memory.review_queue import register_review_source

    @register_review_source("promotions")
    def pending_promotions(memory_ids):
        return dict(Candidate.objects.filter(...).values_list("memory_id").annotate(n=Count("id")))
"""

from collections import Counter

_SOURCES = {}


def register_review_source(name):
    def decorator(func):
        _SOURCES[name] = func
        return func

    return decorator


def review_sources():
    return dict(_SOURCES)


def pending_review_counts(memory_ids=None):
    """{memory_id: items waiting for review}, summed over every registered source.

    memory_ids limits the question to those memories (None: all). Memories with nothing pending
    are absent, so callers use `.get(memory_id, 0)`.
    """
    total = Counter()
    for source in _SOURCES.values():
        for memory_id, count in (source(memory_ids) or {}).items():
            total[memory_id] += count
    return {memory_id: n for memory_id, n in total.items() if n}
