"""The home grid's "to review" count adds up pending promotions and compaction proposals."""

from datetime import date

import pytest

from memory.compaction.services import compaction_propose
from memory.promotions.services import promotion_detect
from memory.review_queue import pending_review_counts
from tests.factories import SYSTEM, MemoryFactory, make_lesson

pytestmark = pytest.mark.django_db


def test_pending_items_of_every_feature_are_counted_per_memory(memory):
    for day in (1, 2, 3):
        make_lesson(memory, "Refresh tokens skip the expiry check in the auth middleware",
                    refs="src/auth/middleware.ts#L23-L30", day=date(2026, 1, day))
    promotion_detect(memory=memory)
    compaction_propose(memory=memory, actor=SYSTEM)
    other = MemoryFactory()
    assert pending_review_counts() == {memory.pk: 2}
    assert pending_review_counts([other.pk]) == {}


def test_home_shows_the_count(client_for, viewer, memory):
    for day in (1, 2, 3):
        make_lesson(memory, "Refresh tokens skip the expiry check in the auth middleware",
                    refs="src/auth/middleware.ts#L23-L30", day=date(2026, 1, day))
    promotion_detect(memory=memory)
    html = client_for(viewer).get("/").content.decode()
    assert "1 to review" in html
