"""The promotion feature's writes, for callers outside it (views, other slices, tests).

Each reason to change lives in its own module; this one only names what the rest of the product uses:
- detection_runs.py: detection runs (word rule, model grouping and check), their status in the
  cache, queueing and running them as jobs; placements.py keeps where the model placed each lesson;
- decisions.py: a person approves (exactly once), rejects, decides several at once, and a revert of an
  approval is followed;
- reflections.py: the observation pipeline's reflections proposed as candidates;
- candidates.py: what they share (statuses, stamps, evidence, storing new candidates).
"""

from memory.promotions.candidates import COVERING_STATUSES, DETECTOR, REFLECTOR, PromotionError
from memory.promotions.decisions import (
    BULK_MAX,
    AlreadyDecided,
    ApprovalResult,
    BulkOutcome,
    NeedsReview,
    promotion_approve,
    promotion_bulk_decide,
    promotion_follow_revert,
    promotion_reject,
)
from memory.promotions.detection_runs import (
    DetectionError,
    DetectionOverBudget,
    DetectionResult,
    detection_status,
    detection_targets,
    promotion_detect,
    promotion_detect_request,
    promotion_detect_run,
)
from memory.promotions.reflections import reflection_propose, reflection_support

__all__ = [
    "BULK_MAX",
    "COVERING_STATUSES",
    "DETECTOR",
    "REFLECTOR",
    "AlreadyDecided",
    "ApprovalResult",
    "BulkOutcome",
    "DetectionError",
    "DetectionOverBudget",
    "DetectionResult",
    "NeedsReview",
    "PromotionError",
    "detection_status",
    "detection_targets",
    "promotion_approve",
    "promotion_bulk_decide",
    "promotion_detect",
    "promotion_detect_request",
    "promotion_detect_run",
    "promotion_follow_revert",
    "promotion_reject",
    "reflection_propose",
    "reflection_support",
]
