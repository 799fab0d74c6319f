"""How ref checking shows up elsewhere in the product: refs that need a decision wait for review."""

from memory.refs.selectors import refs_needing_review_count
from memory.review_queue import register_review_source

register_review_source("refs")(refs_needing_review_count)
