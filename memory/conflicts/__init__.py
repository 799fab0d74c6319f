"""Lessons that disagree (a newer one supersedes or contradicts an older one) and lessons that expire."""

# Appended to an older lesson's line in compiled memory while its conflict waits for review.
CONFLICT_MARK = "(disputed: a newer lesson says otherwise)"
