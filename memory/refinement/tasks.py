"""Celery tasks of this feature: thin, take ids, call one service."""
