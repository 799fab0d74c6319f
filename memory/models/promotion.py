"""Models of this feature; re-exported from memory.models."""
