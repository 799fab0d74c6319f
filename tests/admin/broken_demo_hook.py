"""A demo hook whose own import fails: seed_demo must not mistake this for a missing hook."""

import nightwatch_missing_dependency  # noqa: F401


def seed(stdout):
    raise AssertionError("never reached")
